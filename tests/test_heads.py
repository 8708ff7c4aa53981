"""The K-path head: masks, the dense and sparse-complement products, and the model's own head (TargetHead)."""

import functools

import pytest
import torch
import torch.nn.functional as F
from device_checks import DeviceMixing

from dropmatch import heads
from dropmatch.config import RANGES
from dropmatch.heads import (
    POSITION_RADIX,
    ROUND_RADIX,
    TargetHead,
    dropout_masks,
    js_divergence,
    pad_vocab,
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


# Device mixing without a GPU: the meta device computes shapes without data, and an op that mixes a meta tensor
# with a CPU one raises, as one mixing a CUDA tensor with a CPU one does.
def test_the_dense_paths_stay_on_the_inputs_device():
    """path_logits, TargetHead, pad_vocab and js_divergence on meta inputs: every result on meta, shaped."""
    module = torch.nn.Linear(16, 50, bias=True, device="meta")
    head = TargetHead(module=module, softcap=30.0, divide=2.0, multiply=0.5)
    h, masks = torch.empty(3, 16, device="meta"), torch.empty(3, 5, 16, dtype=torch.bool, device="meta")
    logits = path_logits(h, head, masks, 0.3)
    assert logits.device.type == "meta" and logits.shape == (3, 5, 50) and logits.dtype == torch.float32
    cpu_masks = dropout_masks(3, 5, 16, 0.3, torch.Generator().manual_seed(0))  # drawn on the CPU, moved to h's
    assert path_logits(h, head, cpu_masks, 0.3).device.type == "meta"
    wide = pad_vocab(logits, 64)
    assert wide.device.type == "meta" and wide.shape == (3, 5, 64)
    assert js_divergence(wide, wide).device.type == "meta"


def test_the_sparse_complement_makes_its_offsets_on_the_inputs_device():
    """`nonzero` needs data, so not on meta: run on the CPU and check that every tensor it makes is placed."""
    g = torch.Generator().manual_seed(0)
    W, h = torch.randn(50, 16, generator=g), torch.randn(3, 16, generator=g)
    masks = dropout_masks(3, 5, 16, 0.3, g)
    with DeviceMixing(sparse_complement_logits) as mixing:
        sparse_complement_logits(h @ W.T, h, W.T.contiguous(), masks, 0.3)
    assert [str(c) for c in mixing.calls] == []


def test_the_device_check_sees_a_tensor_made_on_the_default_device():
    """The check itself: a factory without device= is recorded, one with it is not, and only in the code asked."""

    @torch.inference_mode()  # a decorated function is checked by its own body
    def unplaced(x: torch.Tensor) -> torch.Tensor:
        return x + torch.zeros(x.shape) + torch.ones(x.shape, device=x.device)

    with DeviceMixing(unplaced) as mixing:
        unplaced(torch.ones(2))
        torch.zeros(2)  # not the code under test
    assert [c.what for c in mixing.calls] == ["torch.zeros without device="]
    with DeviceMixing(heads) as mixing:  # a module: any code in its file
        dropout_masks(1, 1, 4, 0.5, torch.Generator())  # the masks draw on the CPU generator (callers move them)
    assert [c.function for c in mixing.calls] == ["dropout_masks"]

    def to_numpy(x: torch.Tensor):
        return x.numpy(), x.cpu().numpy(), x.to("cpu").numpy()

    with DeviceMixing(to_numpy) as mixing:
        to_numpy(torch.ones(2) * 2)
    assert [c.what for c in mixing.calls] == [".numpy() without .cpu()"]
