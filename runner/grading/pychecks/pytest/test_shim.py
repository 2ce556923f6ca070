"""Unit tests of the checks_interface shim and the check runner's own logic.
Run from the Go test TestPythonUnitTests with Debian's python3:
    python3 -B -m unittest discover -s pytest -t pytest   (with py/ on PYTHONPATH)"""

import json
import math
import unittest

import checkrunner
from tolokaforge.core.grading import checks_helpers as h
from tolokaforge.core.grading import checks_interface as ci


class Results(unittest.TestCase):
    def test_defaults_match_upstream(self):
        self.assertEqual((ci.CheckPassed().message, ci.CheckPassed().score, ci.CheckPassed().details), ("Check passed", 1.0, {}))
        self.assertEqual((ci.CheckFailed().message, ci.CheckFailed().score), ("Check failed", 0.0))
        self.assertEqual(ci.CheckSkipped().message, "Check skipped")
        self.assertEqual(ci.CheckFailed("half", score=0.5).score, 0.5)

    def test_score_bounds(self):
        for bad, err in [(1.5, ValueError), (-0.1, ValueError), (math.nan, ValueError), ("1", TypeError), (None, TypeError)]:
            with self.assertRaises(err, msg=repr(bad)):
                ci.CheckPassed("x", score=bad)
        self.assertEqual(ci.CheckPassed("x", score=1).score, 1.0)

    def test_details_must_be_a_dict(self):
        with self.assertRaises(TypeError):
            ci.CheckFailed("x", details=[1])

    def test_result_set_aggregate(self):
        rs = ci.CheckResultSet(results=[
            ci.CheckResult("a", ci.CheckStatus.PASSED, 1.0), ci.CheckResult("b", "failed", 0.5),
            ci.CheckResult("c", "skipped", 0.0)])
        self.assertEqual((rs.passed, rs.failed, rs.skipped, rs.total), (1, 1, 1, 3))
        self.assertEqual(rs.aggregate_score, 0.75)
        self.assertFalse(rs.all_passed)


class Context(unittest.TestCase):
    def test_environment_state_get(self):
        s = ci.EnvironmentState(data={"users": {"u1": {"name": "Ann", "tier": None}}, "n": 0})
        self.assertEqual(s.get("users.u1.name"), "Ann")
        self.assertEqual(s.get("users.u1.tier", "none"), "none")
        self.assertEqual(s.get("users.u2.name", "?"), "?")
        self.assertEqual(s.get("n.x", "?"), "?")
        self.assertEqual(s["n"], 0)
        self.assertIn("users", s)
        self.assertEqual(list(s.keys()), ["users", "n"])

    def test_transcript(self):
        t = ci.Transcript(messages=[
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [{"name": "f", "arguments": {"a": 1}}]},
            {"role": "tool", "content": "ok", "name": "f", "tool_call_id": "c1"},
            {"role": "assistant", "content": "bye"}])
        self.assertEqual([c.name for c in t.all_tool_calls], ["f"])
        self.assertEqual(t.all_tool_calls[0].status, "success")
        self.assertEqual(t.last_assistant_response, "bye")
        self.assertEqual(len(t.agent_messages), 2)
        self.assertEqual(t.messages[2].tool_call_id, "c1")  # extra fields are kept
        self.assertEqual(t.messages[1].model_dump()["tool_calls"][0]["arguments"], {"a": 1})

    def test_tables_answer_agent(self):
        d = checkrunner.Tables({"orders": {"o1": {}}})
        self.assertIs(d["agent"], d)
        self.assertIs(d.get("agent", {}), d)
        self.assertNotIn("agent", d)
        self.assertEqual(d.get("missing", 7), 7)
        with self.assertRaises(KeyError):
            d["missing"]
        real = checkrunner.Tables({"agent": {"id": 1}})
        self.assertEqual(real["agent"], {"id": 1})
        self.assertEqual(real.get("agent"), {"id": 1})

    def test_details_json(self):
        self.assertEqual(json.loads(checkrunner.details_json({"a": {1}})), {"a": "{1}"})
        self.assertIn("unserializable_details", json.loads(checkrunner.details_json({"x": math.inf})))
        self.assertEqual(json.loads(checkrunner.details_json({"o": object})), {"o": repr(object)})


class Registry(unittest.TestCase):
    def tearDown(self):
        ci.reset_registry()

    def test_decorators(self):
        @ci.init(interface_version="1.0")
        def setup(ctx):
            pass

        @ci.check
        def b():
            return ci.CheckPassed()

        @ci.check
        def a():
            return ci.CheckPassed()

        self.assertIs(ci.get_init_func(), setup)
        self.assertEqual(list(ci.get_registered_checks()), ["b", "a"])  # definition order
        ci.reset_registry()
        self.assertEqual((ci.get_registered_checks(), ci.get_init_func(), ci.get_interface_version()), ({}, None, "1.0"))


class Helpers(unittest.TestCase):
    calls = [ci.ToolCall("get", {"id": 1}), {"name": "pay", "arguments": {"amount": 2}}, ci.ToolCall("get", {"id": 2})]

    def test_tool_calls(self):
        self.assertEqual(h.count_tool_calls(self.calls), 3)
        self.assertEqual(h.count_tool_calls(self.calls, "get"), 2)
        self.assertTrue(h.tool_was_called(self.calls, "pay"))
        self.assertEqual((h.first_tool_name(self.calls), h.last_tool_name(self.calls)), ("get", "get"))
        self.assertIsNone(h.last_tool_name([]))
        self.assertEqual(h.get_tool_argument(self.calls[1], "amount"), 2)
        self.assertEqual(h.get_tool_argument(self.calls[0], "nope", "d"), "d")
        self.assertEqual(len(h.find_tool_calls(self.calls, "get")), 2)

    def test_dicts(self):
        self.assertEqual(h.check_dict_params({"s": "a"}, {"s": "b"}, prefix="r"), ["r.s: expected 'b', got 'a'"])
        self.assertEqual(h.dict_diff({"a": 1, "t": 1}, {"a": 2, "t": 2}, exclude_keys=["t"]), {"a": (1, 2)})
        self.assertEqual(h.get_nested({"o": [{"s": "x"}]}, "o.0.s"), "x")
        self.assertEqual(h.get_nested({"o": []}, "o.5.s", "d"), "d")

    def test_text_and_collections(self):
        self.assertTrue(h.text_contains_any("Refund DONE", ["done"]))
        self.assertFalse(h.text_contains_all("Refund", ["refund", "done"]))
        self.assertTrue(h.text_matches_pattern("Order #12", r"order #\d+"))
        self.assertEqual(h.normalize_whitespace("  a \n b "), "a b")
        items = [{"k": 1}, "junk", {"k": 2}, {"k": 1}]
        self.assertEqual(h.find_by_key(items, "k", 2), {"k": 2})
        self.assertEqual(h.count_by_key(items, "k", 1), 2)


if __name__ == "__main__":
    unittest.main()
