"""The K-path head: masks, the dense and sparse-complement products, and the model's own head (TargetHead)."""

import functools

import pytest
import torch
import torch.nn.functional as F

from dropmatch.config import RANGES
from dropmatch.heads import (
    POSITION_RADIX,
    ROUND_RADIX,
    dropout_masks,
    path_logits,
    position_generator,
    position_seed,
    sparse_complement_logits,
)


def linear(W: torch.Tensor):
    return functools.partial(F.linear, weight=W)


def test_sparse_complement_equals_dense():
    g = torch.Generator().manual_seed(0)
    W, h = torch.randn(50, 16, generator=g), torch.randn(3, 16, generator=g)
    masks = dropout_masks(3, 5, 16, 0.3, g)
    dense = path_logits(h, linear(W), masks, 0.3)  # [3, 5, 50]
    sparse = sparse_complement_logits(h @ W.T, h, W.T.contiguous(), masks, 0.3)
    assert dense.shape == (3, 5, 50)
    assert torch.allclose(dense, sparse, atol=1e-4)
    assert not torch.allclose(dense[:, 0], dense[:, 1])  # paths differ


def test_inverted_dropout_keeps_the_expected_logits():
    g = torch.Generator().manual_seed(0)
    W, h = torch.randn(8, 64, generator=g), torch.randn(1, 64, generator=g)
    masks = dropout_masks(1, 4000, 64, 0.3, g)
    assert masks.float().mean().item() == pytest.approx(0.7, abs=0.01)
    assert torch.allclose(path_logits(h, linear(W), masks, 0.3).mean(1), h @ W.T, atol=0.3)


def test_mask_seeds_are_distinct_per_seed_round_and_position_within_the_ranges():
    """Each radix exceeds what it multiplies can reach (a position < gamma, a round < max_new_tokens), so the seed
    mix cannot collide; the largest seed fits manual_seed's 64 bits."""
    assert RANGES["gamma"].hi <= POSITION_RADIX and RANGES["max_new_tokens"].hi <= ROUND_RADIX
    top_seed, top_round, top_pos = RANGES["seed"].hi, RANGES["max_new_tokens"].hi - 1, RANGES["gamma"].hi - 1
    assert position_generator(top_seed, top_round, top_pos).initial_seed() == position_seed(
        top_seed, top_round, top_pos
    )
    assert position_seed(top_seed, top_round, top_pos) < 2**64
    seeds = [(s, r, j) for s in (0, 1, top_seed) for r in (0, 1, top_round) for j in range(top_pos + 1)]
    assert len({position_seed(*x) for x in seeds}) == len(seeds)
    assert position_seed(0, 1, 0) != position_seed(0, 0, POSITION_RADIX - 1)  # a round never reads as a position
    assert position_seed(1, 0, 0) != position_seed(0, top_round, top_pos)  # nor a seed as a round
