"""The custom checks interface, version 1.0, as a pack's checks.py imports it:

    from tolokaforge.core.grading.checks_interface import (
        CheckContext, CheckPassed, CheckFailed, CheckSkipped, init, check)

Standard library only: the operator's check runner must start on a bare
interpreter. The names and attributes are Tolokaforge's, so a suite written
against upstream runs unmodified; the models are plain classes rather than
pydantic ones, with the same fields, defaults and bounds.
"""

from __future__ import annotations

import enum
import math

CHECKS_INTERFACE_VERSION = "1.0"
SUPPORTED_VERSIONS = ["1.0"]


class CheckStatus(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


class ToolCallStatus(str, enum.Enum):
    SUCCESS = "success"
    ERROR = "error"


class _Model:
    """Keyword construction with per-field defaults, equality by fields, and
    pydantic's model_dump/dict, which suites call on context objects."""

    _fields: tuple = ()

    def _set(self, **values):
        for name in self._fields:
            object.__setattr__(self, name, values[name])

    def model_dump(self):
        return {name: _dump(getattr(self, name)) for name in self._fields}

    dict = model_dump

    def __eq__(self, other):
        return type(self) is type(other) and self.model_dump() == other.model_dump()

    def __repr__(self):
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{type(self).__name__}({inner})"


def _dump(v):
    if isinstance(v, _Model):
        return v.model_dump()
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, list):
        return [_dump(x) for x in v]
    if isinstance(v, dict):
        return {k: _dump(x) for k, x in v.items()}
    return v


def _status_value(status):
    # Upstream stores enum values (use_enum_values), so suites compare with "success".
    return status.value if isinstance(status, enum.Enum) else status


# ---------------------------------------------------------------------------
# What the checks read


class ToolCall(_Model):
    _fields = ("name", "arguments", "result", "status", "timestamp")

    def __init__(self, name, arguments=None, result=None, status=ToolCallStatus.SUCCESS, timestamp=None):
        self._set(name=name, arguments=dict(arguments or {}), result=result,
                  status=_status_value(status), timestamp=timestamp)


class Message(_Model):
    _fields = ("role", "content", "tool_calls", "name")

    def __init__(self, role, content, tool_calls=None, name=None, **extra):
        calls = [c if isinstance(c, ToolCall) else ToolCall(**c) for c in (tool_calls or [])]
        self._set(role=role, content=content, tool_calls=calls, name=name)
        # Upstream's Message allows extra fields (forward compatibility).
        for k, v in extra.items():
            object.__setattr__(self, k, v)


class Transcript(_Model):
    _fields = ("messages",)

    def __init__(self, messages=None):
        msgs = [m if isinstance(m, Message) else Message(**m) for m in (messages or [])]
        self._set(messages=msgs)

    @property
    def agent_messages(self):
        return [m for m in self.messages if m.role == "assistant"]

    @property
    def user_messages(self):
        return [m for m in self.messages if m.role == "user"]

    @property
    def all_tool_calls(self):
        return [c for m in self.messages for c in m.tool_calls]

    @property
    def last_assistant_response(self):
        for m in reversed(self.messages):
            if m.role == "assistant":
                return m.content
        return None


class EnvironmentState(_Model):
    """A state of the trial's tables; get() walks a dot path ("orders.o1.status")."""

    _fields = ("data",)

    def __init__(self, data=None):
        self._set(data=data if data is not None else {})

    def get(self, path, default=None):
        current = self.data
        for part in path.split("."):
            if not isinstance(current, dict):
                return default
            current = current.get(part)
            if current is None:
                return default
        return current

    def __getitem__(self, key):
        return self.data[key]

    def keys(self):
        return self.data.keys()

    def items(self):
        return self.data.items()

    def values(self):
        return self.data.values()

    def __contains__(self, key):
        return key in self.data


class TaskContext(_Model):
    _fields = ("task_id", "task_name", "task_description", "domain", "tags", "extra")

    def __init__(self, task_id, task_name="", task_description="", domain="", tags=None, extra=None):
        self._set(task_id=task_id, task_name=task_name, task_description=task_description,
                  domain=domain, tags=list(tags or []), extra=dict(extra or {}))


class CheckContext(_Model):
    """Everything the @init function receives."""

    _fields = ("interface_version", "initial_state", "final_state", "transcript", "task")

    def __init__(self, initial_state, final_state, transcript, task, interface_version=CHECKS_INTERFACE_VERSION):
        self._set(interface_version=interface_version, initial_state=initial_state,
                  final_state=final_state, transcript=transcript, task=task)

    @property
    def effects(self):
        return self.final_state.data

    @property
    def tool_calls(self):
        return self.transcript.all_tool_calls

    @property
    def response(self):
        return self.transcript.last_assistant_response


# ---------------------------------------------------------------------------
# What the checks return


def _score(value, field="score"):
    # pydantic's float with ge=0, le=1: a bool or a number, finite and in range.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{field} must be a number in [0, 1], got {type(value).__name__} {value!r}")
    f = float(value)
    if math.isnan(f) or not 0.0 <= f <= 1.0:
        raise ValueError(f"{field} must be in [0, 1], got {value!r}")
    return f


def _details(value):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"details must be a dict, got {type(value).__name__}")
    return value


class CheckPassed(_Model):
    _fields = ("message", "score", "details")

    def __init__(self, message="Check passed", score=1.0, details=None):
        self._set(message=str(message), score=_score(score), details=_details(details))


class CheckFailed(_Model):
    _fields = ("message", "score", "details")

    def __init__(self, message="Check failed", score=0.0, details=None):
        self._set(message=str(message), score=_score(score), details=_details(details))


class CheckSkipped(_Model):
    _fields = ("message",)

    def __init__(self, message="Check skipped", **_ignored):
        self._set(message=str(message))


CheckReturnType = (CheckPassed, CheckFailed, CheckSkipped)


class CheckResult(_Model):
    _fields = ("check_name", "status", "score", "message", "details")

    def __init__(self, check_name, status, score=1.0, message="", details=None):
        self._set(check_name=check_name, status=_status_value(status), score=_score(score),
                  message=message, details=_details(details))


class CheckResultSet(_Model):
    _fields = ("results", "error", "execution_time_ms")

    def __init__(self, results=None, error=None, execution_time_ms=0.0):
        self._set(results=list(results or []), error=error, execution_time_ms=execution_time_ms)

    def _count(self, status):
        return sum(1 for r in self.results if r.status == status.value)

    passed = property(lambda self: self._count(CheckStatus.PASSED))
    failed = property(lambda self: self._count(CheckStatus.FAILED))
    errors = property(lambda self: self._count(CheckStatus.ERROR))
    skipped = property(lambda self: self._count(CheckStatus.SKIPPED))
    total = property(lambda self: len(self.results))

    @property
    def aggregate_score(self):
        scored = [r.score for r in self.results if r.status != CheckStatus.SKIPPED.value]
        return sum(scored) / len(scored) if scored else 0.0

    @property
    def all_passed(self):
        return all(r.status == CheckStatus.PASSED.value for r in self.results if r.status != CheckStatus.SKIPPED.value)


class CustomChecksConfig(_Model):
    _fields = ("enabled", "file", "interface_version", "timeout_seconds", "weight", "fail_on_error", "relative_imports")

    def __init__(self, enabled=False, file="checks.py", interface_version=CHECKS_INTERFACE_VERSION,
                 timeout_seconds=30.0, weight=1.0, fail_on_error=True, relative_imports=None):
        self._set(enabled=enabled, file=file, interface_version=interface_version, timeout_seconds=timeout_seconds,
                  weight=_score(weight, "weight"), fail_on_error=fail_on_error, relative_imports=list(relative_imports or []))


# ---------------------------------------------------------------------------
# The decorators. Loading a suite fills this module's registry; the runner
# resets it first.

_check_registry = {}
_init_func = None
_interface_version = CHECKS_INTERFACE_VERSION


def init(interface_version=CHECKS_INTERFACE_VERSION):
    """Marks the function called once with the CheckContext before any check."""

    def decorator(func):
        global _init_func, _interface_version
        _init_func = func
        _interface_version = interface_version
        return func

    return decorator


def check(func):
    """Marks a check: no arguments, returns CheckPassed, CheckFailed or
    CheckSkipped; its function name is the check's name."""
    _check_registry[func.__name__] = func
    return func


def get_registered_checks():
    return dict(_check_registry)


def get_init_func():
    return _init_func


def get_interface_version():
    return _interface_version


def reset_registry():
    global _check_registry, _init_func, _interface_version
    _check_registry = {}
    _init_func = None
    _interface_version = CHECKS_INTERFACE_VERSION


__all__ = [
    "CHECKS_INTERFACE_VERSION", "SUPPORTED_VERSIONS", "CheckStatus", "ToolCallStatus", "ToolCall", "Message",
    "Transcript", "EnvironmentState", "TaskContext", "CheckContext", "CheckPassed", "CheckFailed", "CheckSkipped",
    "CheckResult", "CheckResultSet", "init", "check", "get_registered_checks", "get_init_func",
    "get_interface_version", "reset_registry", "CustomChecksConfig",
]
