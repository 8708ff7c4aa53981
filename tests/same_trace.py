"""Two decodes of one run compared as a batch and a single decode can differ: token for token, decision for decision,
and every other field equal, floats within float32 rounding of another batch shape (timings left out)."""

from __future__ import annotations

import math

TIMINGS = ("t_draft", "t_target", "t_paths", "t_criteria", "t_total")


def close(a, b, where: str = "trace") -> None:
    """Equal, floats within float32 rounding; the same nesting otherwise (assert, naming the first field that
    differs)."""
    if isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=2e-4, abs_tol=2e-6), f"{where}: {a} != {b}"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            close(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def untimed(trace) -> dict:
    """A trace's dict without its rounds' timings and where it ran."""
    data = trace.to_dict()
    data["rounds"] = [{k: v for k, v in r.items() if k not in TIMINGS} for r in data["rounds"]]
    data.pop("environment", None)
    return data


def assert_same_run(a, b, name: str = "trace") -> None:
    """The same tokens exactly, and every other field of the two traces equal up to float rounding."""
    assert a.token_ids == b.token_ids, name
    close(untimed(a), untimed(b), name)
