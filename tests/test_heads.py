"""The K-path head: masks, the dense and sparse-complement products, and the model's own head (TargetHead)."""

import functools

import pytest
import torch
import torch.nn.functional as F

from dropmatch.heads import dropout_masks, path_logits, sparse_complement_logits


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
