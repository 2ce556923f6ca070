"""Generic helpers for custom checks, by the names Tolokaforge's checks_helpers
exports. A tool call may be a ToolCall or a dict with "name" and "arguments"."""

from __future__ import annotations

import re


def _name(call):
    if hasattr(call, "name"):
        return call.name
    if isinstance(call, dict):
        return call.get("name")
    return None


def _arguments(call):
    if hasattr(call, "arguments"):
        return call.arguments
    if isinstance(call, dict):
        return call.get("arguments", {})
    return None


# Dictionaries


def check_dict_params(data, expected, prefix=""):
    """One "path: expected X, got Y" line per key of expected whose value in
    data differs; empty when all match."""
    out = []
    for key, want in expected.items():
        got = data.get(key)
        if got != want:
            out.append(f"{prefix + '.' + key if prefix else key}: expected {want!r}, got {got!r}")
    return out


def dict_diff(dict1, dict2, include_keys=None, exclude_keys=None):
    """{key: (value in dict1, value in dict2)} for every differing key."""
    keys = set(dict1) | set(dict2)
    if include_keys is not None:
        keys &= set(include_keys)
    keys -= set(exclude_keys or ())
    return {k: (dict1.get(k), dict2.get(k)) for k in keys if dict1.get(k) != dict2.get(k)}


def get_nested(data, path, default=None, separator="."):
    """The value at a separated path through dicts and lists (a list step is an
    index), or default when a step is missing or the value is None."""
    current = data
    for part in path.split(separator):
        if current is None:
            return default
        if isinstance(current, dict):
            current = current.get(part)
        elif isinstance(current, (list, tuple)):
            try:
                i = int(part)
            except ValueError:
                return default
            current = current[i] if 0 <= i < len(current) else None
        else:
            return default
    return default if current is None else current


# Tool calls


def last_tool_name(tool_calls):
    return _name(tool_calls[-1]) if tool_calls else None


def first_tool_name(tool_calls):
    return _name(tool_calls[0]) if tool_calls else None


def count_tool_calls(tool_calls, tool_name=None):
    if tool_name is None:
        return len(tool_calls)
    return sum(1 for c in tool_calls if _name(c) == tool_name)


def find_tool_calls(tool_calls, tool_name):
    return [c for c in tool_calls if _name(c) == tool_name]


def tool_was_called(tool_calls, tool_name):
    return any(_name(c) == tool_name for c in tool_calls)


def get_tool_argument(tool_call, arg_name, default=None):
    args = _arguments(tool_call)
    return args.get(arg_name, default) if isinstance(args, dict) else default


# Text


def text_contains_any(text, phrases, case_sensitive=False):
    if not case_sensitive:
        text, phrases = text.lower(), [p.lower() for p in phrases]
    return any(p in text for p in phrases)


def text_contains_all(text, phrases, case_sensitive=False):
    if not case_sensitive:
        text, phrases = text.lower(), [p.lower() for p in phrases]
    return all(p in text for p in phrases)


def text_matches_pattern(text, pattern, flags=re.IGNORECASE):
    return re.search(pattern, text, flags) is not None


def normalize_whitespace(text):
    return " ".join(text.split())


# Collections of records


def find_by_key(items, key, value):
    for item in items:
        if isinstance(item, dict) and item.get(key) == value:
            return item
    return None


def filter_by_key(items, key, value):
    return [item for item in items if isinstance(item, dict) and item.get(key) == value]


def count_by_key(items, key, value):
    return len(filter_by_key(items, key, value))


__all__ = [
    "check_dict_params", "dict_diff", "get_nested", "last_tool_name", "first_tool_name", "count_tool_calls",
    "find_tool_calls", "tool_was_called", "get_tool_argument", "text_contains_any", "text_contains_all",
    "text_matches_pattern", "normalize_whitespace", "find_by_key", "filter_by_key", "count_by_key",
]
