"""Relaxed rules that read the unmasked target only (and the round's own lossless test): typical acceptance, target
top-k, MARS, FLy, and the tie-only control.

Each reads statistics of the target p at the comparison temperature (`dropmatch.evidence`), returns its verdict with
the numbers it computed, and joins the lossless test as every rule does (`Rule.join`): OR by default, alone in replace
mode; the correction comes from the target. Where a source leaves room, the reading taken here is in the docstring.
"""

from __future__ import annotations

import math

import torch

from dropmatch.config import Knob, KnobPair
from dropmatch.rules.base import (
    EXACT,
    TARGET_ONLY,
    TIE,
    Bar,
    Line,
    Numbers,
    Panel,
    Ranking,
    Reason,
    Rule,
    Stats,
    Verdict,
    greedy,
    say,
    verdict,
)

RELATIVE = "relative"


# ---- typical acceptance -----------------------------------------------------------------------------------------
def typical_bound(entropy, epsilon: float) -> torch.Tensor:
    """Medusa's bound on p(d): min(epsilon, sqrt(epsilon) * exp(-H(p))), for a tensor of H (or one number)."""
    return torch.clamp(math.sqrt(epsilon) * torch.exp(-torch.as_tensor(entropy)), max=epsilon)


def typical(s: Stats, epsilon: float):
    """Typical acceptance (Medusa, Cai et al., ICML 2024, Eq. in Sec. 2.3.1; code `medusa/model/utils.py`,
    `evaluate_posterior`): accept d_j when p_j(d_j) > min(epsilon, delta * exp(-H(p_j))).

    One knob: delta = sqrt(epsilon), the paper's recommendation (the code's defaults, posterior_threshold
    0.09 and posterior_alpha 0.3, follow it). H is the exact entropy in nats (the code adds 1e-5 inside the
    log). Medusa applies the rule only when sampling; here it also runs at T = 0, on the T = 1 distribution.
    """
    bound = typical_bound(s["entropy"], epsilon)
    return verdict(s["p_d"] > bound, "typical", bound=bound)


def _typical_figure(n: Numbers, eps: float, accepted):
    bar = Bar("p(d)", n["p_d"], say("p(d) = {p_d:.4f}: the target's probability of the draft token", n), accepted)
    line = Line(
        "bound",
        n["bound"],
        say("bound min(ε, √ε·e^−H) = {bound:.4f} (ε {knob:g}, H(p) {entropy:~} nats): accept when p(d) > it", n, eps),
    )
    return "p(d) against its bound", (Panel((bar,), (line,), "probability"),)


TYPICAL = Rule(
    name="typical",
    title="typical acceptance (Medusa)",
    family=TARGET_ONLY,
    color="#d97706",
    reads=("p_d", "entropy"),
    decide=typical,
    explain=lambda n, eps: say("p(d) {p_d:~} vs bound {bound:~} = min(ε, √ε·e^−H), H {entropy:~} nats", n, eps),
    knob=Knob(
        "epsilon",
        0.09,
        0.0,
        1.0,
        "accept when p(d) > min(epsilon, sqrt(epsilon) * exp(-H(p))), at T = 0 on the T = 1 softmax; no epsilon is "
        "lossless (1 comes nearest); smaller relaxes more",
    ),
    reasons=(
        Reason(
            "typical",
            "typical",
            "lossless rejects it, but p(d) > min(epsilon, sqrt(epsilon) exp(-H(p))) (Medusa typical acceptance)",
            "#f59e0b",
            "T",
            RELATIVE,
        ),
    ),
    greedy_reading=True,
    figure=_typical_figure,
)


# ---- target top-k -----------------------------------------------------------------------------------------------
def top_k(s: Stats, k: float):
    """Target top-k membership, the plainest relaxation: accept d_j when it is among the k tokens the target
    finds most likely, other than its argmax: 2 <= order <= k, the order being d's place in the target's order with
    ties broken as argmax breaks them (by index; `order`); the argmax itself goes through the lossless test.

    No single source defines it; this is the project's form, the same at every temperature: k = 1 relaxes nothing
    (at T = 0 the argmax is exact match, at T > 0 it passes u q(d) <= p(d) as any token does), and k = 2 also
    accepts a token tied with the argmax. In replace mode it is this test alone: a token outside the top k is
    rejected even where the lossless test would accept it. The baseline every relaxation beats.
    """
    order = s["order"]
    return verdict(torch.where(order == 1, s["native"].bool(), order <= k), "top-k", inside=order <= k)


def _verdict_words(n: Numbers) -> str:
    return "lossless accepts d" if n["native"] else "lossless rejects d"


def _top_k_figure(n: Numbers, k: float, accepted):
    bar = Bar(
        "d's place",
        n["order"],
        say("d's place in the target's order: {order:.0f} (1 = its argmax, ties by index)", n),
        accepted,
    )
    line = Line("k", k, f"k {k:g} (the knob): places 2 to k accept; place 1 is the lossless test's")
    return "d's place in the target's order vs k", (Panel((bar,), (line,), "place"), Ranking(k, f"top-{k:g} cut"))


TOP_K = Rule(
    name="top-k",
    title="target top-k",
    family=TARGET_ONLY,
    color="#65a30d",
    reads=("order", "native"),
    decide=top_k,
    explain=lambda n, k: (
        say("d's place in the target's order {order:.0f} vs k {knob:g}", n, k) + f" (1: {_verdict_words(n)})"
    ),
    knob=Knob(  # no source: k 2, the nearest relaxation to exact match
        "k",
        2,
        1,
        1000,
        "accept d when it is among the target's k most likely tokens (ties in index order) and not its argmax, which "
        "the lossless test decides; 1 relaxes nothing, at any T; larger relaxes more",
        integer=True,
        strict=1,
        strict_greedy=1,
    ),
    reasons=(
        Reason(
            "top-k",
            "top-k",
            "lossless rejects it, but it is among the target's k most likely tokens (not its argmax)",
            "#d9f99d",
            "K",
            RELATIVE,
        ),
    ),
    figure=_top_k_figure,
)


# ---- relaxed top-K / delta (TensorRT-LLM) ------------------------------------------------------------------------
GAP_ROUNDING = 1e-5  # nats: far above float32's rounding of a log-probability gap, far below a bf16 logit step


def relaxed(s: Stats, knob: tuple) -> Verdict:
    """TensorRT-LLM's relaxed acceptance (`relaxed_topk` K, `relaxed_delta` delta; AMD's ATOM ships K 8, delta 0.5):
    accept d when it is among the target's K most likely tokens (its place in the target's order, ties by index, as
    top-k reads it) and its log-probability is within delta of the top-1's, log p(d) >= log max p - delta. vLLM's
    proposed ports write the second test as p(d) >= r max p, r = exp(-delta). The argmax itself goes through the
    lossless test, as for top-k; top-k is this rule at delta = infinity, and K = 1 relaxes nothing (at any T). The
    engines relax only inside reasoning spans; here it runs wherever the run's span gate lets a rule run. At T = 0 it
    reads the T = 1 softmax, as every relative does.

    A gap equal to delta within float32 rounding (GAP_ROUNDING) counts as equal: the target's logits are bf16 values, so
    a gap of exactly delta (0.5 = 4 bf16 steps at logits 8 to 16) is common, and its float32 log-probabilities land a
    unit in the last place either side of delta as the CPU's log rounds (an AMD EPYC and an Intel Xeon decide such a
    position apart without it)."""
    k, delta = knob
    gap = torch.log(s["p_max"]) - torch.log(s["p_d"])  # nats below the top-1
    inside, close = s["order"] <= k, gap <= delta + GAP_ROUNDING
    hit = torch.where(s["order"] == 1, s["native"].bool(), inside & close)
    return verdict(hit, "relaxed", gap=gap, inside=inside, close=close)


def _relaxed_figure(n: Numbers, knob: tuple, accepted):
    k, delta = knob
    gap = Bar(
        "log p₁ − log p(d)",
        n["gap"],
        say("log max p − log p(d) = {gap:~} nats: how far d is below the top-1", n),
        bool(n["close"]),
    )
    line = Line("δ", delta, f"δ {delta:g} nats (the knob's second part): d is close enough at or under it")
    place = Bar(
        "d's place",
        n["order"],
        say("d's place in the target's order: {order:.0f} (ties by index)", n),
        bool(n["inside"]),
    )
    cut = Line("K", k, f"K {k:g} (the knob's first part): places 2 to K may relax; place 1 is the lossless test's")
    return "the gap to the top-1 against δ, and d's place against K", (
        Panel((gap,), (line,), "nats"),
        Panel((place,), (cut,), "place"),
    )


RELAXED = Rule(
    name="relaxed-top-k",
    title="relaxed top-K/δ (TensorRT-LLM)",
    family=TARGET_ONLY,
    color="#0f766e",
    reads=("order", "p_d", "p_max", "native"),
    decide=relaxed,
    explain=lambda n, knob: (
        f"d's place {n['order']:.0f} vs K {knob[0]:g}; "
        + say("log max p − log p(d) {gap:~} nats vs δ {knob[1]:g}", n, knob)
    ),
    knob=KnobPair(
        Knob("K", 8, 1, 1000, "the target's top K places a draft may relax in", integer=True),
        Knob("delta", 0.5, 0.0, 20.0, "how many nats below the target's top-1 log-probability a draft may lie"),
        "written K/delta (8/0.5): accept d when it is among the target's K most likely tokens and log p(d) >= "
        "log max p - delta (the argmax itself by the lossless test; at T = 0 on the T = 1 softmax); K = 1 relaxes "
        "nothing, at any T; larger K and delta relax more",
        strict=(1, 0.5),
        strict_greedy=(1, 0.5),
    ),
    reasons=(
        Reason(
            "relaxed",
            "relaxed top-K/δ",
            "lossless rejects it, but it is in the target's top K and within delta nats of its top-1 (TensorRT-LLM)",
            "#8b5cf6",
            "R",
            RELATIVE,
        ),
    ),
    figure=_relaxed_figure,
)


# ---- MARS -------------------------------------------------------------------------------------------------------
def mars(s: Stats, theta: float):
    """MARS, margin-aware verification (Song et al., arXiv 2601.15498; code `5SSjw/MARS`,
    `mars/model/utils.py`, `evaluate_posterior`): where the target hesitates between its two best tokens,
    z_2 / z_1 > theta (raw logits; the ratio is the same at any temperature), accept d_j iff it is one of them
    (rank <= 2); elsewhere the lossless test decides (exact match at T = 0, u q(d) <= p(d) at T > 0, as the code's
    standard rejection sampling): accept = hesitates ? rank <= 2 : native. In OR mode that is
    native OR (hesitates AND rank <= 2). Where z_1 <= 0 the ratio says nothing, and the lossless test decides.
    theta = 1 relaxes nothing (z_2 / z_1 <= 1 always). Reading: a hesitant position accepts d at rank <= 2 whatever
    u, even at T > 0 (the code does the same, and its correction is exact only for a one-hot q, and
    samples a hesitant position's correction from p). The official code applies the margin test only when
    sampling; here it also runs at T = 0.
    """
    hesitates = torch.nan_to_num(s["margin"], nan=-math.inf) > theta
    hit = torch.where(hesitates, s["rank"] <= 2, s["native"].bool())
    return verdict(hit, "mars", hesitates=hesitates, top_two=s["rank"] <= 2)


def _mars_figure(n: Numbers, theta: float, accepted):
    ratio = Bar(
        "z₂/z₁",
        n["margin"],
        say("z₂/z₁ = {margin:~}: the target's second-best logit over its best (undefined where z₁ ≤ 0)", n),
        bool(n["hesitates"]),
    )
    line = Line("θ", theta, f"θ {theta:g} (the knob): above it the target hesitates, and MARS accepts its top 2")
    place = Bar("rank of d", n["rank"], say("rank of d under the target: {rank:.0f}", n), bool(n["top_two"]))
    cut = Line("top 2", 2, "where the target hesitates, d is accepted at rank 2 or better")
    return "z₂/z₁ against θ, and d's rank", (Panel((ratio,), (line,), "logit ratio"), Panel((place,), (cut,), "rank"))


MARS = Rule(
    name="mars",
    title="MARS (top-2 logit margin)",
    family=TARGET_ONLY,
    color="#db2777",
    reads=("rank", "margin", "native"),
    decide=mars,
    explain=lambda n, theta: (
        say("z₂/z₁ {margin:~} vs θ {knob:g}; rank of d {rank:.0f}", n, theta) + f"; elsewhere {_verdict_words(n)}"
    ),
    knob=Knob(  # the default, theta 0.9, is MARS's code's
        "theta",
        0.9,
        0.0,
        1.0,
        "where z2 / z1 > theta accept d if it is the target's top-1 or top-2, elsewhere the lossless test decides; "
        "1 relaxes nothing, at any T; smaller relaxes more",
        strict=1.0,
        strict_greedy=1.0,
    ),
    reasons=(
        Reason(
            "mars",
            "MARS",
            "lossless rejects it, but it is the target's top-1 or top-2 where z2 / z1 > theta (MARS)",
            "#a3e635",
            "2",
            RELATIVE,
        ),
    ),
    greedy_reading=True,
    figure=_mars_figure,
)


# ---- FLy --------------------------------------------------------------------------------------------------------
FLY_WINDOW = 6  # vLLM's cap on FLy's window: W = min(6, gamma - 1)


def fly_window(gamma) -> torch.Tensor:
    """FLy's window W = min(6, gamma - 1) for a tensor of draft lengths (-1 where gamma is unknown, 0)."""
    return torch.clamp(torch.as_tensor(gamma) - 1, max=FLY_WINDOW)


def fly(s: Stats, theta: float):
    """FLy, deferred rejection (arXiv 2511.22972; vLLM `vllm/v1/spec_decode/fly.py`, `rejection_sample_method="fly"`,
    its window and threshold defaults): at a position the lossless test rejects, defer the rejection (accept d_j)
    when the target hesitates, H3(p_j) >= theta, and the W drafts after it pass the lossless test:
    accept = native OR (H3 >= theta AND after_j >= W AND p_j(d_j) > 0), W = min(6, gamma - 1).

    H3 = -sum p log p over the target's three largest probabilities of the full softmax, in nats, not renormalised
    (vLLM's `compute_fly_entropy`, `_FLY_ENTROPY_TOP_K = 3`): at T > 0 on p = softmax(z / T), greedy on the T = 1
    softmax. It lies in [0, ln 3], so theta > ln 3 never defers (the knob's top, 1.1, is exactly lossless).
    `after_j` counts the *native* verdicts right after j, not deferred ones: a deferrable rejection within W of
    another blocks the earlier one. A window that does not fit (j + W >= the round's drafts) never defers, which
    after_j >= W implies. The accepted prefix is then the longest run of native accepts and deferrals, and the
    correction at its end is the lossless one (argmax, or the residual). At gamma 5 (W = 4) only a round's first
    draft can be deferred, and only when drafts 2 to 5 all pass. Readings: vLLM's main line, not the earlier PR's
    normalised entropy; the window stays vLLM's default (a larger one is stricter), theta is the one knob.
    """
    window = fly_window(s["gamma"])
    hesitates, run = s["h3"] >= theta, (window >= 0) & (s["after"] >= window)
    defer = hesitates & run & (s["p_d"] > 0)
    return verdict(s["native"].bool() | defer, "fly", window=window, hesitates=hesitates, run=run)


def _fly_figure(n: Numbers, theta: float, accepted):
    entropy = Bar(
        "H3",
        n["h3"],
        say("H3 = {h3:~} nats: the entropy of the target's three largest probabilities (at most ln 3)", n),
        bool(n["hesitates"]),
    )
    line = Line("θ", theta, f"θ {theta:g} (the knob): a rejection is deferred where H3 ≥ θ")
    run = Bar(
        "next accepts",
        n["after"],
        say("{after:.0f} drafts right after this one pass the lossless test in a row", n),
        bool(n["run"]),
    )
    need = Line(
        "W", n["window"], say("window W = min(6, γ − 1) = {window:.0f} (γ {gamma:.0f}): that many must pass", n)
    )
    return "H3 against θ, and the accepts after d", (
        Panel((entropy,), (line,), "nats"),
        Panel((run,), (need,), "drafts"),
    )


FLY = Rule(
    name="fly",
    title="FLy (deferred rejection)",
    family=TARGET_ONLY,
    color="#c026d3",
    reads=("h3", "after", "gamma", "native", "p_d"),
    decide=fly,
    explain=lambda n, theta: (
        say("H3 {h3:~} vs θ {knob:g}; ", n, theta)
        + _verdict_words(n)
        + say("; it accepts the next {after:.0f} in a row (window W {window:.0f} = min(6, γ−1), γ {gamma:.0f})", n)
    ),
    knob=Knob(
        "theta",
        0.3,
        0.0,
        1.1,
        "defer a rejection when the top-3 entropy H3(p) >= theta (nats) and the next W = min(6, gamma - 1) drafts "
        "pass the lossless test; above ln 3 = 1.0986 nothing is deferred, at any T; smaller relaxes more",
        strict=1.1,
        strict_greedy=1.1,
    ),
    reasons=(
        Reason(
            "fly",
            "FLy",
            "lossless rejects it, but the target's top-3 entropy is at least theta and the next W drafts pass the "
            "lossless test, so the rejection is deferred (FLy)",
            "#e879f9",
            "L",
            RELATIVE,
        ),
    ),
    figure=_fly_figure,
)


# ---- the tie-only control ---------------------------------------------------------------------------------------
def tie_only(s: Stats, _knob=None) -> Verdict:
    """The control every rule's churn is read against: besides the lossless test, accept d only where it ties the
    target's argmax at T = 0, no logit above its own (rank 1) while it is not the argmax's index (order > 1): exact
    match rejects such a token only by index order, and a bf16 target ties often enough that a rule accepting ties
    parts from lossless on a few problems per suite with no relaxation at all. At T > 0 the lossless test treats tied
    tokens alike, so the control relaxes nothing there. No knob; it names its exact matches itself, so OR and replace
    mode decide alike."""
    native = s["native"].bool()
    tied = greedy(s) & (s["rank"] == 1) & (s["order"] > 1)
    return Verdict(accept=native | tied, components={"exact": native, "tie": tied & ~native}, numbers={"tied": tied})


def _tie_figure(n: Numbers, _knob, accepted):
    bar = Bar("d's place", n["order"], say("d's place in the target's order: {order:.0f} (ties by index)", n), accepted)
    rank = Bar("rank of d", n["rank"], say("rank of d: {rank:.0f} (1 + the logits strictly above d's)", n))
    line = Line("1", 1, "rank 1 at a place after 1: d's logit equals the argmax's")
    return "is d tied with the target's argmax (T = 0)?", (Panel((rank, bar), (line,), "place"),)


TIE_ONLY = Rule(
    name="tie-only",
    label="Control: ties only",
    title="ties only",
    family=TARGET_ONLY,
    color="#334155",
    reads=("rank", "order", "u", "native"),
    decide=tie_only,
    explain=lambda n, _knob=None: (
        say("rank of d {rank:.0f}, place {order:.0f}", n) + (": tied with the argmax" if n["tied"] else ": not a tie")
    ),
    reasons=(EXACT, TIE),
    figure=_tie_figure,
)

RULES = (TYPICAL, TOP_K, RELAXED, MARS, FLY, TIE_ONLY)
