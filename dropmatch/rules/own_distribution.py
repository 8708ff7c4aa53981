"""Rules that verify the draft against a distribution of their own, pi, built from q and p: the speculative cascades
(TokenV3, OPT) and the static ensemble (transformers' `assistant_ensemble_weight`).

Lossless speculative decoding runs *against pi*: at T > 0 the draft d ~ q is accepted iff u q(d) <= pi(d) (the round's
own uniform u), and the correction at the first rejection is drawn from norm(max(pi - q, 0)); the emitted token is
then distributed as pi. This test *is* the verification: it replaces the lossless test, so the OR / replace mode makes
no difference to these rules (`Rule.alone`). The bonus token after k accepted drafts comes from p (there is no draft
at that position to defer from).

Speculative cascades: Narasimhan et al., "Faster Cascades via Speculative Decoding", ICLR 2025 (arXiv 2405.19261);
official notebook `google-research/google-research`, `speculative_cascades/speculative_cascades_gemma.ipynb`. A
cascade's deferral rule decides, from the two models' T = 1 probabilities (q1, p1), how much of the draft's
distribution q to keep. At T = 0 q and p are one-hots (the notebook's), so the test is deterministic and the correction
is the target's argmax. One knob alpha each (larger relaxes more):
- TokenV3 (Eq. 15), `cascade-token`: A = {v : p1(v) >= (1 - alpha) max p1}, pi(v) = q(v) 1[v in A] +
  (1 - q(A)) p(v). T = 0: accept iff d in A or d is the target's argmax. T > 0: d in A is always accepted
  (pi(d) >= q(d)); d outside A iff u q(d) <= (1 - q(A)) p(d), which `Evidence.v3_edge` folds into one number per
  position so that a record can be re-decided at any alpha. alpha < 0 empties A: pi = p, the lossless test, at
  every T. alpha = 0 keeps the target's ties with its top-1: exact greedy, but biased at T > 0 (pi(a) =
  q(a) + (1 - q(a)) p(a)), so the notebook's "0 = standard SPEED" holds only at T = 0.
- OPT (Eq. 10), `cascade-opt`: pi = q when max q1 >= max p1 - alpha TV(q_T, p_T), else pi = p, with TV on the
  distributions the run samples from (the notebook's sum of max(0, q - p)). T = 0: the one-hots of two different
  tokens are TV 1 apart, so accept iff d is the target's argmax or max q1 >= max p1 - alpha (OPT is the Diff
  rule there). T > 0: pi = q accepts d whatever u; pi = p is the lossless test with its own residual, so OPT is
  exactly "lossless OR pick q". Reading: it keeps whatever the draft proposes wherever the draft is the more
  confident model, even a token the target dislikes.
"""

from __future__ import annotations

import math

import torch

from dropmatch.config import Knob
from dropmatch.rules.base import EXACT, OWN, Bar, Line, Numbers, Panel, Reason, Rule, Stats, greedy, own_verdict, say

RELATIVE = "relative"
CASCADE = Reason(
    "cascade",
    "cascade",
    "lossless rejects it, but the speculative cascade's pi keeps the draft's mass there (TokenV3, OPT)",
    "#a0826d",
    "V",
    RELATIVE,
)


# ---- TokenV3 ----------------------------------------------------------------------------------------------------
def in_set(s: Stats, alpha: float) -> torch.Tensor:
    """d in TokenV3's A: p1(d) / max p1 >= 1 - alpha (Eq. 15 divided by max p1 > 0, the form pi's A uses)."""
    return s["p1_d"] / s["p1_max"] >= 1 - alpha


def token_v3(s: Stats, alpha: float):
    """TokenV3's verification: d in A, or (T = 0) d is the argmax, or (T > 0) u q(d) <= (1 - q(A)) p(d)."""
    native, inside = s["native"].bool(), in_set(s, alpha)
    off_set = torch.where(greedy(s), native, native & (s["v3_edge"] < 1 - alpha))
    return own_verdict(
        inside | off_set, native, "cascade", inside=inside, bound=(1 - alpha) * s["p1_max"], off_set=off_set
    )


def token_v3_pi(ev, alpha: float) -> torch.Tensor:
    """pi(v) = q(v) 1[v in A] + (1 - q(A)) p(v), A = {v : p1(v) / max p1 >= 1 - alpha}.  # [P, V]"""
    inside = (ev.p1 / ev.p1_max[:, None] >= 1 - alpha).to(ev.q.dtype)
    kept = ev.q * inside
    return kept + (1 - kept.sum(-1, keepdim=True)) * ev.p[: len(ev.draft)]


def _token_line(n: Numbers, alpha: float) -> str:
    line = say("p₁(d) {p1_d:~} vs (1 − α)·max p₁ {bound:~}: ", n, alpha) + ("in A" if n["inside"] else "outside A")
    if n["inside"]:
        return line
    if math.isnan(n["u"]):  # greedy
        return f"{line}; {'d is' if n['native'] else 'not'} the target's argmax"
    if not n["native"]:
        return f"{line}; u·q(d) > p(d) already"
    return line + say("; u·q(d) ≤ (1 − q(A))·p(d) while 1 − α > {v3_edge:~}", n)


def _token_figure(n: Numbers, alpha: float, accepted):
    bars = (
        Bar("p₁(d)", n["p1_d"], say("p₁(d) = {p1_d:.4f}: the target's T = 1 probability of d", n), bool(n["inside"])),
        Bar("max p₁", n["p1_max"], say("max p₁ = {p1_max:.4f}: the target's largest T = 1 probability", n)),
    )
    line = Line(
        "(1−α)·max p₁",
        n["bound"],
        say("(1 − α)·max p₁ = {bound:.4f} (α {knob:g}): d is in A when p₁(d) reaches it", n, alpha),
    )
    panels = [Panel(bars, (line,), "probability")]
    if not n["inside"] and not math.isnan(n["u"]):  # sampled, off A: the lossless draw and TokenV3's edge decide
        hover = say("TokenV3's edge {v3_edge:~}: off A, d passes when the lossless test does and 1 − α exceeds it", n)
        edge = Bar("edge", n["v3_edge"], hover, bool(n["off_set"]))
        panels.append(Panel((edge,), (Line("1 − α", 1 - alpha, "1 − α"),), "edge"))
    return "p₁(d) against (1 − α)·max p₁ (the set A)", tuple(panels)


# The official notebook's demo lenience, 0.5, for both cascades (it runs TokenV3 at 0.5; its function defaults, 0 for
# TokenV3 and -1 for OPT, relax nothing greedy).
CASCADE_TOKEN = Rule(
    name="cascade-token",
    title="speculative cascade, token-level (TokenV3)",
    family=OWN,
    color="#92400e",
    reads=("p1_d", "p1_max", "v3_edge", "u", "native"),
    decide=token_v3,
    explain=_token_line,
    knob=Knob(
        "alpha",
        0.5,
        -1.0,
        1.0,
        "keep d when it is in A = {v : p1(v) >= (1 - alpha) max p1} (T > 0: verify against q on A + (1 - q(A)) p, "
        "which also tightens the test off A); below 0 A is empty, the lossless test at any T; larger relaxes more",
        strict=-1.0,
        strict_greedy=-1.0,
    ),
    reasons=(EXACT, CASCADE),
    figure=_token_figure,
    pi=token_v3_pi,
)


# ---- OPT --------------------------------------------------------------------------------------------------------
def picks_draft(s: Stats, alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    """OPT's choice of q, max q1 >= max p1 - alpha TV (TV of the one-hots, 1, at T = 0), and that bound."""
    tv = torch.where(greedy(s), 1.0, s["tv"])
    bound = s["p1_max"] - alpha * tv
    return s["q1_max"] >= bound, bound


def opt(s: Stats, alpha: float):
    """OPT's verification: pi = q accepts d; pi = p is the lossless test (exact match at T = 0)."""
    picks, bound = picks_draft(s, alpha)
    return own_verdict(picks | s["native"].bool(), s["native"], "cascade", picks=picks, bound=bound)


def opt_pi(ev, alpha: float) -> torch.Tensor:
    """pi = q where OPT picks the draft, else p.  # [P, V]"""
    picks, _ = picks_draft({name: ev[name] for name in ("q1_max", "p1_max", "tv", "u")}, alpha)
    return torch.where(picks[:, None], ev.q, ev.p[: len(ev.draft)])


def _opt_term(n: Numbers) -> str:
    return "α" if math.isnan(n["u"]) else say("α·TV {tv:~}", n)


def _opt_line(n: Numbers, alpha: float) -> str:
    pick = "π = q (the draft's)" if n["picks"] else "π = p (the lossless test)"
    return say("max q₁ {q1_max:~} vs max p₁ − ", n) + _opt_term(n) + say(" = {bound:~}: ", n) + pick


def _opt_figure(n: Numbers, alpha: float, accepted):
    bars = (
        Bar(
            "max q₁",
            n["q1_max"],
            say("max q₁ = {q1_max:.4f}: the draft's largest T = 1 probability", n),
            bool(n["picks"]),
        ),
        Bar("max p₁", n["p1_max"], say("max p₁ = {p1_max:.4f}: the target's largest T = 1 probability", n)),
    )
    term = "α" if math.isnan(n["u"]) else say("α·TV, TV {tv:~}", n)
    line = Line(
        "max p₁ − α·TV",
        n["bound"],
        f"max p₁ − {term} = " + say("{bound:~} (α {knob:g}): π = q when max q₁ reaches it", n, alpha),
    )
    return "max q₁ against max p₁ − α·TV", (Panel(bars, (line,), "probability"),)


CASCADE_OPT = Rule(
    name="cascade-opt",
    title="speculative cascade, OPT",
    family=OWN,
    color="#57534e",
    reads=("q1_max", "p1_max", "tv", "u", "native"),
    decide=opt,
    explain=_opt_line,
    knob=Knob(
        "alpha",
        0.5,
        -10.0,
        10.0,
        "take the draft's distribution when max q1 >= max p1 - alpha TV(q, p), else the lossless test; below -1 "
        "never at T = 0 or 1 (elsewhere only where TV(q, p) <= (max q1 - max p1) / |alpha|); larger relaxes more",
        strict_greedy=-10.0,
    ),
    reasons=(EXACT, CASCADE),
    figure=_opt_figure,
    pi=opt_pi,
)


# ---- the static ensemble ------------------------------------------------------------------------------------------
def mixture(ev, w: float) -> torch.Tensor:
    """v = w p + (1 - w) q at the drafted positions, at the comparison temperature (T = 1 when greedy).  # [P, V]"""
    return w * ev.p[: len(ev.draft)] + (1 - w) * ev.q


def ensemble(s: Stats, w: float):
    """Static ensemble verification (transformers' `GenerationConfig.assistant_ensemble_weight`, `_assisted_decoding`
    and `_speculative_sampling`; DIVERSED's static ensemble): verify against the mixture v = w p + (1 - w) q.

    T > 0: accept d iff u q(d) <= v(d), i.e. with probability min(1, 1 - w + w p(d) / q(d)); the residual
    norm(max(v - q, 0)) = norm(w max(p - q, 0)) is the lossless one. T = 0: accept d iff d is argmax(v) on the T = 1
    softmaxes (the greedy draft is argmax q), and a rejected position emits argmax(v) (`greedy_pick`), leaning toward
    the draft; the bonus is argmax(p). `ens_edge` folds argmax(v) = d into one number per position, the largest w at
    which d still wins (index order breaking ties, as argmax does), so a record can be re-decided at any w. w = 1 is
    the lossless test at every T; a smaller w relaxes more, w = 0 accepts every draft."""
    native = s["native"].bool()
    sampled = s["u"] * s["q_d"] <= w * s["p_d"] + (1 - w) * s["q_d"]
    return own_verdict(
        torch.where(greedy(s), w <= s["ens_edge"], sampled), native, "ensemble", v_d=w * s["p_d"] + (1 - w) * s["q_d"]
    )


def _ensemble_line(n: Numbers, w: float) -> str:
    if math.isnan(n["u"]):
        return say("d is argmax(w·p + (1 − w)·q) for w ≤ {ens_edge:~}; w {knob:g}", n, w)
    return say("v(d) = w·p(d) + (1 − w)·q(d) = {v_d:~} vs u·q(d), u {u:~}, q(d) {q_d:~}", n, w)


def _ensemble_figure(n: Numbers, w: float, accepted):
    if math.isnan(n["u"]):
        bar = Bar(
            "edge", n["ens_edge"], say("the largest w at which d is argmax(w·p + (1 − w)·q): {ens_edge:~}", n), accepted
        )
        line = Line("w", w, f"w {w:g} (the knob): accept when w ≤ the edge")
        return "the edge of d's argmax against w", (Panel((bar,), (line,), "weight"),)
    bars = (
        Bar(
            "v(d)",
            n["v_d"],
            say("v(d) = w·p(d) + (1 − w)·q(d) = {v_d:~} (p(d) {p_d:.4f}, q(d) {q_d:.4f})", n),
            accepted,
        ),
        Bar("q(d)", n["q_d"], say("q(d) = {q_d:.4f}: the draft's probability of its token", n)),
    )
    line = Line("u·q(d)", n["u"] * n["q_d"], say("u·q(d), u {u:~}: accept when v(d) reaches it", n))
    return "v(d) against u·q(d)", (Panel(bars, (line,), "probability"),)


ENSEMBLE = Rule(
    name="ensemble",
    title="static ensemble (transformers)",
    family=OWN,
    color="#0e7490",
    reads=("p_d", "q_d", "ens_edge", "u", "native"),
    decide=ensemble,
    explain=_ensemble_line,
    knob=Knob(
        "w",
        0.5,
        0.0,
        1.0,
        "verify against w p + (1 - w) q (T = 0: accept d when it is that mixture's argmax, and emit its argmax at a "
        "rejection); 1 is the lossless test at any T; smaller relaxes more",
        strict=1.0,
        strict_greedy=1.0,
    ),
    reasons=(
        EXACT,
        Reason(
            "ensemble",
            "ensemble",
            "lossless rejects it, but it passes against the mixture w p + (1 - w) q (static ensemble)",
            "#22d3ee",
            "W",
            RELATIVE,
        ),
    ),
    figure=_ensemble_figure,
    pi=mixture,
    greedy_pick=lambda ev, w: mixture(ev, w).argmax(-1),
)

RULES = (CASCADE_TOKEN, CASCADE_OPT, ENSEMBLE)
