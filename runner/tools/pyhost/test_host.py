"""Unit tests of host.py (standard library unittest; run by TestPythonHostUnit
with Debian's python3)."""

import copy
import io
import json
import os
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host  # noqa: E402

TOOLS = '''
class SetStatus:
    @staticmethod
    def invoke(data, order_id, status):
        data["orders"][order_id]["status"] = status
        return "ok"

class AddItem:
    @staticmethod
    def invoke(data, order_id, item):
        data["orders"][order_id]["items"].append(item)
        return {"n": len(data["orders"][order_id]["items"])}

class Create:
    @staticmethod
    def invoke(data, order_id):
        orders = data.get("orders", {})
        orders[order_id] = {"order_id": order_id, "status": "new", "items": []}
        data["orders"] = orders
        return None

class Drop:
    @staticmethod
    def invoke(data, order_id):
        del data["orders"][order_id]
        return "gone"

class Unset:
    @staticmethod
    def invoke(data, order_id):
        del data["orders"][order_id]["note"]
        return "ok"

class Boom:
    @staticmethod
    def invoke(data, order_id):
        data["orders"][order_id]["status"] = "broken"
        data["orders"][order_id]["items"].append("x")
        del data["orders"]["o2"]
        data["logs"].append({"id": 9})
        raise ValueError("no such thing")

class Log:
    @staticmethod
    def invoke(data, msg):
        data["logs"].append({"id": len(data["logs"]) + 1, "msg": msg})
        return "logged"

class Touch:
    @staticmethod
    def invoke(data, log_id, msg):
        for r in data["logs"]:
            if r["id"] == log_id:
                r["msg"] = msg
        return "ok"

class Request:
    @staticmethod
    def invoke(data, request_id):
        data["requests"][request_id] = {"amount": 5, "request_id": request_id}
        return "ok"

class Stash:
    @staticmethod
    def invoke(data, order_id):
        data["orders"][order_id]["meta"] = {"tags": []}
        return "ok"

class Tag:
    @staticmethod
    def invoke(data, order_id, tag):
        data["orders"][order_id]["meta"]["tags"].append(tag)
        return "ok"

class NotJSON:
    @staticmethod
    def invoke(data, order_id):
        data["orders"][order_id]["when"] = object()
        return "ok"

class Printer:
    @staticmethod
    def invoke(data):
        print("noise on stdout")
        return "printed"

class Copier:
    @staticmethod
    def invoke(data, order_id):
        c = copy.deepcopy(data["orders"][order_id])
        c["status"] = "copy"
        d = dict(data["orders"][order_id])
        d["status"] = "shallow"
        return c["status"]

class Model:
    table_name = "widgets"
    def __init__(self, **kw):
        self.__dict__.update(kw)
    @classmethod
    def parse_obj(cls, d):
        return cls(**d)
    def json(self):
        return json.dumps(self.__dict__)
    def get_id(self):
        return self.widget_id

class MakeWidget:
    description = "make a widget"
    input_schema = {"type": "object", "properties": {"widget_id": {"type": "string"}}}
    async def run_with_validation(self, db, args):
        db.create(Model(widget_id=args["widget_id"], size=1))
        w = db.get_by_id(Model, args["widget_id"])
        w.size = 2
        db.update(w)
        return {"made": args["widget_id"], "count": len(db.get_all(Model))}
'''

REGISTRY = '''
from tools_mod import SetStatus, Log
_data = {}
def set_data(d):
    global _data
    _data = d
def get_data():
    return _data
TOOLS = {"set_status": SetStatus, "log": Log}
'''


def tables():
    return {
        "orders": [
            {"order_id": "o1", "status": "pending", "items": ["a"], "note": "n"},
            {"order_id": "o2", "status": "pending", "items": []},
        ],
        "logs": [{"id": 1, "msg": "first"}],
        "requests": [],
        "widgets": [],
    }


class HostTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        with open(os.path.join(self.dir, "tools_mod.py"), "w") as f:
            f.write("import copy, json\n" + TOOLS)
        with open(os.path.join(self.dir, "registry.py"), "w") as f:
            f.write(REGISTRY)
        self.h = host.Host()
        specs = [
            {"name": n, "style": "tau_sync", "module": "tools_mod", "class": c}
            for n, c in [("set_status", "SetStatus"), ("add_item", "AddItem"), ("create", "Create"),
                         ("drop", "Drop"), ("unset", "Unset"), ("boom", "Boom"), ("log", "Log"),
                         ("touch", "Touch"), ("request", "Request"), ("stash", "Stash"), ("tag", "Tag"),
                         ("notjson", "NotJSON"), ("printer", "Printer"), ("copier", "Copier")]
        ]
        specs.append({"name": "make_widget", "style": "mcp_async", "module": "tools_mod", "class": "MakeWidget"})
        ans = self.h.load({"paths": [self.dir], "tools": specs})
        self.assertTrue(ans["ok"], ans)
        self.infos = ans["tools"]
        self.assertEqual(self.h.set({"tables": tables(), "dict_tables": {"orders": "order_id", "requests": ""}, "keys": {"logs": "id"}}), {"ok": True})

    def tearDown(self):
        sys.modules.pop("tools_mod", None)
        sys.modules.pop("registry", None)
        if self.dir in sys.path:
            sys.path.remove(self.dir)

    def call(self, tool, **args):
        return self.h.call({"tool": tool, "args": args})

    def state(self):
        return host.plain(self.h.data)

    def test_record_level_changes(self):
        cases = [
            ("set_status", {"order_id": "o1", "status": "done"}, "ok",
             {"orders": [{"op": "upsert", "key": "order_id", "record": {"order_id": "o1", "status": "done", "items": ["a"], "note": "n"}}]}),
            ("add_item", {"order_id": "o2", "item": "b"}, '{"n": 1}',
             {"orders": [{"op": "upsert", "key": "order_id", "record": {"order_id": "o2", "status": "pending", "items": ["b"]}}]}),
            ("create", {"order_id": "o3"}, "Success",
             {"orders": [{"op": "insert", "record": {"order_id": "o3", "status": "new", "items": []}}]}),
            ("drop", {"order_id": "o1"}, "gone", {"orders": [{"op": "delete", "filter": {"order_id": "o1"}}]}),
            # upsert merges top-level fields: a removed field replaces the record.
            ("unset", {"order_id": "o1"}, "ok",
             {"orders": [{"op": "delete", "filter": {"order_id": "o1"}},
                         {"op": "insert", "record": {"order_id": "o1", "status": "pending", "items": ["a"]}}]}),
            # A list table with a declared primary key: element updates are upserts.
            ("touch", {"log_id": 1, "msg": "edited"}, "ok",
             {"logs": [{"op": "upsert", "key": "id", "record": {"id": 1, "msg": "edited"}}]}),
            # A structural change to a list table rewrites it in one PATCH.
            ("log", {"msg": "second"}, "logged",
             {"logs": [{"op": "delete", "filter": {}}, {"op": "insert", "record": {"id": 1, "msg": "first"}},
                       {"op": "insert", "record": {"id": 2, "msg": "second"}}]}),
            ("copier", {"order_id": "o1"}, "copy", {}),
        ]
        for tool, args, out, ops in cases:
            with self.subTest(tool=tool):
                self.setUp()
                ans = self.call(tool, **args)
                self.assertTrue(ans["ok"], ans)
                self.assertEqual(ans["output"], out)
                self.assertEqual(ans["ops"], ops)
                self.tearDown()

    def test_unchanged_write_is_no_op(self):
        self.assertEqual(self.call("set_status", order_id="o1", status="done")["ops"]["orders"][0]["op"], "upsert")
        self.assertEqual(self.call("set_status", order_id="o1", status="done")["ops"], {})

    def test_raise_rolls_back(self):
        before = self.state()
        ans = self.call("boom", order_id="o1")
        self.assertEqual(ans["ok"], False)
        self.assertEqual(ans["error"], "ValueError: no such thing")
        self.assertTrue(ans["resync"], "a deleted key came back at the end: the order may differ")
        self.assertEqual(self.state(), before)
        # The restored records are tracked again.
        ans = self.call("set_status", order_id="o1", status="after")
        self.assertEqual(ans["ops"]["orders"][0]["record"]["status"], "after")

    def test_bad_arguments_are_an_error_and_change_nothing(self):
        before = self.state()
        ans = self.call("set_status", order_id="o1")
        self.assertFalse(ans["ok"])
        self.assertIn("missing 1 required positional argument: 'status'", ans["error"])
        self.assertEqual(self.state(), before)

    def test_value_stored_by_one_call_is_tracked_in_the_next(self):
        self.assertTrue(self.call("stash", order_id="o2")["ok"])
        ans = self.call("tag", order_id="o2", tag="vip")
        self.assertEqual(ans["ops"], {"orders": [{"op": "upsert", "key": "order_id",
                                                  "record": {"order_id": "o2", "status": "pending", "items": [], "meta": {"tags": ["vip"]}}}]})

    def test_key_field_learned_from_first_write(self):
        ans = self.call("request", request_id="r1")
        self.assertEqual(ans["learned"], {"requests": "request_id"})
        self.assertEqual(ans["ops"], {"requests": [{"op": "insert", "record": {"amount": 5, "request_id": "r1"}}]})

    def test_non_json_value_refused_and_rolled_back(self):
        before = self.state()
        ans = self.call("notjson", order_id="o1")
        self.assertFalse(ans["ok"])
        self.assertIn("TypeError: Object of type object is not JSON serializable", ans["error"])
        self.assertEqual(self.state(), before)

    def test_mcp_async_tool(self):
        self.assertEqual(self.infos["make_widget"]["description"], "make a widget")
        ans = self.call("make_widget", widget_id="w1")
        self.assertTrue(ans["ok"], ans)
        self.assertEqual(json.loads(ans["output"]), {"made": "w1", "count": 1})
        # widgets is a list table without a declared key: rewritten whole.
        self.assertEqual(ans["ops"], {"widgets": [{"op": "delete", "filter": {}}, {"op": "insert", "record": {"widget_id": "w1", "size": 2}}]})

    def test_tool_info_from_get_info(self):
        h = host.Host()
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "infomod.py"), "w") as f:
            f.write(textwrap.dedent('''
                class T:
                    @staticmethod
                    def invoke(data):
                        return "x"
                    @staticmethod
                    def get_info():
                        return {"type": "function", "function": {"name": "t", "description": "does t",
                                "parameters": {"type": "object", "properties": {}}}}
            '''))
        ans = h.load({"paths": [d], "tools": [{"name": "t", "style": "tau_sync", "module": "infomod", "class": "T"}]})
        self.assertEqual(ans["tools"]["t"], {"description": "does t", "parameters": {"type": "object", "properties": {}}})

    def test_load_errors_name_the_tool(self):
        cases = [
            ({"name": "a", "style": "tau_sync", "module": "no_such_mod", "class": "A"},
             "module no_such_mod: ModuleNotFoundError: No module named 'no_such_mod'"),
            ({"name": "b", "style": "tau_sync", "module": "tools_mod", "class": "Nope"},
             "module tools_mod has no class 'Nope'"),
            ({"name": "c", "style": "registry", "script": os.path.join(self.dir, "registry.py"), "class": "nope"},
             "registers no tool 'nope'; TOOLS has: log, set_status"),
        ]
        for spec, want in cases:
            with self.subTest(tool=spec["name"]):
                ans = host.Host().load({"paths": [self.dir], "tools": [spec]})
                self.assertFalse(ans["ok"])
                self.assertEqual(ans["tool"], spec["name"])
                self.assertIn(want, ans["error"])

    def test_registry_script_sees_host_data(self):
        h = host.Host()
        script = os.path.join(self.dir, "registry.py")
        ans = h.load({"paths": [self.dir], "tools": [{"name": "set_status", "style": "registry", "script": script, "class": "set_status"}]})
        self.assertTrue(ans["ok"], ans)
        h.set({"tables": tables(), "dict_tables": {"orders": "order_id"}})
        self.assertIs(sys.modules["registry"].get_data(), h.data)
        ans = h.call({"tool": "set_status", "args": {"order_id": "o1", "status": "x"}})
        self.assertEqual(ans["ops"]["orders"][0]["record"]["status"], "x")

    def test_set_refuses_duplicate_keys(self):
        h = host.Host()
        with self.assertRaises(host.HostError) as cm:
            h.set({"tables": {"orders": [{"order_id": "a"}, {"order_id": "a"}]}, "dict_tables": {"orders": "order_id"}})
        self.assertEqual(str(cm.exception), "table 'orders': two records with order_id=\"a\"")

    def test_cost_does_not_grow_with_state(self):
        # A call touches one record: the host copies that record, not the table.
        big = {"orders": [{"order_id": "o%d" % i, "status": "p", "items": []} for i in range(50000)]}
        self.h.set({"tables": big, "dict_tables": {"orders": "order_id"}})
        calls = []
        real = host.plain
        host.plain = lambda x: (calls.append(len(json.dumps(x))), real(x))[1]
        try:
            ans = self.call("set_status", order_id="o7", status="done")
        finally:
            host.plain = real
        self.assertTrue(ans["ok"])
        self.assertLess(max(calls), 200, "plain() was applied to more than one record")

    def test_serve_keeps_stdout_for_the_protocol(self):
        out = io.BytesIO()
        reqs = [
            {"op": "load", "paths": [self.dir], "tools": [{"name": "printer", "style": "tau_sync", "module": "tools_mod", "class": "Printer"}]},
            {"op": "set", "tables": {}},
            {"op": "call", "tool": "printer", "args": {}},
            {"op": "what"},
        ]
        inp = io.BytesIO(b"".join(json.dumps(r).encode() + b"\n" for r in reqs))
        saved = sys.stdout
        sys.stdout = io.StringIO()
        try:
            host.serve(inp, out)
        finally:
            sys.stdout = saved
        answers = [json.loads(l) for l in out.getvalue().splitlines()]
        self.assertEqual([a["ok"] for a in answers], [True, True, True, False])
        self.assertEqual(answers[2]["output"], "printed")
        self.assertEqual(answers[3]["error"], "unknown op 'what'")


SYNTH_TOOLS = '''
class GetUser:
    @staticmethod
    def invoke(data, user_id):
        return sorted(data["users"][user_id].keys())

class Move:
    @staticmethod
    def invoke(data, user_id, city):
        data["users"][user_id]["address"]["city"] = city
        return "moved"

class Forget:
    @staticmethod
    def invoke(data, user_id):
        del data["users"][user_id]["email"]
        return "forgot"

class AddUser:
    @staticmethod
    def invoke(data, user_id):
        data["users"][user_id] = {"name": "New", "address": {"city": "X"}}
        return "added"

class DropUser:
    @staticmethod
    def invoke(data, user_id):
        del data["users"][user_id]
        return "dropped"

class Replace:
    @staticmethod
    def invoke(data):
        data["users"] = {"z": {"name": "Z"}}
        return "replaced"
'''


class SyntheticKeyTest(unittest.TestCase):
    """A dict table whose records do not carry their key: the DB service's records
    hold the synthetic key column, the tools see the author's dict without it, and
    every change goes back with it."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        with open(os.path.join(self.dir, "synth_mod.py"), "w") as f:
            f.write(SYNTH_TOOLS)
        self.h = host.Host()
        specs = [{"name": n, "style": "tau_sync", "module": "synth_mod", "class": c}
                 for n, c in [("get_user", "GetUser"), ("move", "Move"), ("forget", "Forget"),
                              ("add_user", "AddUser"), ("drop_user", "DropUser"), ("replace", "Replace")]]
        self.assertTrue(self.h.load({"paths": [self.dir], "tools": specs})["ok"])
        users = [
            {host.SYNTH_KEY: "noah_1", "name": "Noah", "email": "n@x", "address": {"city": "Austin"}},
            {host.SYNTH_KEY: "mia_2", "name": "Mia", "email": "m@x", "address": {"city": "Boston"}},
        ]
        self.assertEqual(self.h.set({"tables": {"users": users}, "dict_tables": {"users": host.SYNTH_KEY}, "keys": {}}), {"ok": True})

    def tearDown(self):
        sys.modules.pop("synth_mod", None)
        if self.dir in sys.path:
            sys.path.remove(self.dir)

    def call(self, tool, **args):
        return self.h.call({"tool": tool, "args": args})

    def test_tools_see_the_authors_dict(self):
        self.assertEqual(host.plain(self.h.data), {"users": {
            "noah_1": {"name": "Noah", "email": "n@x", "address": {"city": "Austin"}},
            "mia_2": {"name": "Mia", "email": "m@x", "address": {"city": "Boston"}},
        }})
        self.assertEqual(self.call("get_user", user_id="noah_1")["output"], '["address", "email", "name"]')

    def test_changes_carry_the_synthetic_key(self):
        K = host.SYNTH_KEY
        cases = [
            ("move", {"user_id": "mia_2", "city": "Denver"},
             [{"op": "upsert", "key": K, "record": {K: "mia_2", "name": "Mia", "email": "m@x", "address": {"city": "Denver"}}}]),
            ("forget", {"user_id": "noah_1"},
             [{"op": "delete", "filter": {K: "noah_1"}}, {"op": "insert", "record": {K: "noah_1", "name": "Noah", "address": {"city": "Austin"}}}]),
            ("add_user", {"user_id": "new_3"},
             [{"op": "insert", "record": {K: "new_3", "name": "New", "address": {"city": "X"}}}]),
            ("drop_user", {"user_id": "mia_2"}, [{"op": "delete", "filter": {K: "mia_2"}}]),
        ]
        for tool, args, want in cases:
            with self.subTest(tool=tool):
                self.setUp()
                ans = self.call(tool, **args)
                self.assertTrue(ans["ok"], ans)
                self.assertEqual(ans["ops"], {"users": want})
                self.assertNotIn(K, json.dumps(host.plain(self.h.data)))

    def test_a_replaced_table_goes_back_with_the_synthetic_key(self):
        ans = self.call("replace")
        self.assertTrue(ans["ok"], ans)
        K = host.SYNTH_KEY
        self.assertEqual(ans["ops"], {"users": [{"op": "delete", "filter": {}}, {"op": "insert", "record": {K: "z", "name": "Z"}}]})
        self.assertEqual(host.plain(self.h.data), {"users": {"z": {"name": "Z"}}})


if __name__ == "__main__":
    unittest.main()
