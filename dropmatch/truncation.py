"""Truncation sampling of the target alone: top-k and min-p, as transformers' logits warpers define them.

The quality reference a relaxed rule must beat when sampling (arXiv 2607.26627: truncation-like relaxed rules
can score below simply truncation-sampling the target). Both act on p_T = softmax(z / T), temperature first, as
transformers orders its processors (Temperature -> TopK -> MinP), and the kept tokens are renormalised:

- top-k (`TopKLogitsWarper`): keep v with z_T(v) >= the k-th largest z_T (ties at the k-th value kept); k = 1 is
  greedy (the argmax and any token tied with it); larger k truncates less.
- min-p (`MinPLogitsWarper`): drop v with p_T(v) < min_p * max p_T, the top token always kept; min_p = 0 is plain
  target sampling, min_p = 1 keeps the argmax and its ties.

At T = 0 the decoder takes the argmax, as for every method: truncation sampling is then greedy target decoding.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from dropmatch.config import TRUNCATION_KNOBS


def top_k(p: torch.Tensor, k: float) -> torch.Tensor:
    """Keep p_T(v) >= the k-th largest p_T (ties kept; softmax is monotone, so the logits' order)."""
    kth = p.topk(min(int(k), p.shape[-1]), dim=-1).values[..., -1:]
    return p >= kth


def min_p(p: torch.Tensor, fraction: float) -> torch.Tensor:
    """Keep p_T(v) >= min_p * max p_T (the top token always kept)."""
    return p >= fraction * p.max(-1, keepdim=True).values


TRUNCATIONS: dict[str, Callable[[torch.Tensor, float], torch.Tensor]] = {"top-k-sampling": top_k, "min-p": min_p}
assert set(TRUNCATIONS) == set(TRUNCATION_KNOBS)


def truncate(p: torch.Tensor, name: str, knob: float) -> torch.Tensor:
    """The truncated, renormalised target distribution: p_T on the kept tokens, divided by their mass."""
    kept = p * TRUNCATIONS[name](p, knob)
    return kept / kept.sum(-1, keepdim=True)
