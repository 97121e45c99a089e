#!/usr/bin/env python3
"""bench/proxy/body.py OUT_DIR: writes the benchmark's requests and its upstream's answers.

  post1k.lua    wrk: a 1 KiB non-streaming Anthropic Messages call
  stream.lua    wrk: a streaming call that the upstream stand-in answers slowly (x-test-mode: slow)
  sse.lua       wrk: a streaming call (answered at once by the fixed upstream)
  resp1k.ngx    the fixed upstream's answer to post1k: a 1 KiB Messages response with usage,
                as an nginx string ('...' with \\n escapes)
  sse.ngx       the fixed upstream's answer to sse.lua: a whole Messages SSE stream of
                SSE_DELTAS (24) text deltas, as an nginx string; sse.events holds its event count
"""
import json
import os
import sys

out = sys.argv[1]
msg = {"model": "claude-haiku-4-5", "max_tokens": 64,
       "messages": [{"role": "user", "content": ""}]}
pad = 1024 - len(json.dumps(msg))
msg["messages"][0]["content"] = "x" * pad
body = json.dumps(msg)
assert len(body) == 1024, len(body)
lua = """wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["x-api-key"] = "sk-bench-0123456789"
wrk.headers["anthropic-version"] = "2023-06-01"
wrk.body = [[%s]]
"""
with open(os.path.join(out, "post1k.lua"), "w") as f:
    f.write(lua % body)
stream = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 64, "stream": True,
                     "messages": [{"role": "user", "content": "hi"}]})
with open(os.path.join(out, "stream.lua"), "w") as f:
    f.write(lua % stream + 'wrk.headers["x-test-mode"] = "slow:%s"\n' %
            os.environ.get("STREAM_EVENT_MS", "250"))
with open(os.path.join(out, "sse.lua"), "w") as f:
    f.write(lua % stream)


def ngx(s):
    """An nginx single-quoted string (the config reader takes \\n; a token fits 4 KiB)."""
    assert "'" not in s and "\\" not in s
    r = "'" + s.replace("\n", "\\n") + "'"
    assert len(r) < 4000, len(r)
    return r


resp = {"id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": ""}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 300, "output_tokens": 120}}
resp["content"][0]["text"] = "y" * (1024 - len(json.dumps(resp, separators=(",", ":"))))
r = json.dumps(resp, separators=(",", ":"))
assert len(r) == 1024, len(r)
with open(os.path.join(out, "resp1k.ngx"), "w") as f:
    f.write(ngx(r))

deltas = int(os.environ.get("SSE_DELTAS", "24"))
ev = [("message_start", {"type": "message_start", "message": {
    "id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
    "content": [], "stop_reason": None, "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 1}}}),
      ("content_block_start", {"type": "content_block_start", "index": 0,
                               "content_block": {"type": "text", "text": ""}})]
ev += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                "delta": {"type": "text_delta", "text": "word "}})] * deltas
ev += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
       ("message_delta", {"type": "message_delta",
                          "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                          "usage": {"output_tokens": deltas}}),
       ("message_stop", {"type": "message_stop"})]
sse = "".join("event: %s\ndata: %s\n\n" % (n, json.dumps(d, separators=(",", ":")))
              for n, d in ev)
with open(os.path.join(out, "sse.ngx"), "w") as f:
    f.write(ngx(sse))
with open(os.path.join(out, "sse.events"), "w") as f:
    f.write("%d\n" % len(ev))
