// tests/interop/proxy-sdk.mjs SCENARIO: the official @anthropic-ai/sdk and openai clients call
// `faultline mock-model` through `faultline proxy` ($PX) and directly ($MOCK), and assert what
// they parse: answers identical through the proxy, streams delivered, and each llm.* fault
// surfacing as the SDK's own typed error carrying the canary. The plan (t0610) injects by
// model name: *-rl rate limit, *-500 and *-529 upstream errors, *-cut a stream cut after two
// events, *-deg a model degrade, *-trim a context trim. Exit 0 when the scenario holds.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const CANARY = 'E-FAULTLINE-feedbeef';
const px = 'http://' + process.env.PX;
const mock = 'http://' + process.env.MOCK;
const anth = (base) => new Anthropic({ baseURL: base, apiKey: 'sk-ant-interop-secret-0123456789', maxRetries: 0 });
const oai = (base) => new OpenAI({ baseURL: base + '/v1', apiKey: 'sk-proj-interop-secret-0123456789', maxRetries: 0 });
const A = anth(px), Ad = anth(mock), O = oai(px), Od = oai(mock);
const tools = [{ name: 'shell', description: 'run a command',
                 input_schema: { type: 'object', properties: { command: { type: 'string' } } } }];
const msgs = [{ role: 'user', content: 'Please say hello' }];
const req = (model, extra = {}) => ({ model, max_tokens: 64, messages: msgs, ...extra });

// A connection cut mid-body: undici ends the body with TypeError('terminated') caused by
// SocketError('other side closed'); the Anthropic stream helper wraps it in AnthropicError.
function isCut(e) {
  const chain = [e, e?.cause, e?.cause?.cause].filter(Boolean);
  return chain.some((x) => /terminated|other side closed|socket/i.test(String(x.message)));
}
async function expectCut(f) {
  let err;
  try { await f(); } catch (e) { err = e; }
  assert.ok(err, 'the stream must fail');
  assert.ok(!(err instanceof Anthropic.APIError) && !(err instanceof OpenAI.APIError),
            'a cut is a connection failure, not an API error: ' + err);
  assert.ok(isCut(err), 'not a cut connection: ' + err + ' / ' + err.cause);
}

const scenarios = {
  async anthropicCreate() {
    const viaProxy = await A.messages.create(req('claude-haiku-4-5', { tools }));
    const direct = await Ad.messages.create(req('claude-haiku-4-5', { tools }));
    assert.deepEqual(viaProxy, direct);
    assert.equal(viaProxy.content[1].type, 'tool_use');
    assert.ok(viaProxy.usage.input_tokens > 10);
  },
  async anthropicStream() {
    const s = A.messages.stream(req('claude-haiku-4-5'));
    let text = '';
    s.on('text', (t) => { text += t; });
    const msg = await s.finalMessage();
    const direct = await Ad.messages.stream(req('claude-haiku-4-5')).finalMessage();
    assert.deepEqual(msg, direct);
    assert.equal(text, direct.content[0].text);
    const raw = await A.messages.create(req('claude-haiku-4-5', { stream: true }));
    const types = [];
    for await (const ev of raw) types.push(ev.type);
    assert.equal(types[0], 'message_start');
    assert.equal(types.at(-1), 'message_stop');
  },
  async anthropicRateLimit() {
    const e = await A.messages.create(req('claude-haiku-4-5-rl')).then(() => null, (x) => x);
    assert.ok(e instanceof Anthropic.RateLimitError, String(e));
    assert.equal(e.status, 429);
    assert.equal(e.headers.get('retry-after'), '7');
    assert.equal(e.error.error.type, 'rate_limit_error');
    assert.ok(e.message.includes(CANARY));
  },
  async anthropicServerError() {
    for (const [model, status] of [['claude-haiku-4-5-500', 500], ['claude-haiku-4-5-529', 529]]) {
      const e = await A.messages.create(req(model)).then(() => null, (x) => x);
      assert.ok(e instanceof Anthropic.InternalServerError, String(e));
      assert.equal(e.status, status);
      assert.ok(e.message.includes(CANARY));
    }
    // a streamed call with a status fault fails before any event, the same way
    const e = await A.messages.create(req('claude-haiku-4-5-500', { stream: true })).then(() => null, (x) => x);
    assert.ok(e instanceof Anthropic.InternalServerError, String(e));
  },
  async anthropicCut() {
    await expectCut(async () => {
      const s = await A.messages.create(req('claude-haiku-4-5-cut', { stream: true }));
      const seen = [];
      try { for await (const ev of s) seen.push(ev.type); } finally {
        assert.deepEqual(seen, ['message_start', 'ping'].slice(0, seen.length));
      }
    });
    await expectCut(() => A.messages.stream(req('claude-haiku-4-5-cut')).finalMessage());
  },
  async anthropicDegradeTrim() {
    const d = await A.messages.create(req('claude-opus-4-6-deg'));
    assert.equal(d.model, 'claude-haiku-4-5');
    const long = [{ role: 'user', content: 'one' }, { role: 'assistant', content: 'two' },
                  { role: 'user', content: 'three' }, { role: 'assistant', content: 'four' },
                  { role: 'user', content: 'five' }];
    const direct = await Ad.messages.create({ ...req('claude-haiku-4-5-trim'), messages: long });
    const trimmed = await A.messages.create({ ...req('claude-haiku-4-5-trim'), messages: long });
    assert.match(direct.content[0].text, /turn 2,/);
    assert.match(trimmed.content[0].text, /turn 1,/);
  },
  async openaiChat() {
    const m = [{ role: 'user', content: 'hi' }];
    const viaProxy = await O.chat.completions.create({ model: 'gpt-5.4', messages: m });
    assert.deepEqual(viaProxy, await Od.chat.completions.create({ model: 'gpt-5.4', messages: m }));
    const s = await O.chat.completions.create({ model: 'gpt-5.4', messages: m, stream: true,
                                                stream_options: { include_usage: true } });
    const d = await Od.chat.completions.create({ model: 'gpt-5.4', messages: m, stream: true,
                                                 stream_options: { include_usage: true } });
    const collect = async (st) => {
      let text = '', usage = null;
      for await (const c of st) {
        text += c.choices[0]?.delta?.content ?? '';
        if (c.usage) usage = c.usage;
      }
      return { text, usage };
    };
    const got = await collect(s);
    assert.equal(got.text, viaProxy.choices[0].message.content);
    assert.deepEqual(got, await collect(d));
    assert.ok(got.usage.prompt_tokens > 0);
  },
  async openaiResponses() {
    const viaProxy = await O.responses.create({ model: 'gpt-5.4', input: 'hi' });
    assert.deepEqual(viaProxy, await Od.responses.create({ model: 'gpt-5.4', input: 'hi' }));
    const completed = async (client) => {
      const st = await client.responses.create({ model: 'gpt-5.4', input: 'hi', stream: true });
      let done = null;
      for await (const ev of st) if (ev.type === 'response.completed') done = ev.response;
      return done;
    };
    const done = await completed(O);
    assert.equal(done.output[0].content[0].text, viaProxy.output_text);
    assert.deepEqual(done, await completed(Od));
  },
  async openaiErrors() {
    const e1 = await O.chat.completions.create({ model: 'gpt-5.4-rl', messages: msgs }).then(() => null, (x) => x);
    assert.ok(e1 instanceof OpenAI.RateLimitError, String(e1));
    assert.equal(e1.headers.get('retry-after'), '7');
    assert.ok(e1.message.includes(CANARY));
    const e2 = await O.responses.create({ model: 'gpt-5.4-500', input: 'hi' }).then(() => null, (x) => x);
    assert.ok(e2 instanceof OpenAI.InternalServerError, String(e2));
    assert.equal(e2.status, 500);
    assert.ok(e2.message.includes(CANARY));
  },
  async openaiCut() {
    await expectCut(async () => {
      const s = await O.chat.completions.create({ model: 'gpt-5.4-cut', messages: msgs, stream: true });
      for await (const c of s) void c;
    });
    await expectCut(async () => {
      const s = await O.responses.create({ model: 'gpt-5.4-cut', input: 'hi', stream: true });
      for await (const ev of s) void ev;
    });
  },
  async sdkRetriesMeetTheFault() {
    // With the SDK's own retries on, an every-call rate limit is retried by the SDK and still
    // ends as a RateLimitError: the proxy never retries its own injected faults.
    const c = new Anthropic({ baseURL: px, apiKey: 'sk-test-0123456789', maxRetries: 1 });
    const t0 = Date.now();
    const e = await c.messages.create(req('claude-haiku-4-5-rl1')).then(() => null, (x) => x);
    assert.ok(e instanceof Anthropic.RateLimitError, String(e));
    assert.ok(Date.now() - t0 >= 900, 'the SDK waited retry-after (1 s) once');
  },
  async keyInQuery() {
    // a key in the query string too (as some gateways take it): the proxy records the path,
    // so only redaction keeps it out of the events (t0610 greps; tests/mutation)
    const key = 'sk-ant-interop-secret-0123456789';
    const c = new Anthropic({ baseURL: px, apiKey: key, maxRetries: 0, defaultQuery: { key } });
    const r = await c.messages.create(req('claude-haiku-4-5'));
    assert.equal(r.type, 'message');
  },
};

const name = process.argv[2];
if (!scenarios[name]) {
  console.error('unknown scenario ' + name + '; one of: ' + Object.keys(scenarios).join(' '));
  process.exit(2);
}
await scenarios[name]();
console.log('ok ' + name);
