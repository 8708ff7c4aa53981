"""Speculative cascades: rules that verify the draft against a distribution of their own, pi, built from q and p.

Narasimhan et al., "Faster Cascades via Speculative Decoding", ICLR 2025 (arXiv 2405.19261); official notebook
`google-research/google-research`, `speculative_cascades/speculative_cascades_gemma.ipynb`. A cascade's deferral
rule decides, from the two models' T = 1 probabilities (q1, p1), how much of the draft's distribution q to keep;
the result is a target pi, and lossless speculative decoding then runs *against pi* (the notebook reuses its
SPEED functions with pi in place of p):
- at T > 0 the draft d ~ q is accepted iff u q(d) <= pi(d) (the round's own uniform u), and the correction at the
  first rejection is drawn from norm(max(pi - q, 0)); the emitted token is then distributed as pi;
- at T = 0 q and p are one-hots (the notebook's), so the test is deterministic and the correction is the target's
  argmax.
This test *is* the verification: it replaces the lossless test (TokenV3 is stricter than it off its set A), so
the OR / replace mode makes no difference to these rules. The bonus token after k accepted drafts comes from p
(there is no draft at that position to defer from).

Two rules, one knob alpha each (`config.KNOBS`; larger relaxes more):
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
Each rule reads statistics of the evidence (`dropmatch.evidence`: p1(d), max p1, max q1, TV, the round's u and
lossless verdict, TokenV3's edge), so the inspector re-decides it from a record's numbers; `pi` needs the whole
distributions and runs in the decoder only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from dropmatch.evidence import Evidence, shown

Stats = Mapping[str, torch.Tensor]
REASON = "cascade"  # the reason of an acceptance the lossless test would not have made
REASON_WORD = "cascade"
REASON_MEANING = "lossless rejects it, but the speculative cascade's pi keeps the draft's mass there (TokenV3, OPT)"


def _greedy(s: Stats) -> torch.Tensor:
    return torch.isnan(s["u"])  # no draw: T = 0


def in_set(s: Stats, alpha: float) -> torch.Tensor:
    """d in TokenV3's A: p1(d) / max p1 >= 1 - alpha (Eq. 15 divided by max p1 > 0, the form pi's A uses)."""
    return s["p1_d"] / s["p1_max"] >= 1 - alpha


def token_v3(s: Stats, alpha: float) -> torch.Tensor:
    """TokenV3's verification: d in A, or (T = 0) d is the argmax, or (T > 0) u q(d) <= (1 - q(A)) p(d)."""
    native = s["native"].bool()
    sampled = native & (s["v3_edge"] < 1 - alpha)
    return in_set(s, alpha) | torch.where(_greedy(s), native, sampled)


def token_v3_pi(ev: Evidence, alpha: float) -> torch.Tensor:
    """pi(v) = q(v) 1[v in A] + (1 - q(A)) p(v), A = {v : p1(v) / max p1 >= 1 - alpha}.  # [P, V]"""
    inside = (ev.p1 / ev.p1_max[:, None] >= 1 - alpha).to(ev.q.dtype)
    kept = ev.q * inside
    return kept + (1 - kept.sum(-1, keepdim=True)) * ev.p[: len(ev.draft)]


def picks_draft(s: Stats, alpha: float) -> torch.Tensor:
    """OPT's choice of q: max q1 >= max p1 - alpha TV, TV of the one-hots (1: d is not the argmax) at T = 0."""
    tv = torch.where(_greedy(s), 1.0, s["tv"])
    return s["q1_max"] >= s["p1_max"] - alpha * tv


def opt(s: Stats, alpha: float) -> torch.Tensor:
    """OPT's verification: pi = q accepts d; pi = p is the lossless test (exact match at T = 0)."""
    return picks_draft(s, alpha) | s["native"].bool()


def opt_pi(ev: Evidence, alpha: float) -> torch.Tensor:
    """pi = q where OPT picks the draft, else p.  # [P, V]"""
    s = {name: ev[name] for name in ("q1_max", "p1_max", "tv", "u")}
    return torch.where(picks_draft(s, alpha)[:, None], ev.q, ev.p[: len(ev.draft)])


def _token_line(s: Mapping[str, float], alpha: float) -> str:
    bound = (1 - alpha) * s["p1_max"]
    inside = s["p1_d"] / s["p1_max"] >= 1 - alpha
    line = f"p₁(d) {shown(s['p1_d'])} vs (1 − α)·max p₁ {shown(bound)}: {'in' if inside else 'outside'} A"
    if inside:
        return line
    if math.isnan(s["u"]):  # greedy
        return f"{line}; {'d is' if s['native'] else 'not'} the target's argmax"
    if not s["native"]:
        return f"{line}; u·q(d) > p(d) already"
    return f"{line}; u·q(d) ≤ (1 − q(A))·p(d) while 1 − α > {shown(s['v3_edge'])}"


def _opt_line(s: Mapping[str, float], alpha: float) -> str:
    greedy = math.isnan(s["u"])
    tv = 1.0 if greedy else s["tv"]
    bound = s["p1_max"] - alpha * tv
    pick = "π = q (the draft's)" if s["q1_max"] >= bound else "π = p (the lossless test)"
    term = "α" if greedy else f"α·TV {shown(tv)}"
    return f"max q₁ {shown(s['q1_max'])} vs max p₁ − {term} = {shown(bound)}: {pick}"


@dataclass(frozen=True, kw_only=True)
class Cascade:
    """A speculative-cascade rule as the registry takes it: its verification test (Stats, alpha) -> [P] bool, the
    distribution pi it verifies against at T > 0 (Evidence, alpha) -> [P, V], what the test reads
    (evidence.STATISTICS), its title, and `explain(numbers, alpha)`, one line on what it read at a position."""

    test: Callable[[Stats, float], torch.Tensor]
    pi: Callable[[Evidence, float], torch.Tensor]
    reads: tuple[str, ...]
    title: str
    explain: Callable[[Mapping[str, float], float], str]


CASCADES = {
    "cascade-token": Cascade(
        test=token_v3,
        pi=token_v3_pi,
        reads=("p1_d", "p1_max", "v3_edge", "u", "native"),
        title="speculative cascade, token-level (TokenV3)",
        explain=_token_line,
    ),
    "cascade-opt": Cascade(
        test=opt,
        pi=opt_pi,
        reads=("q1_max", "p1_max", "tv", "u", "native"),
        title="speculative cascade, OPT",
        explain=_opt_line,
    ),
}
