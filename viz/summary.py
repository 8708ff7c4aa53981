"""Runs side by side as text: their metrics once per update, the status line, the shared first divergence, and a
bundle of named traces from JSON."""

from __future__ import annotations

from dropmatch.config import RELAXED_METHODS
from dropmatch.criteria import KNOBS
from dropmatch.metrics import compute
from dropmatch.trace import MAX_TOKEN_ID, Trace
from viz.tokens import first_divergence

RUNS = ("DropMatch", "lossless")


def divergence(traces: dict[str, Trace]) -> int | None:
    """First output position where the relaxed run (the chosen rule's: DropMatch or a relative) departs from lossless,
    when both runs are there."""
    dm, ll = traces.get("DropMatch"), traces.get("lossless")
    return first_divergence(dm, ll) if dm is not None and ll is not None else None


def measure(traces: dict[str, Trace | None]) -> dict[str, dict]:
    """Each present trace's metrics (dropmatch.metrics.compute) by name: computed once per update, and read by the
    status line, the metrics table and the acceptance figure."""
    return {name: compute(trace) for name, trace in traces.items() if trace is not None}


def status_line(
    traces: dict[str, Trace], state: str, elapsed: float | None = None, measured: dict[str, dict] | None = None
) -> str:
    """One Markdown line: tokens (of the limit, while running), rounds and tau per run, and where the outputs part
    (counting tokens from 1). `measured`: the runs' metrics by name (`measure`), computed here where absent."""
    head = f"**{state}**" + (f" ({elapsed:.1f} s)" if elapsed is not None else "")
    parts = [head]
    measured = measured if measured is not None else measure(traces)
    for name in RUNS:
        if (trace := traces.get(name)) is not None:
            m = measured.get(name) or compute(trace)
            limit = f" / {trace.config.get('max_new_tokens')}" if trace.finish is None else ""
            parts.append(
                f"**{display_name(trace)}** {m['n_tokens']}{limit} tokens in {m['target_forwards']} rounds, "
                f"τ = {m['tau']:.2f}"
            )
    if len(traces) == 2:
        cut = divergence(traces)
        parts.append("outputs identical so far" if cut is None else f"outputs part at token {cut + 1} (marked »)")
    return " · ".join(parts)


def run_name(trace: Trace) -> str:
    """Which side of the app a trace belongs to: the relaxed side (DropMatch or a relative) or lossless."""
    return RUNS[0] if trace.config.get("method") in RELAXED_METHODS else RUNS[1]


def display_name(trace: Trace) -> str:
    """What a run is called on screen: "DropMatch", a relative with its knob ("typical, epsilon 0.09"), "lossless"."""
    cfg = trace.config
    if cfg.get("method") == "relative":
        knob, value = KNOBS.get(cfg.get("criterion")), cfg.get("knob")
        return str(cfg.get("criterion")) + (f", {knob.said(value)}" if knob and value is not None else "")
    return "DropMatch" if cfg.get("method") == "dropmatch" else str(cfg.get("method", "lossless"))


def run_names(traces: dict[str, Trace | None]) -> dict[str, str]:
    """Each run slot's name on screen (its display_name; the slot's own name where the run is absent, or where two
    runs would be called the same)."""
    named = {slot: (traces or {}).get(slot) for slot in RUNS} | dict(traces or {})
    names = {slot: display_name(t) if t is not None else slot for slot, t in named.items()}
    return names if len(set(names.values())) == len(names) else {slot: slot for slot in names}


def traces_from_data(data, vocab: int = MAX_TOKEN_ID) -> dict[str, Trace]:
    """One trace object, or an object whose values are traces (what the /trace endpoint returns).

    Raises ValueError with a clear message when nothing in it is a trace.
    """
    if not isinstance(data, dict):
        raise ValueError("not a DropMatch trace: expected a JSON object")
    items = [data] if "records" in data else [v for v in data.values() if isinstance(v, dict) and "records" in v]
    if not items:
        raise ValueError("not a DropMatch trace: no token records found")
    traces = {}
    for item in items:
        try:
            trace = Trace.from_dict(item, vocab)
        except ValueError as err:
            raise ValueError(f"not a DropMatch trace: {err}") from None
        if run_name(trace) in traces:
            raise ValueError(f"two {run_name(trace)} runs in one file: a file holds at most one of each")
        traces[run_name(trace)] = trace
    return traces
