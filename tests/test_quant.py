"""The lean draft: int8 and int4 weight-only layers, and speculative decoding with them staying lossless."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dropmatch import metrics
from dropmatch.config import DecodeConfig
from dropmatch.decode import generate
from dropmatch.models import ModelPair, load_pair
from dropmatch.quant import (
    INT4_GROUP,
    Int4Linear,
    Int8Linear,
    check_lean_device,
    dequantised_product,
    prune_head,
    quantize,
    quantize_int4,
    quantize_int8,
    quantize_target_int4,
)

PROMPTS = ["def add(a, b):", "The quick brown fox"]


def test_int8_linear_is_exact_on_weights_its_grid_holds():
    scale = torch.tensor([0.5, 0.25, 2.0])
    q = torch.tensor([[127, -3, 0, 64], [-127, 1, 2, 3], [5, -5, 127, -1]])
    linear = nn.Linear(4, 3, bias=True)
    with torch.no_grad():
        linear.weight.copy_(q * scale[:, None])  # every row's largest |w| is 127 steps: the grid is exact
        linear.bias.copy_(torch.tensor([1.0, -1.0, 0.5]))
    lean = Int8Linear.of(linear)
    assert lean.weight.dtype == torch.int8 and torch.equal(lean.weight, q.to(torch.int8))
    x = torch.randn(2, 5, 4)
    assert torch.allclose(lean(x), linear(x), atol=1e-5)


def test_int8_linear_error_is_bounded_by_half_a_step():
    torch.manual_seed(0)
    linear = nn.Linear(64, 32, bias=False)
    lean = Int8Linear.of(linear)
    step = linear.weight.abs().amax(1) / 127  # [out]
    restored = lean.weight.float() * lean.scales[:, None]
    assert ((restored - linear.weight).abs() <= step[:, None] / 2 + 1e-7).all()


def test_quantize_replaces_every_linear_and_refuses_an_unknown_kind(tiny_pair):
    from tiny_pair import tiny_models

    _, draft = tiny_models(len(tiny_pair.tokenizer))
    linears = sum(isinstance(m, nn.Linear) for m in draft.modules())
    assert quantize_int8(draft) == linears > 0
    assert not any(isinstance(m, nn.Linear) for m in draft.modules())
    assert draft.get_output_embeddings().weight.dtype == torch.int8
    with pytest.raises(ValueError, match="draft quantisation must be one of none, int8, int4"):
        quantize(draft, "int2")


@pytest.fixture(scope="module")
def lean_pair(tiny_pair):
    """The tiny pair with an int8 copy of its draft (the target untouched)."""
    from tiny_pair import tiny_models

    target, draft = tiny_models(len(tiny_pair.tokenizer))
    return ModelPair(target, quantize(draft, "int8"), tiny_pair.tokenizer, "t", "d", frozenset(), "int8")


@pytest.mark.parametrize("prompt", PROMPTS)
def test_lossless_with_the_int8_draft_equals_target_greedy(lean_pair, prompt):
    target = generate(lean_pair, prompt, DecodeConfig(method="target", max_new_tokens=24))
    lossless = generate(lean_pair, prompt, DecodeConfig(method="lossless", max_new_tokens=24))
    assert lossless.token_ids == target.token_ids
    assert lossless.config["draft_quant"] == "int8" and target.config["draft_quant"] is None  # recorded


@pytest.mark.parametrize("prompt", PROMPTS)
def test_p_drop_zero_equals_lossless_with_the_int8_draft(lean_pair, prompt):
    """T 0 (greedy), the int8 draft: p_drop 0 relaxes nothing."""
    lossless = generate(lean_pair, prompt, DecodeConfig(method="lossless", max_new_tokens=24))
    dm = generate(lean_pair, prompt, DecodeConfig(method="dropmatch", p_drop=0.0, max_new_tokens=24))
    assert dm.token_ids == lossless.token_ids


def test_a_config_asking_for_another_draft_is_refused(lean_pair, tiny_pair):
    asked = "asks for draft_quant int8, but the pair's draft has none; load the pair with draft_quant='int8'"
    with pytest.raises(ValueError, match=asked):
        generate(tiny_pair, PROMPTS[0], DecodeConfig(method="lossless", draft_quant="int8"))
    with pytest.raises(ValueError, match="draft_quant must be one of"):
        DecodeConfig(draft_quant="int3")
    assert generate(lean_pair, PROMPTS[0], DecodeConfig(method="lossless", draft_quant="int8", max_new_tokens=4))


def test_a_pruned_head_scores_only_the_kept_tokens(tiny_pair):
    from tiny_pair import tiny_models

    from dropmatch.quant import PrunedHead, frequent_ids

    tok = tiny_pair.tokenizer
    kept = frequent_ids(tok, 40)
    assert kept[:40].tolist() == list(range(40)) and set(tok.added_tokens_decoder) <= set(kept.tolist())
    for quant in ("none", "int8"):
        _, draft = tiny_models(len(tok))
        full = quantize(draft, quant).get_output_embeddings()
        pruned = PrunedHead(full, kept)
        h = torch.randn(3, full.in_features)
        z, zp = full(h), pruned(h)
        assert torch.equal(zp[:, kept], z[:, kept])  # the kept logits are the head's own
        outside = torch.ones(z.shape[-1], dtype=torch.bool)
        outside[kept] = False
        assert torch.isneginf(zp[:, outside]).all()  # probability 0 in q


@pytest.mark.parametrize("prompt", PROMPTS)
def test_lossless_with_a_pruned_int8_draft_equals_target_greedy(tiny_pair, prompt):
    from tiny_pair import tiny_models

    from dropmatch.quant import frequent_ids, prune_head

    target, draft = tiny_models(len(tiny_pair.tokenizer))
    lean = prune_head(quantize(draft, "int8"), tiny_pair.tokenizer, 30)
    pair = ModelPair(target, lean, tiny_pair.tokenizer, "t", "d", frozenset(), "int8", 30)
    want = generate(pair, prompt, DecodeConfig(method="target", max_new_tokens=24)).token_ids
    trace = generate(pair, prompt, DecodeConfig(method="lossless", max_new_tokens=24, evidence=True))
    assert trace.token_ids == want and trace.config["draft_vocab"] == 30
    drafted = [r.token_id for r in trace.records if r.kind == "draft"]
    kept = set(frequent_ids(tiny_pair.tokenizer, 30).tolist())
    assert drafted and set(drafted) <= kept  # the draft never proposes a pruned token
    with pytest.raises(ValueError, match=r"draft vocabulary must be an integer in \[1, "):
        prune_head(tiny_models(len(tiny_pair.tokenizer))[1], tiny_pair.tokenizer, 10**9)


def test_the_fallback_product_equals_the_int8_kernel():
    torch.manual_seed(1)
    lean = Int8Linear.of(nn.Linear(48, 24, bias=False))
    x = torch.randn(5, 48)
    kernel = torch._weight_int8pack_mm(x, lean.weight, lean.scales)
    assert torch.allclose(dequantised_product(x, lean.weight, lean.scales), kernel, atol=1e-4)


def test_the_int8_layer_answers_in_its_inputs_dtype_whatever_the_kernel_returns(monkeypatch):
    """The early CUDA int8 kernel returns float32 for bf16 inputs; the layer casts back, so the draft stays bf16."""
    torch.manual_seed(2)
    lean = Int8Linear.of(nn.Linear(32, 16, bias=True).to(torch.bfloat16))
    x = torch.randn(3, 32, dtype=torch.bfloat16)
    assert lean(x).dtype == torch.bfloat16  # the CPU kernel itself answers in bf16
    kernel = torch._weight_int8pack_mm

    def in_float32(*args):  # as CUDA's kernel does
        return kernel(*args).float()

    monkeypatch.setattr(torch, "_weight_int8pack_mm", in_float32)
    y = lean(x)
    assert y.dtype == torch.bfloat16
    assert torch.equal(y, kernel(x, lean.weight, lean.scales) + lean.bias)  # the same numbers, in bf16


def int4_grid(out: int, inp: int) -> torch.Tensor:
    """Weights that int4 holds exactly: per group of inputs, its minimum plus whole steps 0..15 (both ends used)."""
    torch.manual_seed(1)
    groups = inp // INT4_GROUP
    low, step = torch.randn(out, groups, 1), torch.rand(out, groups, 1) + 0.1
    q = torch.randint(0, 16, (out, groups, INT4_GROUP)).float()
    q[..., 0], q[..., 1] = 0, 15
    return (low + q * step).reshape(out, inp)


def test_int4_linear_is_exact_on_weights_its_grid_holds():
    w = int4_grid(16, 64)
    linear = nn.Linear(64, 16, bias=True)
    with torch.no_grad():
        linear.weight.copy_(w)
    lean = Int4Linear.of(linear)
    x = torch.randn(3, 64)
    assert torch.allclose(lean(x), linear(x), atol=1e-4)


def test_int4_linear_error_is_bounded_by_half_a_step():
    torch.manual_seed(2)
    linear = nn.Linear(64, 16, bias=False)
    lean = Int4Linear.of(linear)
    restored = lean(torch.eye(64)).T  # row o: the weights the kernel multiplies by  # [16, 64]
    groups = linear.weight.detach().reshape(16, 2, INT4_GROUP)
    step = (groups.amax(-1) - groups.amin(-1)) / 15
    error = (restored - linear.weight.detach()).abs().reshape(16, 2, INT4_GROUP)
    assert (error <= step[..., None] / 2 + 1e-5).all() and error.max() > 0


def test_int4_replaces_the_layers_its_kernel_takes_on_a_cpu_only(tiny_pair):
    from tiny_pair import tiny_models

    _, draft = tiny_models(len(tiny_pair.tokenizer))
    fitting = [m for m in draft.modules() if isinstance(m, nn.Linear) and Int4Linear.fits(m)]
    assert quantize_int4(draft) == len(fitting) > 0
    assert all(Int4Linear.fits(m) is False for m in draft.modules() if isinstance(m, nn.Linear))  # the rest stay
    with pytest.raises(ValueError, match="CPU only"):
        quantize_int4(tiny_models(len(tiny_pair.tokenizer))[1].to("meta"))
    int4_head = tiny_models(len(tiny_pair.tokenizer))[1]
    int4_head.set_output_embeddings(Int4Linear.of(nn.Linear(32, 16 * (len(tiny_pair.tokenizer) // 16 + 1))))
    with pytest.raises(ValueError, match="not int4"):
        prune_head(int4_head, tiny_pair.tokenizer, 30)


@pytest.mark.parametrize("prompt", PROMPTS)
def test_lossless_with_the_int4_draft_equals_target_greedy(tiny_pair, prompt):
    from tiny_pair import tiny_models

    target, draft = tiny_models(len(tiny_pair.tokenizer))
    lean = ModelPair(target, quantize(draft, "int4"), tiny_pair.tokenizer, "t", "d", frozenset(), "int4")
    cfg = {"max_new_tokens": 24}
    reference = generate(lean, prompt, DecodeConfig(method="target", **cfg)).token_ids
    lossless = generate(lean, prompt, DecodeConfig(method="lossless", draft_quant="int4", **cfg))
    dm = generate(lean, prompt, DecodeConfig(method="dropmatch", p_drop=0.0, draft_quant="int4", **cfg))
    assert lossless.token_ids == reference == dm.token_ids and lossless.config["draft_quant"] == "int4"
    assert metrics.compute(lossless)["tau"] > 1.5  # the int4 draft still speculates


@pytest.mark.parametrize(
    "kind, device, message",
    [
        ("int8", "mps", "the int8 draft runs on the CPU or CUDA only"),
        ("int8", "xpu", "the int8 draft runs on the CPU or CUDA only"),
        ("int4", "cuda", "the int4 draft runs on the CPU only"),
        ("int4", "cuda:1", "the int4 draft runs on the CPU only"),
    ],
)
def test_a_lean_draft_is_refused_where_torch_has_no_kernel_for_its_packing(kind, device, message):
    """Checked before anything loads (no GPU needed): the message says to use the stock draft there."""
    with pytest.raises(ValueError, match=message) as err:
        load_pair("t", "d", device=device, draft_quant=kind)
    assert "use the stock draft (draft_quant='none')" in str(err.value)
    check_lean_device("none", device)  # the stock draft runs anywhere
    with pytest.raises(ValueError, match="unknown device 'gpu'; expected cpu, cuda or cuda:N"):
        check_lean_device(kind, "gpu")
    for fine in ("cpu", *(("cuda", "cuda:0") if kind == "int8" else ())):  # torch's int8 kernel has a CUDA form
        check_lean_device(kind, fine)


@pytest.mark.parametrize("kind", ["int8", "int4"])
def test_an_offloaded_draft_is_refused_not_quantised_from_meta_weights(tiny_pair, kind):
    """accelerate's offload (device_map with "cpu" or "disk" beside a GPU) leaves the weights on meta."""
    from tiny_pair import tiny_models

    offloaded = tiny_models(len(tiny_pair.tokenizer))[1].to("meta")
    offloaded.hf_device_map = {"model": "cpu", "lm_head": "disk"}
    with pytest.raises(ValueError, match="offloaded") as err:
        quantize(offloaded, kind)
    assert "use the stock draft (draft_quant='none')" in str(err.value)
    assert not any(isinstance(m, (Int8Linear, Int4Linear)) for m in offloaded.modules())  # left as it was
    assert quantize(offloaded, "none") is offloaded  # the stock draft is not quantised: nothing to refuse


def test_the_int4_target_keeps_its_head_dense_and_only_the_layers_asked(tiny_pair):
    from tiny_pair import tiny_models

    target, _ = tiny_models(len(tiny_pair.tokenizer))
    head = target.get_output_embeddings()
    only = {"model.layers.0.mlp.up_proj", "model.layers.0.self_attn.q_proj"}
    assert quantize_target_int4(target, only) == 2
    assert target.get_output_embeddings() is head and isinstance(head, nn.Linear)
    swapped = {name for name, m in target.named_modules() if isinstance(m, Int4Linear)}
    assert swapped == only
    body = [m for m in tiny_models(len(tiny_pair.tokenizer))[0].modules() if isinstance(m, nn.Linear)]
    assert quantize_target_int4(tiny_models(len(tiny_pair.tokenizer))[0]) == len(body) - 1  # all but the head


@pytest.mark.parametrize("prompt", PROMPTS)
def test_lossless_with_the_int4_target_equals_its_own_greedy_decoding(tiny_pair, prompt):
    """The 4-bit target is another model: lossless equals its own target-only decoding, and p_drop 0 equals both."""
    from tiny_pair import tiny_models

    target, draft = tiny_models(len(tiny_pair.tokenizer))
    quantize_target_int4(target)
    pair = ModelPair(target, draft, tiny_pair.tokenizer, "t", "d", frozenset(), target_quant="int4")
    cfg = {"max_new_tokens": 24}
    reference = generate(pair, prompt, DecodeConfig(method="target", **cfg)).token_ids
    lossless = generate(pair, prompt, DecodeConfig(method="lossless", **cfg))
    dm = generate(pair, prompt, DecodeConfig(method="dropmatch", p_drop=0.0, evidence=True, **cfg))
    assert lossless.token_ids == reference == dm.token_ids
    assert lossless.environment["target_quant"] == "int4"


def test_the_int4_target_is_refused_off_the_cpu_and_on_another_engine(tiny_pair):
    with pytest.raises(ValueError, match=r"the int4 target runs on the CPU only.*target_quant='none'"):
        load_pair("t", "d", device="cuda", target_quant="int4")
    with pytest.raises(ValueError, match="target quantisation must be one of none, int4; got 'int8'"):
        load_pair("t", "d", target_quant="int8")
    with pytest.raises(ValueError, match="torch-engine option"):
        load_pair(device="cpu", target_quant="int4", engine="llama.cpp")
    from tiny_pair import tiny_models

    with pytest.raises(ValueError, match="CPU only"):
        quantize_target_int4(tiny_models(len(tiny_pair.tokenizer))[0].to("meta"))


@pytest.mark.slow
def test_the_embedded_targets_4_bit_layers_are_the_ones_its_gguf_holds_in_q4_k():
    from dropmatch import embedded
    from dropmatch.quant import q4_layers

    if not embedded.available():
        pytest.skip("the embedded pair is not installed")
    names = q4_layers(embedded.gguf_paths()[0])
    # 28 blocks x 7 linear layers, less the 28 that Q4_K_M keeps in Q6_K (half of attn_v and of ffn_down)
    assert len(names) == 168
    assert sum(".self_attn.v_proj" in n for n in names) == sum(".mlp.down_proj" in n for n in names) == 14
