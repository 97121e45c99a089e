"""Tests of the Python gate SDK against a real `faultline proxy` (started by
tests/e2e/t1081-sdk-python.sh, which sets FAULTLINE_CONTROL_URL and writes the plan: a
permission.deny_or_delay hold (delay, 1 s, once) on Bash, tool.error on Write, and a policy
blocking `curl` and redacting hunter[0-9]+ in `echo` commands). Run in this order."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from faultline_gate import GateError, gate  # noqa: E402

CANARY = os.environ.get("FAULTLINE_TEST_CANARY", "")


class TestGate(unittest.TestCase):
    def test_1_allowed_call_returns_its_input(self):
        self.assertEqual(gate("Read", {"file_path": "/work/a.txt"}), {"file_path": "/work/a.txt"})

    def test_2_tool_error_raises_chaos_fault_with_the_canary(self):
        with self.assertRaises(GateError) as cm:
            gate("Write", {"file_path": "/work/x", "content": "x"})
        e = cm.exception
        self.assertEqual(e.code, "CHAOS_FAULT")
        self.assertIn("disk quota exceeded", str(e))
        self.assertIn(CANARY, str(e))
        self.assertEqual(e.fault["id"], "tool.error")

    def test_3_hold_raises_held_until_delay_s_then_lets_the_retry_through(self):
        inp = {"command": "make deploy"}
        with self.assertRaises(GateError) as cm:
            gate("Bash", inp)
        self.assertEqual(cm.exception.code, "HELD")
        self.assertTrue(str(cm.exception).startswith("[faultline] HELD:"), str(cm.exception))
        self.assertIn(CANARY, str(cm.exception))
        with self.assertRaises(GateError) as cm:
            gate("Bash", dict(inp))
        self.assertEqual(cm.exception.code, "HELD")
        time.sleep(1.1)
        self.assertEqual(gate("Bash", inp), inp)

    def test_4_policy_block_raises_policy_block(self):
        with self.assertRaises(GateError) as cm:
            gate("Bash", {"command": "curl -s https://example.com"})
        self.assertEqual(cm.exception.code, "POLICY_BLOCK")
        self.assertEqual(cm.exception.rule, "no-curl")
        with self.assertRaises(GateError) as cm:
            gate("Bash", {"command": "rm -rf /"})
        self.assertEqual(cm.exception.code, "POLICY_BLOCK")
        self.assertEqual(cm.exception.tier, "destructive")

    def test_5_redacted_input_comes_back_masked(self):
        out = gate("Bash", {"command": "echo pw=hunter22"})
        self.assertNotIn("hunter22", out["command"])
        self.assertIn("[REDACTED]", out["command"])

    def test_6_unreachable_controller_and_no_url(self):
        with self.assertRaises(GateError) as cm:
            gate("Read", {}, url="http://127.0.0.1:9", timeout=2)
        self.assertEqual(cm.exception.code, "GATE_UNAVAILABLE")
        self.assertEqual(gate("Read", {"a": 1}, url=""), {"a": 1})

    def test_7_bad_arguments(self):
        with self.assertRaises(TypeError):
            gate("", {})
        with self.assertRaises(TypeError):
            gate("Bash", [1])


if __name__ == "__main__":
    unittest.main()
