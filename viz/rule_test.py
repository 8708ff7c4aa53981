"""The inspector's test figure: the test of the rule that ran at one token, drawn from the numbers its record holds.

A relative's test is its own figure (`Rule.figure`), drawn from the numbers its verdict computed at the record
(`viz.rules.reading`: the same decision function the decoder ran) and the record's own; DropMatch's is the JS test
(`viz.inspector.js_figure`). A lossless run's, and a relaxed
run's position its rule never checked, is the lossless test: greedy, is d the target's argmax (p(d) against the top
p); at T > 0, accept with probability min(1, p(d) / q(d)). A bonus token was tested by nothing.
"""

from __future__ import annotations

import textwrap

import plotly.graph_objects as go

from dropmatch.criteria import LOSSLESS, Rule
from dropmatch.rules.base import Bar, Line, Panel, Ranking
from dropmatch.trace import TokenRecord, Trace
from viz.inspector import js_figure
from viz.panels import panels_figure
from viz.rules import reading, run_rule, setting
from viz.theme import message_figure, show_token
from viz.tokens import evidence_record

WRAP = 48  # characters per title line: a title stays inside a 390 px wide figure
RANKED = 12  # the most of the target's top tokens a ranking draws (vertical labels: they fit a phone's width)
BONUS = (
    "A bonus token: every draft of its round was accepted, so the target added this one from its own "
    "distribution. No test ran here."
)
TARGET_ONLY = "Target-only decoding: no draft, nothing was tested."
GATED = (
    "The span gate kept the rule out here (in a program, the text so far stands in code and the token is not "
    "whitespace; in a chat turn, the token holds a digit): the lossless test decided alone."
)
UNLINKED = "A correction whose rejected draft is not in this trace: nothing to show of its test."
LAZY = (
    "{title} recorded no statistics here (a lazy run checks its rule only where the lossless test rejects, up to the "
    "round's first rejection): the lossless test, which decided."
)


def _target_top(rec: TokenRecord, top_n: int, verdict: bool | None, ranking: Ranking) -> tuple[Panel, ...]:
    """The target's top-N tokens by probability (record.top's first top_n: exactly the target's own top-N), the draft
    token's bar coloured by the verdict, and a line at the probability of the ranking's cut where it falls among
    them."""
    top, cut = rec.top, ranking.cut
    if not top:
        return ()
    shown_ = min(top_n, RANKED, len(top["ids"]))
    bars = tuple(
        Bar(
            show_token(top["texts"][c], 8),
            top["target"][c],
            f"place {c + 1}: {top['texts'][c]!r}, target p = {top['target'][c]:.4f}"
            + (" (the draft token)" if top["ids"][c] == rec.token_id else ""),
            verdict if top["ids"][c] == rec.token_id else None,
        )
        for c in range(shown_)
    )
    lines = ()
    if 1 <= cut <= shown_:
        value = top["target"][int(cut) - 1]
        lines = (Line(ranking.label, value, f"{ranking.label}: the target probability of its place {cut:g}"),)
    return (Panel(bars, lines, "target p"),)


# ---- the lossless test -------------------------------------------------------------------------
def _lossless(rec: TokenRecord, temperature: float) -> tuple[str, tuple[Panel, ...]]:
    if temperature <= 0:
        bar = Bar(
            "p(d)",
            rec.p,
            f"p(d) = {rec.p:.4f}: the target's probability of the draft token, rank {rec.target_rank}",
            rec.lossless,
        )
        line = Line(
            "top p", rec.p_argmax, f"top p = {rec.p_argmax:.4f}: the target's argmax, token {rec.target_argmax}"
        )
        return "is d the target's argmax?", (Panel((bar,), (line,), "probability"),)
    accept = min(1.0, rec.p / rec.q) if rec.q else 1.0
    bars = (
        Bar("p(d)", rec.p, f"p(d) = {rec.p:.4f}: the target's probability of the draft token"),
        Bar("q(d)", rec.q, f"q(d) = {rec.q:.4f}: the draft's probability of its own token"),
        Bar("min(1, p/q)", accept, f"acceptance probability min(1, p(d)/q(d)) = {accept:.4f}", rec.lossless),
    )
    u = (rec.rule_stats or {}).get("u")
    lines = (Line("u", u, f"the round's uniform u = {u:.4f}: accept when u·q(d) ≤ p(d)"),) if u is not None else ()
    return "accept with probability min(1, p(d)/q(d))", (Panel(bars, lines, "probability"),)


def _title(head: str, what: str, verdict: bool | None) -> list[str]:
    word = {True: "accept", False: "reject", None: "not recorded"}[verdict]
    return [
        *textwrap.wrap(head, WRAP, break_on_hyphens=False),
        *textwrap.wrap(f"{what} → {word}", WRAP, break_on_hyphens=False),
    ]


def rule_head(entry: Rule, knob: float | None) -> str:
    """A test figure's first words: the rule's title and the knob it ran at ("typical acceptance (Medusa), epsilon
    0.09:")."""
    words = setting(entry, knob) if entry.knob is not None else ""
    return f"{entry.title}, {words}:" if words else f"{entry.title}:"


def _lossless_figure(trace: Trace, rec: TokenRecord, lead: str, prefix: str = "") -> go.Figure:
    """The lossless test at a draft record; `prefix` names the run's rule where it recorded nothing here."""
    temperature = float(trace.config.get("temperature") or 0)
    head = prefix + ("lossless test, greedy:" if temperature <= 0 else f"lossless test, T {temperature:g}:")
    if rec.p is None or rec.p_argmax is None or (temperature > 0 and rec.q is None):
        return message_figure(lead + "The lossless test's numbers were not recorded here.", head)
    what, panels = _lossless(rec, temperature)
    note = f"target rank of d: {rec.target_rank}; the lossless test {'accepts' if rec.lossless else 'rejects'} d."
    meta = {"rule": LOSSLESS.name, "knob": None, "verdict": rec.lossless, "token_id": rec.token_id}
    return panels_figure(panels, _title(head, what, rec.lossless), lead + note, meta)


def rule_test_figure(trace: Trace, rec: TokenRecord) -> go.Figure:
    """The test of the rule that ran at `rec` (a correction: at the draft it replaced), from the record's numbers.

    DropMatch: the JS test, exactly `js_figure`. A relative: its statistic against its knob (the run's, or the rule's
    default), the registry's explanation below. Lossless, or a relative's position left unchecked by a lazy run: the
    lossless test. A bonus or target-only token: a message, since no test ran. layout.meta: rule, knob, verdict and
    the token id tested.
    """
    ev = evidence_record(trace, rec)
    entry, knob = run_rule(trace)
    head = rule_head(entry, knob) if entry is not LOSSLESS else "lossless test"
    if ev.kind == "draft" and ev.gated:
        return _lossless_figure(trace, ev, f"{GATED} ", f"{head} kept out here; ")
    if trace.config.get("method") == "dropmatch":
        return js_figure(ev)
    if rec.kind in ("bonus", "target"):
        return message_figure(BONUS if rec.kind == "bonus" else TARGET_ONLY, head.rstrip(":"))
    if ev.kind != "draft":
        return message_figure(UNLINKED, head.rstrip(":"))
    lead = f"This correction replaced the rejected draft {show_token(ev.text)!r}: its test. " if ev is not rec else ""
    if ev.reason == "skipped":
        lead += "A skipped draft (after the round's first rejection), tested for display. "
    if entry is LOSSLESS:
        return _lossless_figure(trace, ev, lead)
    verdict, n = reading(ev, entry.name, knob, trace.config.get("K"))
    if entry.figure is None or verdict is None or not set(entry.shows) <= set(n):
        return _lossless_figure(trace, ev, f"{lead}{LAZY.format(title=entry.title)} ", f"{head} not recorded here; ")
    what, parts = entry.figure(n, knob, verdict)
    top_n = int(trace.config.get("top_n") or 10)
    panels = tuple(
        panel
        for part in parts
        for panel in (_target_top(ev, top_n, verdict, part) if isinstance(part, Ranking) else (part,))
    )
    how = (
        ""
        if entry.alone(trace.config.get("mode"))
        else f" OR mode: the lossless test {'accepts' if ev.lossless else 'rejects'} d on its own."
    )
    meta = {"rule": entry.name, "knob": knob, "verdict": verdict, "token_id": ev.token_id}
    return panels_figure(panels, _title(head, what, verdict), f"{lead}{entry.explain(n, knob)}.{how}", meta)
