// Tests of the Node gate SDK against a real `faultline proxy` (started by
// tests/e2e/t1080-sdk-node.sh, which sets FAULTLINE_CONTROL_URL and writes the plan: a
// permission.deny_or_delay hold (delay, 1 s, once) on Bash, tool.error on Write, and a policy
// blocking `curl` and redacting hunter[0-9]+ in `echo` commands).
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {gate, GateError} from '../index.mjs';

const CANARY = process.env.FAULTLINE_TEST_CANARY;

test('an allowed call resolves to its input', async () => {
  const input = {file_path: '/work/a.txt'};
  assert.deepEqual(await gate('Read', input), input);
});

test('an injected tool.error throws CHAOS_FAULT with the message and the canary', async () => {
  await assert.rejects(gate('Write', {file_path: '/work/x', content: 'x'}), (err) => {
    assert.ok(err instanceof GateError);
    assert.equal(err.code, 'CHAOS_FAULT');
    assert.match(err.message, /disk quota exceeded/);
    assert.ok(err.message.includes(CANARY), err.message);
    assert.equal(err.fault.id, 'tool.error');
    return true;
  });
});

test('a permission hold throws HELD; the identical retry after delay_s is let through', async () => {
  const input = {command: 'make deploy'};
  await assert.rejects(gate('Bash', input), (err) => {
    assert.equal(err.code, 'HELD');
    assert.ok(err.message.startsWith('[faultline] HELD:'), err.message);
    assert.ok(err.message.includes(CANARY), err.message);
    return true;
  });
  await assert.rejects(gate('Bash', {...input}), (err) => err.code === 'HELD');
  await new Promise((r) => setTimeout(r, 1100));
  assert.deepEqual(await gate('Bash', input), input);
});

test('a policy block throws POLICY_BLOCK', async () => {
  await assert.rejects(gate('Bash', {command: 'curl -s https://example.com'}), (err) => {
    assert.equal(err.code, 'POLICY_BLOCK');
    assert.equal(err.rule, 'no-curl');
    return true;
  });
  await assert.rejects(gate('Bash', {command: 'rm -rf /'}), (err) => {
    assert.equal(err.code, 'POLICY_BLOCK');
    assert.equal(err.tier, 'destructive');
    return true;
  });
});

test('a redacted input comes back masked', async () => {
  const out = await gate('Bash', {command: 'echo pw=hunter22'});
  assert.ok(!out.command.includes('hunter22'), out.command);
  assert.ok(out.command.includes('[REDACTED]'), out.command);
});

test('an unreachable controller throws GATE_UNAVAILABLE; no URL means no gate', async () => {
  await assert.rejects(gate('Read', {}, {url: 'http://127.0.0.1:9', timeoutMs: 2000}),
      (err) => err.code === 'GATE_UNAVAILABLE');
  assert.deepEqual(await gate('Read', {a: 1}, {url: ''}), {a: 1});
});

test('bad arguments are a TypeError', async () => {
  await assert.rejects(gate('', {}), TypeError);
  await assert.rejects(gate('Bash', [1]), TypeError);
});
