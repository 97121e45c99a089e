// tests/interop/sdk-anthropic.mjs SCENARIO: drives the official @anthropic-ai/sdk against the
// mock model at $MOCK_URL (script tests/interop/sdk-mock.yaml) and asserts what the SDK parsed.
// Exit 0 when the scenario's assertions hold; prints the failure otherwise.
import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';

const client = new Anthropic({ baseURL: process.env.MOCK_URL, apiKey: 'sk-test', maxRetries: 0 });
const model = 'claude-haiku-4-5-20251001';
const tools = [{ name: 'shell', description: 'run a command',
                 input_schema: { type: 'object', properties: { command: { type: 'string' } } } }];
const first = { model, max_tokens: 256, tools,
                messages: [{ role: 'user', content: 'Please run `echo hi` now' }] };
const expectText = 'Running `echo hi`: héllo wörld — ünïcode ✓ ok.';
const expectInput = { command: 'echo hi', timeout_s: 30, tags: ['a', 'b'] };
// The mock's documented output usage: ceil(bytes of text + tool name + compact input JSON / 4)
const outTokens = (text, calls) => Math.ceil((Buffer.byteLength(text) +
    calls.reduce((n, c) => n + Buffer.byteLength(c.name) + Buffer.byteLength(JSON.stringify(c.input)), 0)) / 4);

function checkFirst(msg) {
  assert.equal(msg.role, 'assistant');
  assert.equal(msg.model, model);
  assert.equal(msg.stop_reason, 'tool_use');
  assert.equal(msg.content.length, 2);
  assert.equal(msg.content[0].type, 'text');
  assert.equal(msg.content[0].text, expectText);
  assert.equal(msg.content[1].type, 'tool_use');
  assert.equal(msg.content[1].name, 'shell');
  assert.match(msg.content[1].id, /^toolu_mock_[0-9a-f]{16}$/);
  assert.deepEqual(msg.content[1].input, expectInput);
  assert.ok(msg.usage.input_tokens > 10, 'input tokens reported');
  assert.equal(msg.usage.output_tokens, outTokens(expectText, [{ name: 'shell', input: expectInput }]));
  assert.equal(msg.usage.cache_read_input_tokens, 0);
}

const scenarios = {
  async create() {
    const msg = await client.messages.create(first);
    checkFirst(msg);
    // determinism: the same request gets the same answer, ids included
    const again = await client.messages.create(first);
    assert.deepEqual(again, msg);
  },
  async stream() {
    let text = '';
    const events = [];
    const stream = client.messages.stream(first);
    stream.on('text', (t) => { text += t; });
    stream.on('streamEvent', (e) => events.push(e.type));
    const msg = await stream.finalMessage();
    checkFirst(msg);
    assert.equal(text, expectText);
    assert.equal(events[0], 'message_start');
    assert.equal(events.at(-1), 'message_stop');
    assert.ok(events.filter((e) => e === 'content_block_delta').length > 3, 'text arrives in pieces');
    // the raw event iterator too (stream: true)
    const raw = await client.messages.create({ ...first, stream: true });
    let partial = '';
    for await (const ev of raw) {
      if (ev.type === 'content_block_delta' && ev.delta.type === 'input_json_delta') partial += ev.delta.partial_json;
    }
    assert.deepEqual(JSON.parse(partial), expectInput);
  },
  async toolError() {
    const msg1 = await client.messages.create(first);
    const call = msg1.content[1];
    const req = { model, max_tokens: 256, tools, messages: [
      ...first.messages,
      { role: 'assistant', content: msg1.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, is_error: true,
          content: 'exit code 1: network down E-FAULTLINE-0a1b2c3d' }] } ] };
    for (const streaming of [false, true]) {
      const msg = streaming ? await client.messages.stream(req).finalMessage()
                            : await client.messages.create(req);
      assert.equal(msg.stop_reason, 'end_turn');
      assert.equal(msg.content.length, 1);
      assert.equal(msg.content[0].text,
                   'FAILED: exit code 1: network down E-FAULTLINE-0a1b2c3d canary=E-FAULTLINE-0a1b2c3d');
    }
    // a successful result: the ok branch, turn count 1
    req.messages[2].content[0].is_error = false;
    req.messages[2].content[0].content = [{ type: 'text', text: 'hi' }];
    const ok = await client.messages.create(req);
    assert.equal(ok.content[0].text, 'OK after 1 turn(s): hi');
  },
  async countTokens() {
    const r = await client.messages.countTokens({ model, tools, messages: first.messages });
    assert.ok(Number.isInteger(r.input_tokens) && r.input_tokens > 10);
  },
  async cacheUsage() {
    for (const streaming of [false, true]) {
      const req = { model, max_tokens: 64, messages: [{ role: 'user', content: 'cache me' }] };
      const msg = streaming ? await client.messages.stream(req).finalMessage()
                            : await client.messages.create(req);
      assert.equal(msg.content[0].text, 'cached answer');
      assert.equal(msg.usage.input_tokens, 10);
      assert.equal(msg.usage.cache_creation_input_tokens, 20);
      assert.equal(msg.usage.cache_read_input_tokens, 30);
      assert.equal(msg.usage.output_tokens, 40);
    }
  },
  async errors() {
    for (const streaming of [false, true]) {
      const req = { model, max_tokens: 64, messages: [{ role: 'user', content: 'please fail with 529' }] };
      await assert.rejects(streaming ? client.messages.stream(req).finalMessage() : client.messages.create(req),
        (err) => {
          assert.ok(err instanceof Anthropic.APIError, `APIError, got ${err}`);
          assert.equal(err.status, 529);
          assert.equal(err.error.type, 'error');
          assert.equal(err.error.error.type, 'overloaded_error');
          assert.match(err.message, /mock overloaded \(please fail with 529\)/);
          return true;
        });
    }
    await assert.rejects(client.messages.create({ model, max_tokens: 8,
        messages: [{ role: 'user', content: 'please fail with 429' }] }),
      (err) => err instanceof Anthropic.RateLimitError && err.error.error.type === 'rate_limit_error');
  },
};

const name = process.argv[2];
if (!scenarios[name]) { console.error(`unknown scenario '${name}'`); process.exit(2); }
try {
  await scenarios[name]();
  console.log(`ok ${name}`);
} catch (e) {
  console.error(`FAIL ${name}: ${e.stack || e}`);
  process.exit(1);
}
