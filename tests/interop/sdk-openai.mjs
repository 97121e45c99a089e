// tests/interop/sdk-openai.mjs SCENARIO: drives the official `openai` SDK (Chat Completions and
// Responses) against the mock model at $MOCK_URL (script tests/interop/sdk-mock.yaml) and
// asserts what the SDK parsed. Exit 0 when the scenario's assertions hold.
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const client = new OpenAI({ baseURL: `${process.env.MOCK_URL}/v1`, apiKey: 'sk-test', maxRetries: 0 });
const model = 'gpt-5.4';
const expectText = 'Running `echo hi`: héllo wörld — ünïcode ✓ ok.';
const expectInput = { command: 'echo hi', timeout_s: 30, tags: ['a', 'b'] };
const outTokens = Math.ceil((Buffer.byteLength(expectText) + Buffer.byteLength('shell') +
                             Buffer.byteLength(JSON.stringify(expectInput))) / 4);
const chatTools = [{ type: 'function', function: { name: 'shell', description: 'run a command',
                     parameters: { type: 'object', properties: { command: { type: 'string' } } } } }];
const chatFirst = { model, tools: chatTools, messages: [
  { role: 'system', content: 'be brief' }, { role: 'user', content: 'Please run `echo hi` now' }] };
const respTools = [{ type: 'function', name: 'shell', description: 'run a command', strict: false,
                     parameters: { type: 'object', properties: { command: { type: 'string' } } } }];
const respFirst = { model, tools: respTools, instructions: 'be brief',
                    input: [{ role: 'user', content: 'Please run `echo hi` now' }] };

function checkChat(c) {
  assert.equal(c.model, model);
  const ch = c.choices[0];
  assert.equal(ch.finish_reason, 'tool_calls');
  assert.equal(ch.message.content, expectText);
  assert.equal(ch.message.tool_calls.length, 1);
  const tc = ch.message.tool_calls[0];
  assert.equal(tc.type, 'function');
  assert.equal(tc.function.name, 'shell');
  assert.match(tc.id, /^call_mock_[0-9a-f]{16}$/);
  assert.deepEqual(JSON.parse(tc.function.arguments), expectInput);
}

function checkResponse(r) {
  assert.equal(r.status, 'completed');
  assert.equal(r.model, model);
  assert.equal(r.output_text, expectText);
  const calls = r.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, 'shell');
  assert.deepEqual(JSON.parse(calls[0].arguments), expectInput);
  assert.ok(r.usage.input_tokens > 10);
  assert.equal(r.usage.output_tokens, outTokens);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  return calls[0];
}

const scenarios = {
  async chatCreate() {
    const c = await client.chat.completions.create(chatFirst);
    checkChat(c);
    assert.ok(c.usage.prompt_tokens > 10);
    assert.equal(c.usage.completion_tokens, outTokens);
    assert.deepEqual(await client.chat.completions.create(chatFirst), c);
  },
  async chatStream() {
    // raw chunks with include_usage: every chunk has usage null but the last, which has no choices
    const stream = await client.chat.completions.create({ ...chatFirst, stream: true,
                                                          stream_options: { include_usage: true } });
    let text = '', args = '', usage = null, chunks = 0, finish = null;
    for await (const chunk of stream) {
      chunks++;
      if (chunk.usage) { assert.equal(chunk.choices.length, 0); usage = chunk.usage; continue; }
      assert.equal(chunk.usage, null);
      const d = chunk.choices[0].delta;
      if (d.content) text += d.content;
      if (d.tool_calls) args += d.tool_calls[0].function.arguments ?? '';
      if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
    }
    assert.equal(text, expectText);
    assert.deepEqual(JSON.parse(args), expectInput);
    assert.equal(finish, 'tool_calls');
    assert.ok(chunks > 5);
    assert.equal(usage.completion_tokens, outTokens);
    // the SDK's accumulating helper
    const helper = client.chat.completions.stream({ ...chatFirst, stream_options: { include_usage: true } });
    const final = await helper.finalChatCompletion();
    checkChat(final);
    assert.equal(final.usage.completion_tokens, outTokens);
  },
  async chatToolError() {
    const c = await client.chat.completions.create(chatFirst);
    const tc = c.choices[0].message.tool_calls[0];
    const req = { model, tools: chatTools, messages: [...chatFirst.messages, c.choices[0].message,
      { role: 'tool', tool_call_id: tc.id, content: 'Process exited with code 2: E-FAULTLINE-deadbeef' }] };
    const r = await client.chat.completions.create(req);
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.equal(r.choices[0].message.content,
                 'FAILED: Process exited with code 2: E-FAULTLINE-deadbeef canary=E-FAULTLINE-deadbeef');
    assert.equal(r.choices[0].message.tool_calls, undefined);
  },
  async responsesCreate() {
    const r = await client.responses.create(respFirst);
    checkResponse(r);
    assert.deepEqual(await client.responses.create(respFirst), r);
  },
  async responsesStream() {
    const raw = await client.responses.create({ ...respFirst, stream: true });
    let seq = -1, text = '', types = [];
    for await (const ev of raw) {
      assert.equal(ev.sequence_number, seq + 1, 'sequence numbers count up from 0');
      seq = ev.sequence_number;
      types.push(ev.type);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
    }
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    assert.equal(text, expectText);
    const helper = client.responses.stream(respFirst);
    let deltas = '';
    helper.on('response.output_text.delta', (e) => { deltas += e.delta; });
    const final = await helper.finalResponse();
    checkResponse(final);
    assert.equal(deltas, expectText);
  },
  async responsesToolResult() {
    const r = await client.responses.create(respFirst);
    const call = r.output.find((o) => o.type === 'function_call');
    const r2 = await client.responses.create({ model, tools: respTools, input: [
      ...respFirst.input, ...r.output, { type: 'function_call_output', call_id: call.call_id, output: 'hi' }] });
    assert.equal(r2.output_text, 'OK after 1 turn(s): hi');
    assert.equal(r2.output.length, 1);
  },
  async cacheUsage() {
    const c = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'cache me' }] });
    assert.equal(c.usage.prompt_tokens, 40); // input 10 + cached 30
    assert.equal(c.usage.prompt_tokens_details.cached_tokens, 30);
    assert.equal(c.usage.completion_tokens, 40);
    const r = await client.responses.stream({ model, input: 'cache me' }).finalResponse();
    assert.equal(r.usage.input_tokens, 40);
    assert.equal(r.usage.input_tokens_details.cached_tokens, 30);
  },
  async errors() {
    await assert.rejects(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'please fail with 429' }] }),
      (err) => { assert.ok(err instanceof OpenAI.RateLimitError, `${err}`); assert.equal(err.code, 'rate_limit_exceeded');
                 assert.match(err.message, /mock rate limit/); return true; });
    await assert.rejects(client.responses.create({ model, stream: true, input: 'please fail with 529' }),
      (err) => { assert.ok(err instanceof OpenAI.APIError); assert.equal(err.status, 529);
                 assert.equal(err.type, 'server_error'); return true; });
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
