"""Shared fixtures: a tiny random-weight pair (fast, deterministic) and the real embedded pair (slow, once)."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(2)


def tiny_models(vocab: int, noise: float = 0.002, seed: int = 0):
    """A random Qwen2 target and a draft that is the target with weight noise, so they mostly agree."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    target = Qwen2ForCausalLM(config).eval()
    draft = Qwen2ForCausalLM(config).eval()
    draft.load_state_dict(target.state_dict())
    with torch.no_grad():
        for param in draft.parameters():
            param.add_(noise * torch.randn_like(param))
    return target, draft


@pytest.fixture(scope="session")
def tokenizer():
    from transformers import AutoTokenizer

    from dropmatch import embedded

    return AutoTokenizer.from_pretrained(str(embedded.ensure_converted(embedded.DRAFT)))


@pytest.fixture(scope="session")
def tiny_pair(tokenizer):
    from dropmatch.models import ModelPair

    target, draft = tiny_models(len(tokenizer))
    return ModelPair(target, draft, tokenizer, "tiny-target", "tiny-draft", frozenset({tokenizer.eos_token_id}))


@pytest.fixture(scope="session")
def real_pair_f32():
    """The embedded pair in float32, the mode for exactness tests."""
    from dropmatch.models import load_pair

    return load_pair(dtype="float32", device="cpu")
