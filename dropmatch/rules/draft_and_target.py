"""Relaxed rules that compare the draft's distribution q with the target's p: Fuzzy SD (three divergences), EARS and
lenience.

Each reads statistics of p (at the comparison temperature) and q at a drafted position (`dropmatch.evidence`), and
some the round's own lossless test (its uniforms `u`); it joins the lossless test as every rule does (`Rule.join`),
and the correction comes from the target (the lossless residual when sampling).
"""

from __future__ import annotations

import math

import torch

from dropmatch.config import Knob
from dropmatch.rules.base import COMPARES, Bar, Line, Numbers, Panel, Reason, Rule, Stats, greedy, say, verdict

RELATIVE = "relative"
LN2 = 0.6931471805599453

# ---- Fuzzy SD ---------------------------------------------------------------------------------------------------
FUZZY = Reason(
    "fuzzy",
    "Fuzzy SD",
    "lossless rejects it, but the divergence between p and q is under the threshold (Fuzzy SD)",
    "#99f6e4",
    "F",
    RELATIVE,
)


def fuzzy(statistic: str):
    """Fuzzy speculative decoding (Holsman, Huang and Dhingra, Findings of ACL 2025, Algorithm 1; code
    `maxholsman/fsd`, `_speculative_backoff_sampling`): accept d_j when Div(p_j, q_j) <= T, a test on the two
    whole distributions that ignores which token was drafted.

    Readings: JS is the textbook 1/2 KL(p || m) + 1/2 KL(q || m), m = (p + q) / 2, in nats (the official code
    passes its arguments to `F.kl_div` the other way round, which gives 1/2 KL(m || p) + 1/2 KL(m || q));
    KL is KL(q || p), the direction of the code's `kl_div(log p, q)`; TV is 1/2 |p - q|_1. p and q are the
    plain softmaxes (the code's default, no top-k or top-p processing).
    """

    def decide(s: Stats, threshold: float):
        return verdict(s[statistic] <= threshold, "fuzzy")

    decide.__doc__ = f"Fuzzy SD with {statistic}: accept when {statistic} <= threshold."
    return decide


def _fuzzy(name: str, statistic: str, title: str, symbol: str, axis: str, color: str, knob: Knob) -> Rule:
    def figure(n: Numbers, threshold: float, accepted):
        value = n[statistic]
        bar = Bar(
            symbol,
            value,
            say(f"{symbol} = {{{statistic}:~}}: the divergence between the target's p and the draft's q", n),
            accepted,
        )
        line = Line("threshold", threshold, f"threshold {threshold:g} (the knob): accept when {symbol} ≤ it")
        return f"{symbol} against the threshold", (Panel((bar,), (line,), axis),)

    return Rule(
        name=name,
        title=title,
        family=COMPARES,
        color=color,
        reads=(statistic,),
        decide=fuzzy(statistic),
        explain=lambda n, threshold: say(f"{symbol} {{{statistic}:~}} vs threshold {{knob:g}}", n, threshold),
        knob=knob,
        reasons=(FUZZY,),
        figure=figure,
    )


# The thresholds' defaults: FSD's README uses JS 0.4; the KL and TV thresholds have none there and sit where they relax
# about as often as DropMatch at its paper setting on the embedded pair. A threshold of 0 accepts only q = p, where
# the draft token is what the target would sample: nearly lossless, not exactly (a tie at T = 0).
FUZZY_JS = _fuzzy(
    "fuzzy-js",
    "js_pq",
    "Fuzzy SD, JS(p, q)",
    "JS(p‖q)",
    "nats",
    "#0d9488",
    Knob(
        "threshold",
        0.4,
        0.0,
        LN2,
        "accept when JS(p || q) <= threshold (nats), at T = 0 on the T = 1 softmaxes; 0 relaxes nothing; larger "
        "relaxes more",
        strict=0.0,
        strict_greedy=0.0,
    ),
)
FUZZY_KL = _fuzzy(
    "fuzzy-kl",
    "kl_qp",
    "Fuzzy SD, KL(q || p)",
    "KL(q‖p)",
    "nats",
    "#0891b2",
    Knob(
        "threshold",
        1.0,
        0.0,
        100.0,
        "accept when KL(q || p) <= threshold (nats), at T = 0 on the T = 1 softmaxes; 0 relaxes nothing; larger "
        "relaxes more",
        strict=0.0,
        strict_greedy=0.0,
    ),
)
FUZZY_TV = _fuzzy(
    "fuzzy-tv",
    "tv",
    "Fuzzy SD, TV(p, q)",
    "TV(p,q)",
    "total variation",
    "#2563eb",
    Knob(
        "threshold",
        0.5,
        0.0,
        1.0,
        "accept when TV(p, q) <= threshold, at T = 0 on the T = 1 softmaxes; 0 relaxes nothing; larger relaxes more",
        strict=0.0,
        strict_greedy=0.0,
    ),
)


# ---- EARS -------------------------------------------------------------------------------------------------------
def ears(s: Stats, beta: float):
    """EARS, adaptive rejection sampling (Sun et al., arXiv 2512.13194; only the abstract was read, no official
    code): the rejection test's threshold is widened by a tolerance proportional to the target's uncertainty
    1 - max p: accept d_j iff u_j < p_j(d_j) / q_j(d_j) + beta (1 - max p_j), with the round's own uniform u_j
    (written u q(d) <= p(d) + beta (1 - max p) q(d), so beta = 0 is the lossless test exactly, and any beta accepts
    a superset of it). On rejection the correction is the lossless residual norm(max(p - q, 0)).

    At T = 0 the source defines nothing. The project's reading ("greedy reading" wherever a greedy table shows it):
    accept iff p1(d) / q1(d) + beta (1 - max p1) >= 1, the acceptance that is certain whatever u, on the T = 1
    softmaxes as every relative reads them when greedy (OR exact match). So at T = 0 even beta = 0 accepts a draft
    with p1(d) >= q1(d) that is not the argmax: no beta is lossless there. The source's beta is not known here; the
    default, 0.5, is the middle of [0, 1], where beta = 1 accepts every draft of a near-flat target (max p -> 0).
    """
    tolerance = beta * (1 - s["p_max"])
    u, p_d, q_d = s["u"], s["p_d"], s["q_d"]
    sampled = u * q_d <= p_d + tolerance * q_d
    ratio = p_d / q_d
    certain = ratio + tolerance >= 1
    hit = s["native"].bool() | torch.where(greedy(s), certain, sampled)
    return verdict(hit, "ears", ratio=ratio, tolerance=tolerance, total=ratio + tolerance)


def _ears_against(n: Numbers) -> str:
    return "1 (T = 0 reading)" if math.isnan(n["u"]) else say("u {u:~}", n)


def _ears_figure(n: Numbers, beta: float, accepted):
    bars = (
        Bar(
            "p/q",
            n["ratio"],
            say("p(d)/q(d) = {ratio:~}: the lossless test's ratio (p(d) {p_d:.4f}, q(d) {q_d:.4f})", n),
        ),
        Bar(
            "β(1−max p)",
            n["tolerance"],
            say("tolerance β(1 − max p) = {knob:g}·(1 − {p_max:.4f}) = {tolerance:~}", n, beta),
        ),
        Bar("sum", n["total"], say("p(d)/q(d) + β(1 − max p) = {total:~}", n), accepted),
    )
    sampled = not math.isnan(n["u"])
    line = (
        Line("u", n["u"], say("the round's uniform u = {u:~}: accept when the sum exceeds it", n))
        if sampled
        else Line("1", 1.0, "1: at T = 0 (the project's reading) accept when the sum reaches it")
    )
    return f"p(d)/q(d) + β(1 − max p) against {'u' if sampled else '1'}", (Panel(bars, (line,), "ratio"),)


EARS = Rule(
    name="ears",
    title="EARS (uncertainty-widened rejection test)",
    family=COMPARES,
    color="#4f46e5",
    reads=("p_d", "q_d", "p_max", "u", "native"),
    decide=ears,
    explain=lambda n, beta: say("p(d)/q(d) {ratio:~} + β(1 − max p) {tolerance:~} vs ", n, beta) + _ears_against(n),
    knob=Knob(
        "beta",
        0.5,
        0.0,
        2.0,
        "T > 0: accept when u < p(d) / q(d) + beta (1 - max p), 0 being the lossless test; T = 0 (this project's "
        "reading): accept when p(d) / q(d) + beta (1 - max p) >= 1, which no beta makes lossless; larger relaxes more",
        strict=0.0,
    ),
    reasons=(
        Reason(
            "ears",
            "EARS",
            "lossless rejects it, but u < p(d) / q(d) + beta (1 - max p) (EARS; at T = 0 the project's reading: "
            "p(d) / q(d) + beta (1 - max p) >= 1)",
            "#818cf8",
            "E",
            RELATIVE,
        ),
    ),
    greedy_reading=True,
    figure=_ears_figure,
)


# ---- lenience ---------------------------------------------------------------------------------------------------
def lenience(s: Stats, l: float):  # noqa: E741 (the sources' name)
    """Lenience l (Leviathan, Kalman and Matias, ICML 2023, its lenience parameter; the lossy-verification studies sweep
    it): accept d with probability min(1, p(d) / (l q(d))), that is u l q(d) <= p(d) with the round's own uniform u.
    l = 1 is the lossless test; a smaller l accepts a superset of it. The correction is the lossless residual.

    At T = 0 the source defines nothing; the project's reading, as for EARS: accept iff p1(d) >= l q1(d) (the
    acceptance that is certain whatever u), OR exact match. No l is lossless there (l = 1 still accepts a draft with
    p1(d) >= q1(d) that is not the argmax)."""
    p_d, q_d = s["p_d"], s["q_d"]
    bound = l * q_d
    hit = s["native"].bool() | torch.where(greedy(s), p_d >= bound, s["u"] * bound <= p_d)
    return verdict(hit, "lenience", bound=bound, ratio=p_d / q_d)


def _lenience_figure(n: Numbers, l: float, accepted):  # noqa: E741
    sampled = not math.isnan(n["u"])
    bar = Bar("p(d)/q(d)", n["ratio"], say("p(d)/q(d) = {ratio:~} (p(d) {p_d:.4f}, q(d) {q_d:.4f})", n), accepted)
    line = (
        Line("u·l", n["u"] * l, say("u·l = {u:~}·{knob:g}: accept when p(d)/q(d) reaches it", n, l))
        if sampled
        else Line("l", l, f"l {l:g}: at T = 0 (the project's reading) accept when p(d)/q(d) reaches it")
    )
    return f"p(d)/q(d) against {'u·l' if sampled else 'l'}", (Panel((bar,), (line,), "ratio"),)


LENIENCE = Rule(
    name="lenience",
    title="lenience (Leviathan et al.)",
    family=COMPARES,
    color="#a16207",
    reads=("p_d", "q_d", "u", "native"),
    decide=lenience,
    explain=lambda n, ell: (
        say("p(d)/q(d) {ratio:~} vs ", n)
        + (say("u·l, u {u:~}, l {knob:g}", n, ell) if not math.isnan(n["u"]) else f"l {ell:g} (T = 0 reading)")
    ),
    knob=Knob(
        "l",
        0.5,
        0.0,
        1.0,
        "T > 0: accept with probability min(1, p(d) / (l q(d))), 1 being the lossless test; T = 0 (this project's "
        "reading): accept when p(d) >= l q(d), which no l makes lossless; smaller relaxes more",
        strict=1.0,
    ),
    reasons=(
        Reason(
            "lenience",
            "lenience",
            "lossless rejects it, but u l q(d) <= p(d) (lenience l; at T = 0 the project's reading: p(d) >= l q(d))",
            "#fde68a",
            "λ",
            RELATIVE,
        ),
    ),
    greedy_reading=True,
    figure=_lenience_figure,
)

RULES = (FUZZY_JS, FUZZY_KL, FUZZY_TV, EARS, LENIENCE)
