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


@pytest.mark.parametrize("head_kind", ["plain linear", "TargetHead", "TargetHead with a bias"])
def test_a_bf16_head_gets_the_dropout_scale_in_float32(head_kind):
    """1 / (1 - p_drop) multiplies the head's product in float32, not h in the head's dtype: in bf16 1 / 0.7 rounds
    to 1.4297 (every path's logits 0.08% too large) and each scaled unit rounds once more. With every unit kept, the
    paths are the unmasked logits times 1 / 0.7 (a bias added unscaled) to float32 rounding."""
    g = torch.Generator().manual_seed(0)
    W, h = torch.randn(50, 64, generator=g).bfloat16(), torch.randn(3, 64, generator=g).bfloat16()
    if head_kind == "plain linear":
        head, bias = linear(W), torch.zeros(50)
    else:
        module = torch.nn.Linear(64, 50, bias=head_kind.endswith("bias"), dtype=torch.bfloat16)
        with torch.no_grad():
            module.weight.copy_(W)
            if module.bias is not None:
                module.bias.copy_(torch.randn(50, generator=g))
        head, bias = TargetHead(module=module), (module.bias if module.bias is not None else torch.zeros(50)).float()
    paths = path_logits(h, head, torch.ones(3, 5, 64, dtype=torch.bool), 0.3)  # [3, 5, 50]
    unmasked = head(h).float()  # [3, 50]
    expected = ((unmasked - bias) / 0.7 + bias)[:, None, :].expand_as(paths)
    torch.testing.assert_close(paths, expected, rtol=1e-6, atol=1e-6)


def test_the_paths_are_the_head_on_the_scaled_masked_state():
    """head(h * m / (1 - p_drop)) by its definition, for a head with a bias and every post-processing step (the scale
    is applied past the module, so the bias must stay unscaled and the softcap come after it); at p_drop 0 the paths
    are the unmasked head, to float rounding: the [P, K, H] product may take another matrix kernel than the [P, H]
    one (on an AMD EPYC they part in the seventh digit), which is why decoding never reads paths at p_drop 0."""
    g = torch.Generator().manual_seed(0)
    module = torch.nn.Linear(16, 50, bias=True)
    with torch.no_grad():
        module.weight.copy_(torch.randn(50, 16, generator=g))
        module.bias.copy_(torch.randn(50, generator=g))
    head = TargetHead(module=module, softcap=3.0, divide=2.0, multiply=0.5)
    h, masks = torch.randn(3, 16, generator=g), dropout_masks(3, 5, 16, 0.3, g)
    with torch.no_grad():
        paths = path_logits(h, head, masks, 0.3)
        torch.testing.assert_close(paths, head(h[:, None, :] * masks / 0.7), rtol=1e-5, atol=1e-5)
        kept = torch.ones(3, 5, 16, dtype=torch.bool)
        unmasked = head(h)[:, None, :].expand(3, 5, 50)
        torch.testing.assert_close(path_logits(h, head, kept, 0.0), unmasked, rtol=1e-6, atol=1e-6)
