#!/usr/bin/env python3
"""bench/proxy/body.py OUT_DIR: writes the benchmark requests as wrk Lua scripts.

  post1k.lua    a 1 KiB non-streaming Anthropic Messages call
  stream.lua    a streaming call that the upstream stand-in answers slowly (x-test-mode: slow)
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
