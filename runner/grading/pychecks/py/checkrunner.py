"""The operator's Python custom-check runner: runs one suite (a pack's checks.py
written against tolokaforge.core.grading.checks_interface) and reports.

The runner (Go, package runner/grading/pychecks) starts it with this file's
folder first on sys.path, where the checks_interface shim lives, and writes
one JSON request to stdin:

    {"file": abs path, "name": the suite's path in the pack, "root": the
     artifacts folder, "relative_imports": [abs folders],
     "context": {"initial_state", "final_state", "transcript": {"messages"},
                 "task"}}

Stdout carries only the report, one JSON object a line, flushed as each is
known, so whatever finished before a timeout is still read:

    {"event": "loaded", "checks": [names in definition order], "interface_version"}
    {"event": "result", "check_name", "status", "score", "message", "details_json"}
    {"event": "suite_error", "kind", "message", "module"?, "details_json"}
    {"event": "done"}

What the suite itself prints goes to stderr. Standard library only.
"""

import importlib.util
import json
import math
import os
import sys
import traceback

PROTOCOL = None  # the report stream: the original stdout


def emit(obj):
    PROTOCOL.write(json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n")
    PROTOCOL.flush()


class Tables(dict):
    """A state's tables as the checks see them (upstream's flat final state).
    Upstream's environment nests the agent's tables under "agent", and project
    helpers written against it (state.get("agent", {}).get("orders")) read
    them there: that lookup answers the tables themselves, without adding a key
    that iteration over the tables would meet. A real table named "agent"
    wins."""

    def __missing__(self, key):
        if key == "agent":
            return self
        raise KeyError(key)

    def get(self, key, default=None):
        if key == "agent" and not dict.__contains__(self, key):
            return self
        return dict.get(self, key, default)


def shorten(text, root):
    # The suite's own paths read as the pack names them, not as the runner's temp folders.
    return text.replace(root.rstrip("/") + "/", "") if root else text


def details_json(details):
    try:
        return json.dumps(details, ensure_ascii=False, allow_nan=False, default=repr)
    except (TypeError, ValueError) as e:
        return json.dumps({"unserializable_details": repr(details)[:2000], "error": str(e)})


def suite_traceback(exc):
    """The traceback from the suite's own frame on: the runner's frame above it
    names a temp folder and says nothing about the suite."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next))


def describe(exc):
    return f"{type(exc).__name__}: {exc}"


def suite_error(kind, message, root, module=None, tb=""):
    ev = {"event": "suite_error", "kind": kind, "message": shorten(message, root),
          "details_json": details_json({"traceback": shorten(tb, root)} if tb else {})}
    if module:
        ev["module"] = module
    emit(ev)


def build_context(ci, raw):
    transcript = ci.Transcript(messages=[ci.Message(**m) for m in raw.get("transcript", {}).get("messages", [])])
    t = raw.get("task", {})
    return ci.CheckContext(
        initial_state=ci.EnvironmentState(data=Tables(raw.get("initial_state") or {})),
        final_state=ci.EnvironmentState(data=Tables(raw.get("final_state") or {})),
        transcript=transcript,
        task=ci.TaskContext(task_id=t.get("task_id", ""), task_name=t.get("task_name", ""),
                            task_description=t.get("task_description", ""), domain=t.get("domain", ""),
                            tags=t.get("tags") or [], extra=t.get("extra") or {}),
    )


def load_suite(ci, req):
    """Imports the suite; returns (init, checks) or None after reporting why not."""
    root, name = req.get("root", ""), req["name"]
    ci.reset_registry()
    # A helper module cached under a common name must come from this suite's folders.
    for mod in [m for m in sys.modules if m.split(".")[0] in ("check_helpers", "task_helpers", "helpers")]:
        del sys.modules[mod]
    spec = importlib.util.spec_from_file_location("task_checks", req["file"])
    module = importlib.util.module_from_spec(spec)
    sys.modules["task_checks"] = module
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as e:
        suite_error("module", describe(e), root, module=e.name or "", tb=traceback.format_exc())
        return None
    except SyntaxError as e:
        where = shorten(e.filename or name, root)
        suite_error("syntax", f"SyntaxError at {where}:{e.lineno}: {e.msg}", root,
                    tb=traceback.format_exc())
        return None
    except BaseException as e:  # a suite's import may raise anything, SystemExit included
        suite_error("import", f"importing it raised {describe(e)}", root, tb=traceback.format_exc())
        return None
    finally:
        sys.modules.pop("task_checks", None)
    version = ci.get_interface_version()
    if version not in ci.SUPPORTED_VERSIONS:
        supported = ", ".join(f'"{v}"' for v in ci.SUPPORTED_VERSIONS)
        suite_error("interface", f'@init declares interface_version "{version}"; supported: {supported}', root)
        return None
    checks = ci.get_registered_checks()
    if not checks:
        suite_error("no_checks", "defines no @check function", root)
        return None
    emit({"event": "loaded", "checks": list(checks), "interface_version": version})
    return ci.get_init_func(), checks


def run_check(ci, name, fn, root):
    r = {"event": "result", "check_name": name, "score": 0.0, "details_json": "{}"}
    try:
        out = fn()
    except BaseException as e:
        r.update(status="error", message=f"raised {describe(e)}",
                 details_json=details_json({"traceback": shorten(suite_traceback(e), root)}))
        return r
    if isinstance(out, (ci.CheckPassed, ci.CheckFailed)):
        score = out.score
        if not math.isfinite(score):  # constructors refuse it; a suite may still assign it
            r.update(status="error", message=f"returned a score of {score!r}, not a number in [0, 1]")
            return r
        r.update(status="passed" if isinstance(out, ci.CheckPassed) else "failed", score=score,
                 message=str(out.message), details_json=details_json(out.details))
    elif isinstance(out, ci.CheckSkipped):
        r.update(status="skipped", message=str(out.message))
    else:
        r.update(status="error",
                 message=f"returned {type(out).__name__}, not CheckPassed, CheckFailed or CheckSkipped")
    return r


def main():
    global PROTOCOL
    PROTOCOL = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    req = json.load(sys.stdin)
    root = req.get("root", "")
    here = os.path.dirname(os.path.abspath(__file__))
    # The shim first, so a pack folder can never shadow the interface; then the
    # suite's relative_imports, as upstream puts them (nothing else: upstream does
    # not add the suite's own folder either).
    sys.path[:0] = [here] + list(req.get("relative_imports") or [])
    from tolokaforge.core.grading import checks_interface as ci

    loaded = load_suite(ci, req)
    if loaded is None:
        emit({"event": "done"})
        return
    init_fn, checks = loaded
    try:
        ctx = build_context(ci, req.get("context") or {})
    except Exception as e:
        suite_error("context", f"building the CheckContext failed: {describe(e)}", root, tb=traceback.format_exc())
        emit({"event": "done"})
        return
    if init_fn is not None:
        try:
            init_fn(ctx)
        except BaseException as e:
            suite_error("init", f"the @init function {init_fn.__name__} raised {describe(e)}", root,
                        tb=suite_traceback(e))
            emit({"event": "done"})
            return
    for name, fn in checks.items():
        emit(run_check(ci, name, fn, root))
    emit({"event": "done"})


if __name__ == "__main__":
    main()
    # A thread a check left running must not keep the report open.
    sys.stderr.flush()
    os._exit(0)
