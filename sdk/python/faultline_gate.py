"""faultline gate SDK for Python (standard library only).

Ask the faultline controller whether a tool call may run, for an agent built on a framework
with no hook file (docs/gate.md, "SDKs")::

    from faultline_gate import gate, GateError
    tool_input = gate("Bash", {"command": "make test"})  # the input to run with

gate() POSTs {harness, tool, input, mcp_server} to FAULTLINE_CONTROL_URL + /_faultline/gate
(docs/control-api.md). On "allow" it returns the input the tool must run with (the
controller's redacted copy when the policy redacted it). Otherwise it raises GateError whose
.code is "POLICY_BLOCK" (the policy blocked it), "HELD" (an approval hold, or a
permission.deny_or_delay hold: retry the identical call later) or "CHAOS_FAULT" (an injected
fault: tool.error, a permission denial), and whose str() is the text to show the model
("[faultline] ...", with the run's canary for a fault). With no FAULTLINE_CONTROL_URL there is no
gate: the input is returned as it is. A controller that cannot be asked raises GateError with
.code "GATE_UNAVAILABLE" (the call is not known to be allowed).
"""

import json
import os
import urllib.error
import urllib.request

__all__ = ["gate", "GateError"]

DEFAULT_TIMEOUT_S = 10.0


class GateError(Exception):
    """A tool call the gate did not allow; .code says why, str() is the text for the model."""

    def __init__(self, code, message, answer=None):
        super().__init__(message)
        answer = answer or {}
        self.code = code
        self.reason = message
        self.decision = answer.get("decision")
        self.tier = answer.get("tier")
        self.rule = answer.get("rule")
        self.fault = answer.get("fault")


def gate(tool, tool_input=None, *, mcp_server=None, url=None, timeout=DEFAULT_TIMEOUT_S):
    """Returns the input to run tool with, or raises GateError (see the module's text)."""
    if not isinstance(tool, str) or not tool:
        raise TypeError("gate: tool must be a non-empty string")
    if tool_input is None:
        tool_input = {}
    if not isinstance(tool_input, dict):
        raise TypeError("gate: input must be a dict")
    if url is None:
        url = os.environ.get("FAULTLINE_CONTROL_URL", "")
    if not url:
        return tool_input
    body = json.dumps({"harness": "sdk", "tool": tool, "input": tool_input,
                       "mcp_server": mcp_server}).encode()
    req = urllib.request.Request(url.rstrip("/") + "/_faultline/gate", data=body,
                                 headers={"content-type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            answer = json.loads(resp.read())
    except urllib.error.HTTPError as e:
        try:
            msg = json.loads(e.read())["error"]["message"]
        except Exception:  # noqa: BLE001 - any unreadable error body
            msg = "status %d" % e.code
        raise GateError("GATE_UNAVAILABLE",
                        "[faultline] the gate refused the request: %s" % msg) from None
    except (OSError, ValueError) as e:
        raise GateError("GATE_UNAVAILABLE",
                        "[faultline] the gate could not be asked: %s" % e) from None
    if not isinstance(answer, dict):
        raise GateError("GATE_UNAVAILABLE", "[faultline] the gate's answer is not an object")
    if answer.get("decision") == "allow":
        redacted = answer.get("input")
        return redacted if isinstance(redacted, dict) else tool_input
    code = answer.get("code") or ("HELD" if answer.get("decision") == "held" else "POLICY_BLOCK")
    raise GateError(code, answer.get("reason") or "[faultline] refused by the gate", answer)
