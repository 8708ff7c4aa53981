"""Heads of any architecture: tiny random models of families that post-process their logits or slide a window.

On each family the recorded p at every verified position equals the softmax of the model's own forward
logits there (float32), lossless equals the model's own greedy decoding (a full forward per token, no
cache), and DropMatch at p_drop 0 equals lossless. A family whose logits the decoder cannot reproduce is
refused at load time; a pair split across devices by accelerate (the head offloaded to disk) decodes the
same as the whole model.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from tiny_pair import byte_tokenizer, tiny_models
from transformers import (
    AutoModelForCausalLM,
    Gemma2Config,
    Gemma2ForCausalLM,
    GraniteConfig,
    GraniteForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
)

from dropmatch.config import DecodeConfig
from dropmatch.decode import generate
from dropmatch.models import ModelPair, check_head, encode_prompt

PROMPT = "def fib(n): return n if n < 2 else"  # 34 tokens: longer than the sliding windows below
N = 24


def with_head_bias(model: LlamaForCausalLM, seed: int) -> LlamaForCausalLM:
    """A Llama whose LM head has a bias (as GPT-J or Phi-2 heads do): greedy output depends on it."""
    old = model.lm_head
    model.lm_head = torch.nn.Linear(old.in_features, old.out_features, bias=True)
    with torch.no_grad():
        model.lm_head.weight.copy_(old.weight)
        model.lm_head.bias.copy_(torch.randn(old.out_features, generator=torch.Generator().manual_seed(seed)))
    return model


FAMILIES = {
    "gemma2 (soft-capping, sliding window 8)": (
        Gemma2Config,
        Gemma2ForCausalLM,
        dict(head_dim=8, sliding_window=8, final_logit_softcapping=2.0, query_pre_attn_scalar=8),
    ),
    "granite (logits scaling)": (GraniteConfig, GraniteForCausalLM, dict(logits_scaling=0.25)),
    "mistral (sliding window 8)": (MistralConfig, MistralForCausalLM, dict(sliding_window=8)),
    "llama (head bias)": (LlamaConfig, LlamaForCausalLM, {}),
}


def family_pair(name: str, noise: float = 0.01) -> ModelPair:
    config_cls, model_cls, extra = FAMILIES[name]
    tok = byte_tokenizer()
    target, draft = tiny_models(
        len(tok), noise, config_cls=config_cls, model_cls=model_cls, initializer_range=0.2, **extra
    )
    if "bias" in name:
        target, draft = with_head_bias(target, 0), with_head_bias(draft, 0)
    return ModelPair(target, draft, tok, name, name, frozenset())  # no end token: every run is N tokens long


@torch.inference_mode()
def own_greedy(model, ids: list[int], n: int) -> list[int]:
    """The model's own greedy decoding: one full forward per token, no cache."""
    out = list(ids)
    for _ in range(n):
        out.append(int(model(torch.tensor([out])).logits[0, -1].argmax()))
    return out[len(ids) :]


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request):
    return family_pair(request.param)


def test_recorded_p_is_the_models_own_softmax(family):
    trace = generate(family, PROMPT, DecodeConfig(method="dropmatch", max_new_tokens=N, evidence=True))
    ids = encode_prompt(family.tokenizer, PROMPT) + trace.token_ids
    with torch.inference_mode():
        own = torch.softmax(family.target(torch.tensor([ids])).logits[0].float(), -1)  # [len, V]
    start, before, checked = len(ids) - len(trace.token_ids), 0, 0
    for t in range(len(trace.rounds)):
        records = trace.round_records(t)
        for rec in records:
            if rec.emitted or rec.reason == "rejected":  # its context is the emitted prefix
                at = start + before + rec.pos - 2  # the logits that predict output index before + pos - 1
                assert rec.p == pytest.approx(float(own[at, rec.token_id]), abs=1e-5), (t, rec.pos)
                checked += 1
        before += sum(r.emitted for r in records)
    assert checked >= N


def test_lossless_equals_own_greedy_and_p_drop_zero_equals_lossless(family):
    """T 0 (greedy), on every architecture family."""
    ids = encode_prompt(family.tokenizer, PROMPT)
    lossless = generate(family, PROMPT, DecodeConfig(method="lossless", max_new_tokens=N))
    assert lossless.token_ids == own_greedy(family.target, ids, N)[: len(lossless.token_ids)]
    assert any(r.reason == "rejected" for r in lossless.records)  # the draft disagrees: the test has teeth
    dm = generate(family, PROMPT, DecodeConfig(method="dropmatch", p_drop=0.0, max_new_tokens=N))
    assert dm.token_ids == lossless.token_ids


def test_a_family_whose_logits_are_not_reproduced_is_refused():
    class Rescaled(LlamaForCausalLM):
        """A made-up family: its forward doubles the logits after the head, which TargetHead cannot know."""

        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            out.logits = out.logits * 2
            return out

    model, _ = tiny_models(len(byte_tokenizer()), config_cls=LlamaConfig, model_cls=Rescaled)
    with pytest.raises(ValueError, match="post-processes its logits"):
        check_head(model, "the target 'rescaled'")
    for name in FAMILIES:
        check_head(family_pair(name).target)  # the known families pass


def test_head_offloaded_by_a_device_map_decodes_like_the_whole_model(tmp_path):
    tok = byte_tokenizer()
    target, draft = tiny_models(
        len(tok), 0.01, config_cls=LlamaConfig, model_cls=LlamaForCausalLM, initializer_range=0.2
    )
    whole = ModelPair(target, draft, tok, "llama", "llama", frozenset())
    target.save_pretrained(tmp_path / "target")
    device_map = {"model": "cpu", "lm_head": "disk"}  # accelerate moves the head in through its hooks
    split = AutoModelForCausalLM.from_pretrained(
        tmp_path / "target", dtype=torch.float32, device_map=device_map, offload_folder=str(tmp_path / "offload")
    ).eval()
    assert split.lm_head.weight.device.type == "meta"  # nothing to multiply without the hooks
    check_head(split)
    pair = dataclasses.replace(whole, target=split)
    ids = encode_prompt(tok, PROMPT)
    lossless = generate(pair, PROMPT, DecodeConfig(method="lossless", max_new_tokens=N))
    assert lossless.token_ids == own_greedy(whole.target, ids, N)[: len(lossless.token_ids)]
    dm_split = generate(pair, PROMPT, DecodeConfig(method="dropmatch", max_new_tokens=N, evidence=True))
    dm_whole = generate(whole, PROMPT, DecodeConfig(method="dropmatch", max_new_tokens=N, evidence=True))
    assert dm_split.token_ids == dm_whole.token_ids
    assert [r.reason for r in dm_split.records] == [r.reason for r in dm_whole.records]
    split_js = [r.threshold for r in dm_split.records if r.threshold is not None]
    assert split_js and split_js == pytest.approx([r.threshold for r in dm_whole.records if r.threshold is not None])
