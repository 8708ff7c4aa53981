"""DropMatch's relatives: relaxed acceptance rules from other papers, each one knob, each a pure function.

Every rule reads statistics of the unmasked target p (at the comparison temperature) and the draft's q at a
drafted position (`dropmatch.evidence`; `s` is an `Evidence` or a plain dict of tensors, such as the app's
inspector rebuilds from a recorded token) and returns a [P] bool tensor: accept or not. None needs the
dropout paths. The decoder runs each exactly as it runs DropMatch: OR with the lossless test by default,
alone in `replace` mode, after rejection sampling at T > 0; the correction still comes from the target.
The knobs' names, defaults and ranges live in `dropmatch.config.KNOBS`.

`RELATIVES` lists each rule with what it reads, the reason its acceptances carry and how it is shown (its
title, and one line that explains its decision from the numbers it read); `dropmatch.criteria` makes each a
registry entry. Where a source leaves room, the reading taken here is stated in the rule's docstring.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from dropmatch.evidence import shown

Stats = Mapping[str, torch.Tensor]


def fuzzy(statistic: str):
    """Fuzzy speculative decoding (Holsman, Huang and Dhingra, Findings of ACL 2025, Algorithm 1; code
    `maxholsman/fsd`, `_speculative_backoff_sampling`): accept d_j when Div(p_j, q_j) <= T, a test on the two
    whole distributions that ignores which token was drafted.

    Readings: JS is the textbook 1/2 KL(p || m) + 1/2 KL(q || m), m = (p + q) / 2, in nats (the official code
    passes its arguments to `F.kl_div` the other way round, which gives 1/2 KL(m || p) + 1/2 KL(m || q));
    KL is KL(q || p), the direction of the code's `kl_div(log p, q)`; TV is 1/2 |p - q|_1. p and q are the
    plain softmaxes (the code's default, no top-k or top-p processing).
    """

    def rule(s: Stats, threshold: float) -> torch.Tensor:
        return s[statistic] <= threshold

    rule.__doc__ = f"Fuzzy SD with {statistic}: accept when {statistic} <= threshold."
    return rule


def typical(s: Stats, epsilon: float) -> torch.Tensor:
    """Typical acceptance (Medusa, Cai et al., ICML 2024, Eq. in Sec. 2.3.1; code `medusa/model/utils.py`,
    `evaluate_posterior`): accept d_j when p_j(d_j) > min(epsilon, delta * exp(-H(p_j))).

    One knob: delta = sqrt(epsilon), the paper's recommendation (the code's defaults, posterior_threshold
    0.09 and posterior_alpha 0.3, follow it). H is the exact entropy in nats (the code adds 1e-5 inside the
    log). Medusa applies the rule only when sampling; here it also runs at T = 0, on the T = 1 distribution.
    """
    return s["p_d"] > typical_bound(s["entropy"], epsilon)


def typical_bound(entropy, epsilon: float) -> torch.Tensor:
    """Medusa's bound on p(d): min(epsilon, sqrt(epsilon) * exp(-H(p))), for a tensor of H (or one number)."""
    return torch.clamp(math.sqrt(epsilon) * torch.exp(-torch.as_tensor(entropy)), max=epsilon)


def top_k(s: Stats, k: float) -> torch.Tensor:
    """Target top-k membership, the plainest relaxation: accept d_j when it is among the k tokens the target
    finds most likely: rank <= k, the rank being 1 + the number of tokens with a strictly larger logit (tied
    tokens share a rank; the record's `target_rank`). No single source: the baseline every relaxation beats."""
    return s["rank"] <= k


def mars(s: Stats, theta: float) -> torch.Tensor:
    """MARS, margin-aware verification (Song et al., arXiv 2601.15498; code `5SSjw/MARS`,
    `mars/model/utils.py`, `evaluate_posterior`): where the target hesitates between its two best tokens,
    z_2 / z_1 > theta (raw logits; the ratio is the same at any temperature), accept d_j if it is one of them.

    Readings: the ratio is defined only for z_1 > 0 (the code divides by z_1 + 1e-10; with z_1 <= 0 the sign
    flips the test's meaning), so no relaxation there. The target's top-1 is always accepted (the code's
    standard test accepts it), so in replace mode MARS still accepts exact matches. The official code applies
    the margin test only when sampling; here it also runs at T = 0.
    """
    hesitates = torch.nan_to_num(s["margin"], nan=-math.inf) > theta
    return (s["rank"] == 1) | (hesitates & (s["rank"] == 2))


@dataclass(frozen=True, kw_only=True)
class Relative:
    """A relative as the registry takes it: its test, what it reads (evidence.STATISTICS), its title, and
    `explain(numbers, knob)`, one line on what it read at a position; the reason its acceptances carry (one of
    config.ACCEPT_REASONS), with the legend's word for it and what it means."""

    test: Callable[[Stats, float], torch.Tensor]
    reads: tuple[str, ...]
    title: str
    explain: Callable[[Mapping[str, float], float], str]
    reason: str
    reason_word: str
    reason_meaning: str


def _divergence(statistic: str, name: str) -> Callable[[Mapping[str, float], float], str]:
    return lambda s, threshold: f"{name} {shown(s[statistic])} vs threshold {threshold:g}"


def _typical_line(s: Mapping[str, float], epsilon: float) -> str:
    bound = float(typical_bound(s["entropy"], epsilon))
    return f"p(d) {shown(s['p_d'])} vs bound {shown(bound)} = min(ε, √ε·e^−H), H {shown(s['entropy'])} nats"


def _fuzzy(statistic: str, title: str, symbol: str) -> Relative:
    return Relative(
        test=fuzzy(statistic),
        reads=(statistic,),
        title=title,
        explain=_divergence(statistic, symbol),
        reason="fuzzy",
        reason_word="Fuzzy SD",
        reason_meaning="lossless rejects it, but the divergence between p and q is under the threshold (Fuzzy SD)",
    )


RELATIVES = {
    "fuzzy-js": _fuzzy("js_pq", "Fuzzy SD, JS(p, q)", "JS(p‖q)"),
    "fuzzy-kl": _fuzzy("kl_qp", "Fuzzy SD, KL(q || p)", "KL(q‖p)"),
    "fuzzy-tv": _fuzzy("tv", "Fuzzy SD, TV(p, q)", "TV(p,q)"),
    "typical": Relative(
        test=typical,
        reads=("p_d", "entropy"),
        title="typical acceptance (Medusa)",
        explain=_typical_line,
        reason="typical",
        reason_word="typical",
        reason_meaning=(
            "lossless rejects it, but p(d) > min(epsilon, sqrt(epsilon) exp(-H(p))) (Medusa typical acceptance)"
        ),
    ),
    "top-k": Relative(
        test=top_k,
        reads=("rank",),
        title="target top-k",
        explain=lambda s, k: f"target rank of d: {s['rank']:.0f} vs k {k:g}",
        reason="top-k",
        reason_word="top-k",
        reason_meaning="lossless rejects it, but it is among the target's k most likely tokens",
    ),
    "mars": Relative(
        test=mars,
        reads=("rank", "margin"),
        title="MARS (top-2 logit margin)",
        explain=lambda s, theta: f"z₂/z₁ {shown(s['margin'])} vs θ {theta:g}; rank of d {s['rank']:.0f}",
        reason="mars",
        reason_word="MARS",
        reason_meaning="lossless rejects it, but it is the target's second token where z2 / z1 > theta (MARS)",
    ),
}
