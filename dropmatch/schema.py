"""Checking untrusted JSON against a dataclass's annotations: one clear message per violation, naming the field.

`parse_json` bounds the size and nesting of a document before anything reads it; `check_fields` checks a dict
against a dataclass: every field present (or defaulted), of its annotated type, and no unknown field. Numbers
must be finite, and a bool is not an int. `dropmatch.trace` builds the trace schema on these.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing

MAX_BYTES = 32 * 2**20  # the largest trace file read (a 256-token evidence trace is a few MB)
MAX_DEPTH = 12  # a trace nests 5 levels deep (records -> top -> paths -> row -> value)


def parse_json(text: str | bytes, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH):
    """A JSON document, refused with a ValueError when it is too large, too deeply nested or not JSON."""
    if len(text) > max_bytes:
        raise ValueError(f"the file has {len(text):,} bytes; a trace file may have at most {max_bytes:,}")
    try:
        data = json.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
    except RecursionError:
        raise ValueError(f"the JSON nests far more than {max_depth} levels deep; a trace nests at most 5") from None
    except UnicodeDecodeError:
        raise ValueError("not a text file (not UTF-8)") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON: {err}") from None
    if _depth(data, max_depth) > max_depth:
        raise ValueError(f"the JSON nests more than {max_depth} levels deep; a trace nests at most 5")
    return data


def _depth(value, limit: int, level: int = 0) -> int:
    """How deep `value` nests, counting no further than one past `limit`."""
    if level > limit or not isinstance(value, (list, dict)):
        return level
    items = value.values() if isinstance(value, dict) else value
    return max((_depth(v, limit, level + 1) for v in items), default=level + 1)


PLAIN = {int: "an integer", float: "a finite number", str: "a string", bool: "true or false", type(None): "null"}
PLAIN |= {list: "a list", dict: "an object"}  # what a type is called in a message about JSON


def _name(hint) -> str:
    return PLAIN.get(typing.get_origin(hint) or hint) or str(hint).replace("typing.", "")


def check_value(value, hint, where: str) -> None:
    """`value` matches the annotation `hint` (int, float, str, bool, None, unions, list[...], dict[..., ...])."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                return check_value(value, option, where)
            except ValueError:
                continue
        raise ValueError(f"{where}: expected {' or '.join(_name(a) for a in args)}, got {_show(value)}")
    if hint is type(None):
        if value is not None:
            raise ValueError(f"{where}: expected null, got {_show(value)}")
    elif hint is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected true or false, got {_show(value)}")
    elif hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{where}: expected an integer, got {_show(value)}")
    elif hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{where}: expected a finite number, got {_show(value)}")
    elif hint is str:
        if not isinstance(value, str):
            raise ValueError(f"{where}: expected a string, got {_show(value)}")
    elif origin is list or hint is list:
        if not isinstance(value, list):
            raise ValueError(f"{where}: expected a list, got {_show(value)}")
        for i, item in enumerate(value if args else []):
            check_value(item, args[0], f"{where}[{i}]")
    elif origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected an object, got {_show(value)}")
        for key, item in value.items() if args else []:
            check_value(key, args[0], f"{where} key")
            check_value(item, args[1], f"{where}.{key}")
    else:
        raise TypeError(f"no check for the annotation {hint!r}")  # a schema bug, not a bad file


def check_fields(data, cls, where: str) -> None:
    """`data` is an object holding exactly `cls`'s fields (those with defaults may be missing), each of its type."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object, got {_show(data)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r}")
    for name, f in fields.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"{where}.{name}: missing")
            continue
        check_value(data[name], hints[name], f"{where}.{name}")


def _show(value) -> str:
    text = repr(value) if isinstance(value, float) and math.isfinite(value) else json.dumps(value)[:40]  # NaN as JSON
    return text if len(text) < 40 else text[:37] + "..."
