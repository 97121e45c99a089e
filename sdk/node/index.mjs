// faultline gate SDK for Node (ESM, no dependencies): ask the faultline controller whether a
// tool call may run, for an agent built on a framework with no hook file (docs/gate.md, "SDKs").
//
//   import {gate, GateError} from './index.mjs';
//   const input = await gate('Bash', {command: 'make test'});  // the input to run with
//
// gate() POSTs {harness, tool, input, mcp_server} to FAULTLINE_CONTROL_URL + /_faultline/gate
// (docs/control-api.md). On "allow" it resolves to the input the tool must run with (the
// controller's redacted copy when the policy redacted it). Otherwise it throws a GateError
// whose .code is 'POLICY_BLOCK' (the policy blocked it), 'HELD' (an approval hold, or a
// permission.deny_or_delay hold: retry the identical call later) or 'CHAOS_FAULT' (an injected
// fault: tool.error, a permission denial), and whose .message is the text to show the model
// ("[faultline] ...", with the run's canary for a fault). With no FAULTLINE_CONTROL_URL there is
// no gate: the input is returned as it is. A controller that cannot be asked throws a GateError
// with .code 'GATE_UNAVAILABLE' (the call is not known to be allowed).

export class GateError extends Error {
  constructor(code, message, details = {}) {
    super(message);
    this.name = 'GateError';
    this.code = code;
    this.decision = details.decision ?? null;
    this.tier = details.tier ?? null;
    this.rule = details.rule ?? null;
    this.fault = details.fault ?? null;
  }
}

const DEFAULT_TIMEOUT_MS = 10000;

export async function gate(tool, input = {}, options = {}) {
  if (typeof tool !== 'string' || tool === '') {
    throw new TypeError('gate: tool must be a non-empty string');
  }
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new TypeError('gate: input must be an object');
  }
  const url = options.url ?? process.env.FAULTLINE_CONTROL_URL;
  if (!url) {
    return input;
  }
  const body = {
    harness: 'sdk',
    tool,
    input,
    mcp_server: options.mcpServer ?? null,
  };
  let res;
  let answer;
  try {
    res = await fetch(url.replace(/\/+$/, '') + '/_faultline/gate', {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    });
    answer = await res.json();
  } catch (err) {
    throw new GateError('GATE_UNAVAILABLE', `[faultline] the gate could not be asked: ${err.message}`);
  }
  if (!res.ok || answer === null || typeof answer !== 'object') {
    const msg = answer?.error?.message ?? `status ${res.status}`;
    throw new GateError('GATE_UNAVAILABLE', `[faultline] the gate refused the request: ${msg}`);
  }
  if (answer.decision === 'allow') {
    return answer.input && typeof answer.input === 'object' ? answer.input : input;
  }
  const code = answer.code ?? (answer.decision === 'held' ? 'HELD' : 'POLICY_BLOCK');
  throw new GateError(code, answer.reason || '[faultline] refused by the gate', answer);
}
