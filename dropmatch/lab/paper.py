"""The paper's reported numbers and the reference measurements on the embedded pair, quoted for comparison.

Nothing here is measured: the report sets each claim beside what a recorded sweep measured. The paper is
arXiv 2603.03333 (K 5, p_drop 0.3 throughout; 8B→70B and 4B→32B pairs on 4x A100 with vLLM). The reference
measurements come from a minimal first implementation on the embedded pair (docs/algorithm.md, "What the
paper reports").
"""

from __future__ import annotations

PAPER_COLUMN = "paper (arXiv 2603.03333)"
REFERENCE_COLUMN = "reference measurements (embedded pair)"
# Table 4: LM-head cost on a 70B head (hidden 8192, vocab 128256) on an A100, milliseconds.
HEAD_COST_MS = {"plain": 0.05, "K=5 naive": 0.17, "K=5 JS": 1.74}

# (claim, what the paper reports, what the reference implementation measured on the embedded pair)
PAPER = {
    "gain5": (
        "tau gain of DropMatch over lossless, draft length 5",
        "about +10%",
        "+43% (tau 3.6 → 5.1, 10 mixed prompts)",
    ),
    "gain_long": (
        "tau gain at the longest draft length",
        "L = 10: GSM8K 7.62 → 9.20 (+21%), MMLU 5.25 → 6.06 (+15%), IFEval 5.47 → 6.34 (+16%); "
        "Qwen3-4B/32B MMLU 6.48 → 8.60 (+33%)",
        "not measured",
    ),
    "speedup": (
        "speedup over lossless (tokens/s on the same prompt and γ)",
        "1.20x (GSM8K, L = 10), 1.33x (Qwen3 MMLU, L = 10); 4x A100, vLLM",
        "1.19x dense paths, 1.33x lazy paths (γ 5)",
    ),
    "score": ("task score, DropMatch vs lossless", "accuracy within about 1-2 points", "not measured"),
    "humaneval": ("tau gain on HumanEval", "almost nothing (the paths nearly always agree)", "not measured"),
    "gsm8k": (
        "GSM8K (Table 6; here: generated GSM8K-like word problems, not GSM8K): tau gain, the share of exact-match "
        "rejections relaxed, accuracy",
        "L = 10: tau 7.62 → 9.20 (+21%); L = 5: about 54% of exact-match rejections relaxed (from its taus); accuracy "
        "within about 1-2 points",
        "not measured",
    ),
    "korean": (
        "out of distribution (Korean prompts)",
        "SD + DropMatch keeps tau 5.24 where EAGLE3 falls to 1.46 (Korean MT-bench)",
        "not measured",
    ),
    "p_drop": (
        "tau over the p_drop sweep at K 5",
        "no end-to-end sweep; per-head quality falls sharply at p_drop 0.5",
        "4.3 / 5.0 / 5.1 / 5.3 / 5.3 for p_drop 0.1 … 0.5",
    ),
    "K": (
        "tau over the K sweep at p_drop 0.3",
        "no K ablation (K = 5 everywhere)",
        "4.0 / 4.9 / 5.1 / 5.3 for K 1 / 3 / 5 / 8",
    ),
    "criterion": (
        "tau per acceptance criterion at K 5, p_drop 0.3",
        "js+majority with a draft model; naive on top of EAGLE3 (up to 1.09x more); no criterion ablation",
        "not measured",
    ),
}


def acceptance_from_tau(tau: float, L: int) -> float:
    """The per-draft acceptance rate a that gives mean acceptance length tau at draft length L, under the i.i.d.
    model tau = (1 - a^(L+1)) / (1 - a) = 1 + a + ... + a^L (bonus token included), found by bisection: tau grows
    with a from 1 (a = 0) to L + 1 (a = 1)."""
    if not 1.0 <= tau <= L + 1:
        raise ValueError(f"tau must lie in [1, {L + 1}] at draft length {L}; got {tau!r}")
    lo, hi = 0.0, 1.0
    for _ in range(60):
        a = (lo + hi) / 2
        lo, hi = (a, hi) if sum(a**i for i in range(L + 1)) < tau else (lo, a)
    return (lo + hi) / 2


def relaxed_share(tau_lossless: float, tau_relaxed: float, L: int) -> float:
    """The share of exact-match rejections a relaxed rule turns into acceptances, from the two taus at draft length
    L: with a0, a1 the acceptance rates of `acceptance_from_tau`, a rejected draft (probability 1 - a0) is accepted
    with probability (a1 - a0) / (1 - a0). So the paper's Table 6 gives DropMatch's effect (PAPER_RELAX_SHARE)."""
    a0, a1 = acceptance_from_tau(tau_lossless, L), acceptance_from_tau(tau_relaxed, L)
    return (a1 - a0) / (1 - a0)
