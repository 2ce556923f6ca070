"""Tolokaforge Python tool host: one process per trial, standard library only.

The Go runner starts this program and speaks JSON lines with it over stdio
(one request, one answer). It loads a pack's Python tools (tau_sync classes,
mcp_async TlkMcpCore-style classes, registry scripts with a TOOLS dict) and
holds the trial's tables. The DB service stays the truth: after each call the
host answers the record-level changes as DB service PATCH operations per
table, and a tool that raises changes nothing (its touched records are put
back as they were before the call).

Change tracking must not cost O(state) per call: every container of the
state is a dict/list subclass whose mutators mark the owning top-level record
dirty (saving its pre-call form the first time); reads stay at C speed.

Requests:  {"op": "load", "paths": [...], "tools": [{name, style, module, class, script}]}
           {"op": "set", "tables": {...}, "dict_tables": {t: key}, "keys": {t: pk}}
           {"op": "call", "tool": name, "args": {...}}
Answers:   {"ok": true, ...} or {"ok": false, "error": "...", "tool": name}
"""

import asyncio
import importlib
import importlib.util
import inspect
import json
import os
import re
import sys
import traceback

MISSING = object()

# The synthetic key column of a dict table whose records do not carry their key
# (api/task.DictKeyField): the DB service's records hold it, the tools never see it.
SYNTH_KEY = "__tolokaforge_key__"

_CONTAINERS = (dict, list)


def plain(x):
    """A deep, untracked, JSON-checked copy (C speed)."""
    return json.loads(json.dumps(x, allow_nan=False))


class _Tracked:
    __slots__ = ()

    def _m(self):
        self._t.touch(self._k)


def _owned(x, t, k):
    tp = type(x)
    if tp is dict or tp is TDict:
        d = TDict()
        d._t, d._k = t, k
        for kk, v in x.items():
            dict.__setitem__(d, kk, _owned(v, t, k) if type(v) in _WRAP else v)
        return d
    if tp is list or tp is TList:
        items = [_owned(v, t, k) if type(v) in _WRAP else v for v in x]
        lst = TList(items)
        lst._t, lst._k = t, k
        return lst
    return x


def _record(x, t, k):
    """A top-level record; k is None for a list table's element, whose owner is
    the element itself."""
    tp = type(x)
    if tp is dict or tp is TDict:
        d = TDict()
        d._t = t
        d._k = d if k is None else k
        owner = d._k
        for kk, v in x.items():
            dict.__setitem__(d, kk, _owned(v, t, owner) if type(v) in _WRAP else v)
        return d
    if tp is list or tp is TList:
        lst = TList()
        lst._t = t
        lst._k = lst if k is None else k
        owner = lst._k
        list.extend(lst, [_owned(v, t, owner) if type(v) in _WRAP else v for v in x])
        return lst
    return x


class TDict(dict):
    __slots__ = ("_t", "_k")

    def __setitem__(self, k, v):
        self._t.touch(self._k)
        dict.__setitem__(self, k, v)

    def __delitem__(self, k):
        self._t.touch(self._k)
        dict.__delitem__(self, k)

    def pop(self, *a):
        self._t.touch(self._k)
        return dict.pop(self, *a)

    def popitem(self):
        self._t.touch(self._k)
        return dict.popitem(self)

    def clear(self):
        self._t.touch(self._k)
        dict.clear(self)

    def update(self, *a, **kw):
        self._t.touch(self._k)
        dict.update(self, *a, **kw)

    def setdefault(self, k, v=None):
        if k not in self:
            self._t.touch(self._k)
        return dict.setdefault(self, k, v)

    def __ior__(self, other):
        self._t.touch(self._k)
        dict.update(self, other)
        return self

    # A copy is not part of the state: hand out plain containers.
    def __copy__(self):
        return dict(self)

    def __deepcopy__(self, memo):
        return plain(self)

    def __reduce_ex__(self, proto):
        return (dict, (dict(self),))


class TList(list):
    __slots__ = ("_t", "_k")

    def __setitem__(self, i, v):
        self._t.touch(self._k)
        list.__setitem__(self, i, v)

    def __delitem__(self, i):
        self._t.touch(self._k)
        list.__delitem__(self, i)

    def append(self, v):
        self._t.touch(self._k)
        list.append(self, v)

    def extend(self, v):
        self._t.touch(self._k)
        list.extend(self, v)

    def insert(self, i, v):
        self._t.touch(self._k)
        list.insert(self, i, v)

    def pop(self, *a):
        self._t.touch(self._k)
        return list.pop(self, *a)

    def remove(self, v):
        self._t.touch(self._k)
        list.remove(self, v)

    def clear(self):
        self._t.touch(self._k)
        list.clear(self)

    def sort(self, *a, **kw):
        self._t.touch(self._k)
        list.sort(self, *a, **kw)

    def reverse(self):
        self._t.touch(self._k)
        list.reverse(self)

    def __iadd__(self, v):
        self._t.touch(self._k)
        list.extend(self, v)
        return self

    def __imul__(self, n):
        self._t.touch(self._k)
        return list.__imul__(self, n)

    def __copy__(self):
        return list(self)

    def __deepcopy__(self, memo):
        return plain(self)

    def __reduce_ex__(self, proto):
        return (list, (list(self),))


_WRAP = {dict, list, TDict, TList}

_STRUCT = object()  # a list table's own key: its order and membership


class TableDict(TDict):
    """A dict-shaped table: its keys are the records' key field values."""

    __slots__ = ()

    def __setitem__(self, k, v):
        self._t.touch(k)
        dict.__setitem__(self, k, v)

    def __delitem__(self, k):
        self._t.touch(k)
        dict.__delitem__(self, k)

    def pop(self, k, *a):
        if k in self:
            self._t.touch(k)
        return dict.pop(self, k, *a)

    def popitem(self):
        if self:
            self._t.touch(next(reversed(self)))
        return dict.popitem(self)

    def clear(self):
        for k in list(self):
            self._t.touch(k)
        dict.clear(self)

    def update(self, *a, **kw):
        for k, v in dict(*a, **kw).items():
            self[k] = v

    def setdefault(self, k, v=None):
        if k not in self:
            self[k] = v
        return dict.__getitem__(self, k)

    def __ior__(self, other):
        self.update(other)
        return self


class Table:
    """One table's host state and the current call's pre-call forms."""

    __slots__ = ("h", "name", "shape", "key", "pk", "obj", "pre", "existed")

    def __init__(self, h, name, shape, key, pk, existed):
        self.h, self.name, self.shape, self.key, self.pk = h, name, shape, key, pk
        self.existed = existed
        self.pre = {}
        self.obj = None

    def touch(self, k):
        if self.shape == "dict":
            if k not in self.pre:
                cur = dict.get(self.obj, k, MISSING)
                self.pre[k] = MISSING if cur is MISSING else plain(cur)
        else:
            ident = id(k)
            if ident not in self.pre:
                self.pre[ident] = (k, list(k) if k is self.obj else plain(k))
        self.h.dirty[self.name] = self

    def load(self, records):
        if self.shape == "dict":
            obj = TableDict()
            obj._t, obj._k = self, None
            key = self.key
            if records and not key:
                raise HostError("table %r is dict-shaped but its key field is unknown and it holds %d records" % (self.name, len(records)))
            for i, rec in enumerate(records):
                if not isinstance(rec, dict) or key not in rec:
                    raise HostError("table %r: record %d has no key field %r" % (self.name, i, key))
                kv = rec[key]
                if key == SYNTH_KEY:
                    rec = {f: v for f, v in rec.items() if f != SYNTH_KEY}
                if not isinstance(kv, str):
                    kv = str(kv)
                if kv in obj:
                    raise HostError("table %r: two records with %s=%s" % (self.name, key, json.dumps(rec[key])))
                dict.__setitem__(obj, kv, _record(rec, self, kv))
        else:
            obj = TList()
            obj._t, obj._k = self, None
            obj._k = obj
            list.extend(obj, [_record(r, self, None) for r in records])
        self.obj = obj
        return obj


class HostError(Exception):
    pass


class ToolError(Exception):
    pass


def _snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _plural(s):
    if s.endswith("y") and not s.endswith(("ay", "ey", "oy", "uy")):
        return s[:-1] + "ies"
    if s.endswith(("s", "x", "z", "ch", "sh")):
        return s + "es"
    return s + "s"


class MCPDB:
    """The InMemoryDatabase-like object TlkMcpCore tools get: synchronous
    get_all/get_by_id/create/update/delete over the host's tracked tables, so
    their writes are tracked like a tau_sync tool's."""

    def __init__(self, host):
        self._h = host
        self._tables = {}

    def _table(self, model_cls):
        hit = self._tables.get(model_cls)
        if hit:
            return hit
        names = list(self._h.data.keys())
        want = getattr(model_cls, "table_name", None)
        cands = []
        if isinstance(want, str) and want:
            cands += [want] + [n for n in names if n.endswith("_" + want)]
        snake = _snake(model_cls.__name__)
        for form in (_plural(snake), snake):
            cands += [form] + [n for n in names if n.endswith("_" + form)]
        for c in cands:
            if c in self._h.data:
                self._tables[model_cls] = c
                return c
        raise ToolError("no table for model %s (looked for %s)" % (model_cls.__name__, ", ".join(dict.fromkeys(cands))))

    @staticmethod
    def _dump(obj):
        f = getattr(obj, "model_dump", None)
        if f is not None:  # pydantic 2
            return plain(f(mode="json"))
        f = getattr(obj, "json", None)
        if f is not None:  # pydantic 1
            return json.loads(f())
        return plain(vars(obj))

    @staticmethod
    def _load(model_cls, rec):
        for m in ("model_validate", "parse_obj"):
            f = getattr(model_cls, m, None)
            if f is not None:
                return f(plain(rec))
        return model_cls(**plain(rec))

    @staticmethod
    def _id_field(obj):
        f = getattr(type(obj), "get_id", None)
        if f is not None:
            try:
                for line in inspect.getsource(f).splitlines():
                    line = line.strip()
                    if line.startswith("return self."):
                        return line[len("return self."):].strip()
            except (OSError, TypeError):
                pass
        return "id"

    @staticmethod
    def _id(obj):
        if hasattr(obj, "get_id"):
            return obj.get_id()
        return getattr(obj, "id", None)

    def _find(self, tbl, field, value):
        if isinstance(tbl, dict):
            k = value if isinstance(value, str) else str(value)
            return k if k in tbl else None
        for i, r in enumerate(tbl):
            if isinstance(r, dict) and r.get(field) == value:
                return i
        return None

    def get_all(self, model_cls):
        tbl = self._h.data[self._table(model_cls)]
        rows = tbl.values() if isinstance(tbl, dict) else tbl
        return [self._load(model_cls, r) for r in rows]

    def get_by_id(self, model_cls, value):
        tbl = self._h.data[self._table(model_cls)]
        if isinstance(tbl, dict):
            r = tbl.get(value if isinstance(value, str) else str(value))
            return None if r is None else self._load(model_cls, r)
        for r in tbl:
            m = self._load(model_cls, r)
            if self._id(m) == value:
                return m
        return None

    def create(self, obj):
        name = self._table(type(obj))
        tbl = self._h.data[name]
        field, value = self._id_field(obj), self._id(obj)
        if self._find(tbl, field, value) is not None:
            raise ValueError("Object with ID %s already exists" % value)
        rec = self._dump(obj)
        if isinstance(tbl, dict):
            tbl[value if isinstance(value, str) else str(value)] = rec
        else:
            tbl.append(rec)
        return obj

    def bulk_create(self, objects):
        return [self.create(o) for o in objects]

    def update(self, obj):
        tbl = self._h.data[self._table(type(obj))]
        field, value = self._id_field(obj), self._id(obj)
        at = self._find(tbl, field, value)
        if at is None:
            raise ValueError("Object with ID %s does not exist" % value)
        tbl[at] = self._dump(obj)
        return obj

    def delete(self, obj):
        self.delete_by_id(type(obj), self._id(obj), self._id_field(obj))

    def delete_by_id(self, model_cls, obj_id, field="id"):
        tbl = self._h.data[self._table(model_cls)]
        at = self._find(tbl, field, obj_id)
        if at is None:
            raise ValueError("Object with ID %s does not exist" % obj_id)
        del tbl[at]

    def bulk_delete(self, objects):
        for o in objects:
            self.delete(o)

    def to_state_dict(self):
        return plain(self._h.data)


class TData(dict):
    """The top-level table dict tools receive: replacing or deleting a table
    is tracked per table."""

    __slots__ = ("_h",)

    def _replace(self, name):
        h = self._h
        if name not in h.replaced:
            h.replaced[name] = dict.get(self, name, MISSING)

    def __setitem__(self, name, v):
        if dict.get(self, name, MISSING) is not v:
            self._replace(name)
        dict.__setitem__(self, name, v)

    def __delitem__(self, name):
        self._replace(name)
        dict.__delitem__(self, name)

    def pop(self, name, *a):
        if name in self:
            self._replace(name)
        return dict.pop(self, name, *a)

    def popitem(self):
        if self:
            self._replace(next(reversed(self)))
        return dict.popitem(self)

    def clear(self):
        for n in list(self):
            self._replace(n)
        dict.clear(self)

    def update(self, *a, **kw):
        for k, v in dict(*a, **kw).items():
            self[k] = v

    def setdefault(self, k, v=None):
        if k not in self:
            self[k] = v
        return dict.__getitem__(self, k)

    def __ior__(self, other):
        self.update(other)
        return self

    def __copy__(self):
        return dict(self)

    def __deepcopy__(self, memo):
        return plain(self)

    def __reduce_ex__(self, proto):
        return (dict, (dict(self),))


class Host:
    def __init__(self):
        self.data = TData()
        self.data._h = self
        self.tables = {}
        self.dirty = {}
        self.replaced = {}
        self.tools = {}
        self.registries = []
        self.dict_tables = {}
        self.keys = {}
        self.loop = None
        self.mcpdb = MCPDB(self)

    # ---- loading tools

    def load(self, req):
        for p in req.get("paths") or []:
            if p not in sys.path:
                sys.path.insert(0, p)
        infos = {}
        for spec in req.get("tools") or []:
            name = spec["name"]
            try:
                infos[name] = self._load_tool(spec)
            except HostError as e:
                return {"ok": False, "tool": name, "error": str(e)}
            except BaseException as e:  # a pack's import may raise anything
                return {"ok": False, "tool": name, "error": "%s: %s" % (type(e).__name__, e)}
        return {"ok": True, "tools": infos}

    def _import(self, spec):
        style = spec["style"]
        if style == "registry":
            path = spec["script"]
            modname = os.path.splitext(os.path.basename(path))[0]
            mod = sys.modules.get(modname)
            if mod is None or getattr(mod, "__file__", None) != path:
                folder = os.path.dirname(path)
                if folder not in sys.path:
                    sys.path.insert(0, folder)
                s = importlib.util.spec_from_file_location(modname, path)
                mod = importlib.util.module_from_spec(s)
                sys.modules[modname] = mod
                try:
                    s.loader.exec_module(mod)
                except BaseException as e:
                    del sys.modules[modname]
                    raise HostError("script %s: %s: %s" % (spec["script"], type(e).__name__, e))
            reg = getattr(mod, "TOOLS", None)
            if not isinstance(reg, dict):
                raise HostError("script %s has no TOOLS dict" % spec["script"])
            if mod not in self.registries:
                self.registries.append(mod)
            cls = reg.get(spec["class"])
            if cls is None:
                raise HostError("script %s registers no tool %r; TOOLS has: %s" % (spec["script"], spec["class"], ", ".join(sorted(reg))))
            return cls
        module = spec["module"]
        try:
            mod = importlib.import_module(module)
        except BaseException as e:
            raise HostError("module %s: %s: %s" % (module, type(e).__name__, e))
        cls = getattr(mod, spec["class"], None)
        if cls is None:
            raise HostError("module %s has no class %r" % (module, spec["class"]))
        return cls

    def _load_tool(self, spec):
        cls = self._import(spec)
        style = spec["style"]
        if style == "mcp_async":
            inst = cls()
            run = getattr(inst, "run_with_validation", None) or getattr(inst, "run", None)
            if run is None:
                raise HostError("class %s has neither run_with_validation nor run" % spec["class"])
            self.tools[spec["name"]] = ("mcp_async", run)
            return self._mcp_info(inst, cls)
        if not callable(getattr(cls, "invoke", None)):
            raise HostError("class %s has no invoke(data, **kwargs)" % spec["class"])
        self.tools[spec["name"]] = ("tau", cls.invoke)
        return self._tau_info(cls)

    @staticmethod
    def _tau_info(cls):
        f = getattr(cls, "get_info", None)
        if f is None:
            return {}
        try:
            info = f()
        except BaseException:
            return {}
        fn = info.get("function", info) if isinstance(info, dict) else {}
        return {"description": fn.get("description") or "", "parameters": fn.get("parameters")}

    @staticmethod
    def _mcp_info(inst, cls):
        out = {"description": getattr(inst, "description", "") or (cls.__doc__ or "").strip()}
        for attr in ("input_schema", "inputSchema", "parameters"):
            v = getattr(inst, attr, None)
            if isinstance(v, dict):
                out["parameters"] = v
                break
        else:
            model = getattr(inst, "args_schema", None) or getattr(cls, "Input", None)
            for m in ("model_json_schema", "schema"):
                f = getattr(model, m, None)
                if f is not None:
                    try:
                        out["parameters"] = f()
                    except BaseException:
                        pass
                    break
        return out

    # ---- state

    def set(self, req):
        self.dict_tables.update(req.get("dict_tables") or {})
        self.keys = req.get("keys") or {}
        dict.clear(self.data)
        self.tables = {}
        self.dirty, self.replaced = {}, {}
        for name, records in (req.get("tables") or {}).items():
            t = self._new_table(name, "dict" if name in self.dict_tables else "list", True)
            dict.__setitem__(self.data, name, t.load(records))
        for mod in self.registries:
            f = getattr(mod, "set_data", None)
            if f is not None:
                f(self.data)
        return {"ok": True}

    def _new_table(self, name, shape, existed):
        t = Table(self, name, shape, self.dict_tables.get(name, ""), self.keys.get(name, ""), existed)
        self.tables[name] = t
        return t

    # ---- calls

    def call(self, req):
        name = req["tool"]
        ent = self.tools.get(name)
        if ent is None:
            return {"ok": False, "error": "no tool %r loaded" % name}
        args = req.get("args") or {}
        self.dirty, self.replaced = {}, {}
        try:
            if ent[0] == "tau":
                out = ent[1](self.data, **args)
            else:
                if self.loop is None:
                    self.loop = asyncio.new_event_loop()
                out = ent[1](self.mcpdb, args)
                if inspect.isawaitable(out):
                    out = self.loop.run_until_complete(out)
            ops, learned = self._changes()
        except BaseException as e:
            resync = self._rollback()
            msg = "%s: %s" % (type(e).__name__, e) if str(e) else type(e).__name__
            sys.stderr.write("tool %s raised:\n%s" % (name, traceback.format_exc()))
            return {"ok": False, "error": msg, "resync": resync}
        self._commit()
        if isinstance(out, str):
            text = out
        elif out is None:
            text = "Success"
        else:
            text = json.dumps(out, default=str)
        ans = {"ok": True, "output": text, "ops": ops}
        if learned:
            ans["learned"] = learned
        return ans

    def _changes(self):
        """The call's changes as PATCH operations per table (nothing is
        modified here, so a failure can still roll back)."""
        ops, learned = {}, {}
        self._installs = []
        for name in list(self.replaced):
            cur = dict.get(self.data, name, MISSING)
            t = self.tables.get(name)
            existed = t is not None and t.existed
            out = [{"op": "delete", "filter": {}}] if existed else []
            if cur is MISSING:
                if out:
                    ops[name] = out
                self._installs.append((name, None, None))
                continue
            if isinstance(cur, dict):
                shape, key = "dict", self.dict_tables.get(name, "")
                recs = []
                for k, v in cur.items():
                    rec = plain(v)
                    key = self._check_key(name, key, k, rec, learned)
                    recs.append(_with_synth(rec, k) if key == SYNTH_KEY else rec)
            elif isinstance(cur, list):
                shape, key = "list", ""
                recs = plain(cur)
            else:
                raise ToolError("data[%r] must be a dict or a list of records, got %s" % (name, type(cur).__name__))
            out += [{"op": "insert", "record": r} for r in recs]
            if out:
                ops[name] = out
            self._installs.append((name, shape, recs))
        for name, t in self.dirty.items():
            if name in self.replaced:
                continue
            out = self._table_ops(t, learned)
            if out:
                ops[name] = out
        return ops, learned

    def _check_key(self, name, key, k, rec, learned):
        if key == SYNTH_KEY:
            if not isinstance(rec, dict):
                raise ToolError("table %r: record %r is not a dict" % (name, k))
            if not isinstance(k, str):
                raise ToolError("table %r: key %r is not a string" % (name, k))
            return key
        if not key:
            for f, v in rec.items() if isinstance(rec, dict) else ():
                if v == k or (not isinstance(v, (dict, list, bool)) and v is not None and str(v) == k):
                    key = f
                    break
            else:
                raise ToolError("table %r: cannot learn its key field: record %r has no field equal to its key" % (name, k))
            learned[name] = key
            self.dict_tables[name] = key
            t = self.tables.get(name)
            if t is not None:
                t.key = key
        if not isinstance(rec, dict) or key not in rec:
            raise ToolError("table %r: record %r lacks its key field %r" % (name, k, key))
        kv = rec[key]
        if kv != k and str(kv) != k:
            raise ToolError("table %r: record stored under key %r has %s=%s" % (name, k, key, json.dumps(kv)))
        return key

    def _table_ops(self, t, learned):
        out = []
        if t.shape == "dict":
            self._installs.append((t.name, "dict-records", None))
            for k, pre in t.pre.items():
                cur = dict.get(t.obj, k, MISSING)
                if cur is MISSING:
                    if pre is not MISSING:
                        out.append({"op": "delete", "filter": {t.key: pre.get(t.key, k)}})
                    continue
                rec = plain(cur)
                if rec == pre:
                    continue
                t.key = self._check_key(t.name, t.key, k, rec, learned)
                merge = pre is not MISSING and set(pre) <= set(rec)
                if t.key == SYNTH_KEY:
                    rec = _with_synth(rec, k)
                if pre is MISSING:
                    out.append({"op": "insert", "record": rec})
                elif merge:
                    out.append({"op": "upsert", "record": rec, "key": t.key})
                else:
                    # upsert merges top-level fields; a removed field needs
                    # the record replaced.
                    out.append({"op": "delete", "filter": {t.key: pre.get(t.key, k)}})
                    out.append({"op": "insert", "record": rec})
            return out
        structural = id(t.obj) in t.pre
        recs = None
        if not structural and t.pk:
            for ident, (elem, pre) in t.pre.items():
                rec = plain(elem)
                if rec == pre:
                    continue
                if not (isinstance(rec, dict) and isinstance(pre, dict) and t.pk in rec and pre.get(t.pk, MISSING) == rec[t.pk] and set(pre) <= set(rec)):
                    out = None
                    break
                out.append({"op": "upsert", "record": rec, "key": t.pk})
            else:
                self._installs.append((t.name, "list-elems", None))
                return out
        recs = plain(t.obj)
        out = ([{"op": "delete", "filter": {}}] if t.existed else []) + [{"op": "insert", "record": r} for r in recs]
        self._installs.append((t.name, "list", recs))
        return out

    def _commit(self):
        """Make the new state the host's: re-own what the call wrote, so later
        mutations of values it stored are tracked too."""
        for name, shape, recs in self._installs:
            if shape is None:
                self.tables.pop(name, None)
            elif shape == "dict-records":
                t = self.tables[name]
                for k in t.pre:
                    cur = dict.get(t.obj, k, MISSING)
                    if cur is not MISSING:
                        dict.__setitem__(t.obj, k, _record(plain(cur), t, k))
                t.pre = {}
            elif shape == "list-elems":
                t = self.tables[name]
                for elem, _ in t.pre.values():
                    _restore_in_place(elem, plain(elem), t)
                t.pre = {}
            else:
                old = self.tables.get(name)
                existed = True if recs else (old is not None and old.existed)
                t = self._new_table(name, "dict" if shape == "dict" else "list", existed)
                if shape == "dict":
                    t.key = self.dict_tables.get(name, "")
                dict.__setitem__(self.data, name, t.load(recs))
        for t in self.tables.values():
            t.pre = {}
        self.dirty, self.replaced = {}, {}

    def _rollback(self):
        """Put every touched record back; true when the host's order may now
        differ from the DB's (a deleted key re-added at the end)."""
        resync = False
        for name, t in self.dirty.items():
            if t.shape == "dict":
                for k, pre in t.pre.items():
                    has = k in t.obj
                    if pre is MISSING:
                        if has:
                            dict.__delitem__(t.obj, k)
                    else:
                        if not has:
                            resync = True
                        dict.__setitem__(t.obj, k, _record(pre, t, k))
            else:
                struct = t.pre.get(id(t.obj))
                for ident, (elem, pre) in t.pre.items():
                    if elem is not t.obj:
                        _restore_in_place(elem, pre, t)
                if struct is not None:
                    list.__setitem__(t.obj, slice(None), struct[1])
            t.pre = {}
        for name, old in self.replaced.items():
            if old is MISSING:
                dict.pop(self.data, name, None)
            else:
                dict.__setitem__(self.data, name, old)
        if self.replaced:
            # Table order in data may have changed.
            resync = True
        self.dirty, self.replaced = {}, {}
        return resync


def _with_synth(rec, k):
    """rec as the DB service holds it: the synthetic key column first."""
    out = {SYNTH_KEY: k}
    out.update(rec)
    return out


def _restore_in_place(elem, pre, t):
    """Give a list table's element (its own owner) the contents of pre."""
    if isinstance(elem, dict):
        fresh = _record(pre, t, None)
        dict.clear(elem)
        for kk, v in dict.items(fresh):
            dict.__setitem__(elem, kk, _owned(v, t, elem) if type(v) in _WRAP else v)
    elif isinstance(elem, list):
        list.__setitem__(elem, slice(None), [_owned(v, t, elem) if type(v) in _WRAP else v for v in pre])


def serve(inp, out):
    host = Host()
    handlers = {"load": host.load, "set": host.set, "call": host.call}
    for line in inp:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            h = handlers.get(req.get("op"))
            ans = h(req) if h else {"ok": False, "error": "unknown op %r" % req.get("op")}
        except HostError as e:
            ans = {"ok": False, "error": str(e)}
        except Exception as e:
            ans = {"ok": False, "error": "host: %s: %s" % (type(e).__name__, e)}
        try:
            data = json.dumps(ans, allow_nan=False)
        except ValueError as e:
            data = json.dumps({"ok": False, "error": "host: answer is not JSON: %s" % e})
        out.write(data.encode("utf-8") + b"\n")
        out.flush()


def main():
    # stdout is the protocol: whatever a tool prints goes to stderr instead.
    proto = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.stdin.buffer, proto)


if __name__ == "__main__":
    main()
