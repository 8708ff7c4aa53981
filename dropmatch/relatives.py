"""DropMatch's relatives: relaxed acceptance rules from other papers, each one knob, each a pure function.

Every rule reads statistics of the unmasked target p (at the comparison temperature) and the draft's q at a
drafted position, and some the round's own lossless test (`native`, its uniforms `u`, the run of accepts `after`;
`dropmatch.evidence`; `s` is an `Evidence` or a plain dict of tensors, such as the app's inspector rebuilds from a
recorded token) and returns a [P] bool tensor: accept or not. None needs the dropout paths. The decoder runs each
exactly as it runs DropMatch: OR with the lossless test by default, alone in `replace` mode; the correction still
comes from the target. At T > 0 every rule keeps the lossless test where it does not relax (its strictest knob
relaxes nothing, so it samples from the target; tests/test_sampling_rules.py), except typical acceptance, which
relaxes at every epsilon.
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
    finds most likely, other than its argmax: 2 <= order <= k, the order being d's place in the target's order with
    ties broken as argmax breaks them (by index; `order`); the argmax itself goes through the lossless test.

    No single source defines it; this is the project's form, the same at every temperature: k = 1 relaxes nothing
    (at T = 0 the argmax is exact match, at T > 0 it passes u q(d) <= p(d) as any token does), and k = 2 also
    accepts a token tied with the argmax. In replace mode it is this test alone: a token outside the top k is
    rejected even where the lossless test would accept it. The baseline every relaxation beats.
    """
    order = s["order"]
    return torch.where(order == 1, s["native"].bool(), order <= k)


def mars(s: Stats, theta: float) -> torch.Tensor:
    """MARS, margin-aware verification (Song et al., arXiv 2601.15498; code `5SSjw/MARS`,
    `mars/model/utils.py`, `evaluate_posterior`): where the target hesitates between its two best tokens,
    z_2 / z_1 > theta (raw logits; the ratio is the same at any temperature), accept d_j iff it is one of them
    (rank <= 2); elsewhere the lossless test decides (exact match at T = 0, u q(d) <= p(d) at T > 0, as the code's
    standard rejection sampling): accept = hesitates ? rank <= 2 : native. In OR mode that is
    native OR (hesitates AND rank <= 2); in replace mode, as in the code, a hesitant position accepts its top 2 only.

    Readings: the ratio is defined only for z_1 > 0 (the code divides by z_1 + 1e-10; with z_1 <= 0 the sign
    flips the test's meaning), so no relaxation there. theta = 1 (or any value above every ratio) relaxes nothing:
    the rule is the lossless test at both temperatures. After a rejection the correction is the residual
    norm(max(p - q, 0)) (the code renormalises max(p - q, 0) only at d's entry, exact only for a one-hot q, and
    samples a hesitant position's correction from p). The official code applies the margin test only when
    sampling; here it also runs at T = 0.
    """
    hesitates = torch.nan_to_num(s["margin"], nan=-math.inf) > theta
    return torch.where(hesitates, s["rank"] <= 2, s["native"].bool())


FLY_WINDOW = 6  # vLLM's cap on FLy's window: W = min(6, gamma - 1)


def fly_window(gamma) -> torch.Tensor:
    """FLy's window W = min(6, gamma - 1) for a tensor of draft lengths (-1 where gamma is unknown, 0)."""
    return torch.clamp(torch.as_tensor(gamma) - 1, max=FLY_WINDOW)


def fly(s: Stats, theta: float) -> torch.Tensor:
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
    defer = (s["h3"] >= theta) & (window >= 0) & (s["after"] >= window) & (s["p_d"] > 0)
    return s["native"].bool() | defer


def ears(s: Stats, beta: float) -> torch.Tensor:
    """EARS, adaptive rejection sampling (Sun et al., arXiv 2512.13194; only the abstract was read, no official
    code): the rejection test's threshold is widened by a tolerance proportional to the target's uncertainty
    1 - max p: accept d_j iff u_j < p_j(d_j) / q_j(d_j) + beta (1 - max p_j), with the round's own uniform u_j
    (written u q(d) <= p(d) + beta (1 - max p) q(d), so beta = 0 is the lossless test exactly, and any beta accepts
    a superset of it). On rejection the correction is the lossless residual norm(max(p - q, 0)).

    At T = 0 the source defines nothing. The project's reading, labelled as such: accept iff
    p1(d) / q1(d) + beta (1 - max p1) >= 1, the acceptance that is certain whatever u, on the T = 1 softmaxes as
    every relative reads them when greedy (OR exact match). So at T = 0 even beta = 0 accepts a draft with
    p1(d) >= q1(d) that is not the argmax. The source's beta is not known here; the default, 0.5, is the middle
    of [0, 1], where beta = 1 accepts every draft of a near-flat target (max p -> 0).
    """
    tolerance = beta * (1 - s["p_max"])
    u, p_d, q_d = s["u"], s["p_d"], s["q_d"]
    sampled = u * q_d <= p_d + tolerance * q_d
    greedy = p_d / q_d + tolerance >= 1
    return s["native"].bool() | torch.where(torch.isnan(u), greedy, sampled)


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


def _verdict(s: Mapping[str, float]) -> str:
    return "lossless accepts d" if s["native"] else "lossless rejects d"


def _fly_line(s: Mapping[str, float], theta: float) -> str:
    window = int(fly_window(s["gamma"]))
    return (
        f"H3 {shown(s['h3'])} vs θ {theta:g}; {_verdict(s)}; it accepts the next {s['after']:.0f} in a row "
        f"(window W {window} = min(6, γ−1), γ {s['gamma']:.0f})"
    )


def _ears_line(s: Mapping[str, float], beta: float) -> str:
    ratio, tolerance = s["p_d"] / s["q_d"], beta * (1 - s["p_max"])
    against = "1 (T = 0 reading)" if math.isnan(s["u"]) else f"u {shown(s['u'])}"
    return f"p(d)/q(d) {shown(ratio)} + β(1 − max p) {shown(tolerance)} vs {against}"


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
        reads=("order", "native"),
        title="target top-k",
        explain=lambda s, k: f"d's place in the target's order {s['order']:.0f} vs k {k:g} (1: {_verdict(s)})",
        reason="top-k",
        reason_word="top-k",
        reason_meaning="lossless rejects it, but it is among the target's k most likely tokens (not its argmax)",
    ),
    "mars": Relative(
        test=mars,
        reads=("rank", "margin", "native"),
        title="MARS (top-2 logit margin)",
        explain=lambda s, theta: (
            f"z₂/z₁ {shown(s['margin'])} vs θ {theta:g}; rank of d {s['rank']:.0f}; elsewhere {_verdict(s)}"
        ),
        reason="mars",
        reason_word="MARS",
        reason_meaning="lossless rejects it, but it is the target's top-1 or top-2 where z2 / z1 > theta (MARS)",
    ),
    "fly": Relative(
        test=fly,
        reads=("h3", "after", "gamma", "native", "p_d"),
        title="FLy (deferred rejection)",
        explain=_fly_line,
        reason="fly",
        reason_word="FLy",
        reason_meaning=(
            "lossless rejects it, but the target's top-3 entropy is at least theta and the next W drafts pass the "
            "lossless test, so the rejection is deferred (FLy)"
        ),
    ),
    "ears": Relative(
        test=ears,
        reads=("p_d", "q_d", "p_max", "u", "native"),
        title="EARS (uncertainty-widened rejection test)",
        explain=_ears_line,
        reason="ears",
        reason_word="EARS",
        reason_meaning=(
            "lossless rejects it, but u < p(d) / q(d) + beta (1 - max p) (EARS; at T = 0 the project's reading: "
            "p(d) / q(d) + beta (1 - max p) >= 1)"
        ),
    ),
}
