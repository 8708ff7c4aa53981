"""The inspector's test figure: the test of the rule that ran at one token, drawn from the numbers its record holds.

A relative's test is its statistic against its knob, as the registry states it (`dropmatch.criteria.RULES`: the
numbers it `shows`, its `explain` line, its verdict as `viz.rules.decide` recomputes it, the bound functions the
decoder ran); DropMatch's is the JS test (`viz.inspector.js_figure`, unchanged). A lossless run's, and a relaxed
run's position its rule never checked, is the lossless test: greedy, is d the target's argmax (p(d) against the top
p); at T > 0, accept with probability min(1, p(d) / q(d)). A bonus token was tested by nothing.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, replace

import plotly.graph_objects as go

from dropmatch.cascades import in_set
from dropmatch.criteria import LOSSLESS, Rule
from dropmatch.evidence import shown
from dropmatch.relatives import fly_window, typical_bound
from dropmatch.trace import TokenRecord, Trace
from viz.inspector import js_figure
from viz.panels import REFERENCE, Bar, Line, Panel, holds, panels_figure
from viz.rules import decide, run_rule, setting, shown_numbers
from viz.theme import message_figure, show_token
from viz.tokens import evidence_record

WRAP = 48  # characters per title line: a title stays inside a 390 px wide figure
RANKED = 12  # the most of the target's top tokens a ranking draws (vertical labels: they fit a phone's width)
BONUS = (
    "A bonus token: every draft of its round was accepted, so the target added this one from its own "
    "distribution. No test ran here."
)
TARGET_ONLY = "Target-only decoding: no draft, nothing was tested."
UNLINKED = "A correction whose rejected draft is not in this trace: nothing to show of its test."
LAZY = (
    "{title} recorded no statistics here (a lazy run checks its rule only where the lossless test rejects, up to the "
    "round's first rejection): the lossless test, which decided."
)


@dataclass(frozen=True)
class Position:
    """What a test reads: the draft record, its numbers (`rules.shown_numbers`), the knob, the rule's verdict, and the
    run's top-N (record.top's first top_n tokens are exactly the target's own top-N)."""

    rec: TokenRecord
    n: dict[str, float]
    knob: float | None
    verdict: bool | None
    top_n: int


# ---- each rule's test, as panels -----------------------------------------------------------------
def _fuzzy(statistic: str, symbol: str, axis: str):
    def test(at: Position) -> tuple[str, tuple[Panel, ...]]:
        value = at.n[statistic]
        bar = Bar(symbol, value, f"{symbol} = {shown(value)}: the divergence between the target's p and the draft's q")
        line = Line("threshold", at.knob, f"threshold {at.knob:g} (the knob): accept when {symbol} ≤ it")
        return f"{symbol} against the threshold", (Panel((_tested(bar, at.verdict),), (line,), axis),)

    return test


def _typical(at: Position) -> tuple[str, tuple[Panel, ...]]:
    p_d, entropy, eps = at.n["p_d"], at.n["entropy"], at.knob
    bound = float(typical_bound(entropy, eps))
    bar = Bar("p(d)", p_d, f"p(d) = {p_d:.4f}: the target's probability of the draft token", holds(at.verdict))
    line = Line(
        "bound",
        bound,
        f"bound min(ε, √ε·e^−H) = {bound:.4f} (ε {eps:g}, H(p) {shown(entropy)} nats): accept when p(d) > it",
    )
    return "p(d) against its bound", (Panel((bar,), (line,), "probability"),)


def _top_k(at: Position) -> tuple[str, tuple[Panel, ...]]:
    order, k = at.n["order"], at.knob
    bar = Bar("d's place", order, f"d's place in the target's order: {order:.0f} (1 = its argmax, ties by index)")
    line = Line("k", k, f"k {k:g} (the knob): places 2 to k accept; place 1 is the lossless test's")
    return "d's place in the target's order vs k", (
        Panel((_tested(bar, at.verdict),), (line,), "place"),
        *_target_top(at, k, f"top-{k:g} cut"),
    )


def _mars(at: Position) -> tuple[str, tuple[Panel, ...]]:
    margin, rank, theta = at.n["margin"], at.n["rank"], at.knob
    hesitates = not math.isnan(margin) and margin > theta
    ratio = Bar(
        "z₂/z₁",
        margin,
        f"z₂/z₁ = {shown(margin)}: the target's second-best logit over its best (undefined where z₁ ≤ 0)",
        holds(hesitates),
    )
    line = Line("θ", theta, f"θ {theta:g} (the knob): above it the target hesitates, and MARS accepts its top 2")
    place = Bar("rank of d", rank, f"rank of d under the target: {rank:.0f}", holds(rank <= 2))
    cut = Line("top 2", 2, "where the target hesitates, d is accepted at rank 2 or better")
    panels = (Panel((ratio,), (line,), "logit ratio"), Panel((place,), (cut,), "rank"))
    return "z₂/z₁ against θ, and d's rank", panels


def _fly(at: Position) -> tuple[str, tuple[Panel, ...]]:
    h3, after, gamma, theta = at.n["h3"], at.n["after"], at.n["gamma"], at.knob
    window = int(fly_window(gamma))
    entropy = Bar(
        "H3",
        h3,
        f"H3 = {shown(h3)} nats: the entropy of the target's three largest probabilities (at most ln 3)",
        holds(h3 >= theta),
    )
    line = Line("θ", theta, f"θ {theta:g} (the knob): a rejection is deferred where H3 ≥ θ")
    run = Bar(
        "next accepts",
        after,
        f"{after:.0f} drafts right after this one pass the lossless test in a row",
        holds(window >= 0 and after >= window),
    )
    need = Line("W", window, f"window W = min(6, γ − 1) = {window} (γ {gamma:.0f}): that many must pass")
    panels = (Panel((entropy,), (line,), "nats"), Panel((run,), (need,), "drafts"))
    return "H3 against θ, and the accepts after d", panels


def _ears(at: Position) -> tuple[str, tuple[Panel, ...]]:
    p_d, q_d, p_max, u, beta = at.n["p_d"], at.n["q_d"], at.n["p_max"], at.n["u"], at.knob
    ratio = p_d / q_d if q_d > 0 else math.inf
    tolerance = beta * (1 - p_max)
    greedy = math.isnan(u)
    bars = (
        Bar("p/q", ratio, f"p(d)/q(d) = {shown(ratio)}: the lossless test's ratio (p(d) {p_d:.4f}, q(d) {q_d:.4f})"),
        Bar("β(1−max p)", tolerance, f"tolerance β(1 − max p) = {beta:g}·(1 − {p_max:.4f}) = {shown(tolerance)}"),
        Bar("sum", ratio + tolerance, f"p(d)/q(d) + β(1 − max p) = {shown(ratio + tolerance)}", holds(at.verdict)),
    )
    line = (
        Line("1", 1.0, "1: at T = 0 (the project's reading) accept when the sum reaches it")
        if greedy
        else Line("u", u, f"the round's uniform u = {shown(u)}: accept when the sum exceeds it")
    )
    what = f"p(d)/q(d) + β(1 − max p) against {'1' if greedy else 'u'}"
    return what, (Panel(bars, (line,), "ratio"),)


def _cascade_token(at: Position) -> tuple[str, tuple[Panel, ...]]:
    n, alpha = at.n, at.knob
    inside = bool(in_set(n, alpha))
    bound = (1 - alpha) * n["p1_max"]
    bars = (
        Bar("p₁(d)", n["p1_d"], f"p₁(d) = {n['p1_d']:.4f}: the target's T = 1 probability of d", holds(inside)),
        Bar("max p₁", n["p1_max"], f"max p₁ = {n['p1_max']:.4f}: the target's largest T = 1 probability"),
    )
    line = Line("(1−α)·max p₁", bound, f"(1 − α)·max p₁ = {bound:.4f} (α {alpha:g}): d is in A when p₁(d) reaches it")
    panels = [Panel(bars, (line,), "probability")]
    if not inside and not math.isnan(n["u"]):  # sampled, off A: the lossless draw and TokenV3's edge decide
        edge = n["v3_edge"]
        ok = bool(n["native"]) and edge < 1 - alpha
        hover = f"TokenV3's edge {shown(edge)}: off A, d passes when the lossless test does and 1 − α exceeds it"
        panels.append(Panel((Bar("edge", edge, hover, holds(ok)),), (Line("1 − α", 1 - alpha, "1 − α"),), "edge"))
    return "p₁(d) against (1 − α)·max p₁ (the set A)", tuple(panels)


def _cascade_opt(at: Position) -> tuple[str, tuple[Panel, ...]]:
    n, alpha = at.n, at.knob
    greedy = math.isnan(n["u"])
    tv = 1.0 if greedy else n["tv"]  # two different tokens' one-hots are TV 1 apart
    bound = n["p1_max"] - alpha * tv
    bars = (
        Bar("max q₁", n["q1_max"], f"max q₁ = {n['q1_max']:.4f}: the draft's largest T = 1 probability"),
        Bar("max p₁", n["p1_max"], f"max p₁ = {n['p1_max']:.4f}: the target's largest T = 1 probability"),
    )
    term = "α" if greedy else f"α·TV, TV {shown(tv)}"
    line = Line("max p₁ − α·TV", bound, f"max p₁ − {term} = {shown(bound)} (α {alpha:g}): π = q when max q₁ reaches it")
    first = _tested(bars[0], n["q1_max"] >= bound)
    return "max q₁ against max p₁ − α·TV", (Panel((first, bars[1]), (line,), "probability"),)


TESTS = {
    "fuzzy-js": _fuzzy("js_pq", "JS(p‖q)", "nats"),
    "fuzzy-kl": _fuzzy("kl_qp", "KL(q‖p)", "nats"),
    "fuzzy-tv": _fuzzy("tv", "TV(p,q)", "total variation"),
    "typical": _typical,
    "top-k": _top_k,
    "mars": _mars,
    "fly": _fly,
    "ears": _ears,
    "cascade-token": _cascade_token,
    "cascade-opt": _cascade_opt,
}


def _tested(bar: Bar, ok: bool | None) -> Bar:
    return replace(bar, color=holds(ok))


def _target_top(at: Position, cut: float, label: str) -> tuple[Panel, ...]:
    """The target's top-N tokens by probability (record.top's first top_n), the draft token's bar coloured by the
    verdict, and a line at the probability of the cut's place where it falls among them."""
    top = at.rec.top
    if not top:
        return ()
    shown_ = min(at.top_n, RANKED, len(top["ids"]))
    bars = tuple(
        Bar(
            show_token(top["texts"][c], 8),
            top["target"][c],
            f"place {c + 1}: {top['texts'][c]!r}, target p = {top['target'][c]:.4f}"
            + (" (the draft token)" if top["ids"][c] == at.rec.token_id else ""),
            holds(at.verdict) if top["ids"][c] == at.rec.token_id else REFERENCE,
        )
        for c in range(shown_)
    )
    lines = ()
    if 1 <= cut <= shown_:
        value = top["target"][int(cut) - 1]
        lines = (Line(label, value, f"{label}: the target probability of its place {cut:g}"),)
    return (Panel(bars, lines, "target p"),)


# ---- the lossless test -------------------------------------------------------------------------
def _lossless(rec: TokenRecord, temperature: float) -> tuple[str, tuple[Panel, ...]]:
    if temperature <= 0:
        bar = Bar(
            "p(d)",
            rec.p,
            f"p(d) = {rec.p:.4f}: the target's probability of the draft token, rank {rec.target_rank}",
            holds(rec.lossless),
        )
        line = Line(
            "top p", rec.p_argmax, f"top p = {rec.p_argmax:.4f}: the target's argmax, token {rec.target_argmax}"
        )
        return "is d the target's argmax?", (Panel((bar,), (line,), "probability"),)
    accept = min(1.0, rec.p / rec.q) if rec.q else 1.0
    bars = (
        Bar("p(d)", rec.p, f"p(d) = {rec.p:.4f}: the target's probability of the draft token"),
        Bar("q(d)", rec.q, f"q(d) = {rec.q:.4f}: the draft's probability of its own token"),
        Bar("min(1, p/q)", accept, f"acceptance probability min(1, p(d)/q(d)) = {accept:.4f}", holds(rec.lossless)),
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
    if trace.config.get("method") == "dropmatch":
        return js_figure(ev)
    entry, knob = run_rule(trace)
    head = rule_head(entry, knob) if entry is not LOSSLESS else "lossless test"
    if rec.kind in ("bonus", "target"):
        return message_figure(BONUS if rec.kind == "bonus" else TARGET_ONLY, head.rstrip(":"))
    if ev.kind != "draft":
        return message_figure(UNLINKED, head.rstrip(":"))
    lead = f"This correction replaced the rejected draft {show_token(ev.text)!r}: its test. " if ev is not rec else ""
    if ev.reason == "skipped":
        lead += "A skipped draft (after the round's first rejection), tested for display. "
    n = shown_numbers(ev, trace.config.get("K"))
    if entry is LOSSLESS:
        return _lossless_figure(trace, ev, lead)
    if entry.name not in TESTS or not set(entry.shows) <= set(n):
        return _lossless_figure(trace, ev, f"{lead}{LAZY.format(title=entry.title)} ", f"{head} not recorded here; ")
    verdict = decide(ev, entry.name, knob)
    what, panels = TESTS[entry.name](
        Position(rec=ev, n=n, knob=knob, verdict=verdict, top_n=int(trace.config.get("top_n") or 10))
    )
    alone = trace.config.get("mode") == "replace" or entry.pi is not None
    how = "" if alone else f" OR mode: the lossless test {'accepts' if ev.lossless else 'rejects'} d on its own."
    meta = {"rule": entry.name, "knob": knob, "verdict": verdict, "token_id": ev.token_id}
    return panels_figure(panels, _title(head, what, verdict), f"{lead}{entry.explain(n, knob)}.{how}", meta)
