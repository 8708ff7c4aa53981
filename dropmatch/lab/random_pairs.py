"""Random-weight pairs shaped as real ones, built on a device with no model files: true costs, not true acceptance.

The embedded pair's shapes (Qwen2.5-Coder 1.5B target, 0.5B draft, as its converted configs have them: untied heads,
each GGUF file carries its own output head), a 7B target's, and tiny ones for a CPU; a byte-level tokenizer built in
memory; and a small noisy pair (the draft is the target plus weight noise) whose runs mostly agree, for equality
checks on a device. `dropmatch.lab.gpucheck` measures with them.
"""

from __future__ import annotations

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from dropmatch.models import ModelPair, end_token_ids

# The embedded pair's shapes, as its converted configs have them (untied heads: each GGUF file carries its own output
# head), and the Qwen2.5-7B shape for the head-share section.
QWEN_COMMON = {"max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1e6, "tie_word_embeddings": False}
TARGET_1_5B = {
    "hidden_size": 1536,
    "intermediate_size": 8960,
    "num_hidden_layers": 28,
    "num_attention_heads": 12,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
}
DRAFT_0_5B = {
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
}
TARGET_7B = {
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "vocab_size": 152064,
}
# --tiny: every shape small enough for a CPU; the equality pair is this small in both runs
TINY_COMMON = {**QWEN_COMMON, "max_position_embeddings": 512}
TINY_TARGET = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 512,
}
TINY_DRAFT = {**TINY_TARGET, "hidden_size": 32, "intermediate_size": 64}
TINY_BIG = {**TINY_TARGET, "hidden_size": 96, "intermediate_size": 192, "vocab_size": 640}
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def byte_tokenizer() -> PreTrainedTokenizerFast:
    """One id per UTF-8 byte (256 ids) and the end tokens after them, built in memory; ids past them (a random
    model emits those) decode to nothing."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    core = Tokenizer(models.BPE(vocab={ch: i for i, ch in enumerate(sorted(alphabet, key=ord))}, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token=SPECIALS[2], pad_token=SPECIALS[0])
    tok.add_special_tokens({"additional_special_tokens": SPECIALS[1:2]})
    return tok


def random_model(shape: dict, common: dict, dtype: torch.dtype, device: str, seed: int) -> Qwen2ForCausalLM:
    """A random-weight Qwen2 model of `shape`, built on the device in `dtype` (no copy through the CPU)."""
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen2ForCausalLM._from_config(Qwen2Config(**common, **shape), dtype=dtype)
    return model.eval()


def noisy_pair(device: str, noise: float = 0.005, dtype: torch.dtype = torch.float32) -> ModelPair:
    """A small pair whose draft is the target plus weight noise (they mostly agree, with rejections and relaxed
    accepts), built in float32 on the CPU from one seed (the same weights on every machine), moved to the device in
    `dtype`."""
    tokenizer = byte_tokenizer()
    target = random_model(TINY_TARGET, TINY_COMMON, torch.float32, "cpu", seed=0)
    draft = random_model(TINY_TARGET, TINY_COMMON, torch.float32, "cpu", seed=1)
    draft.load_state_dict(target.state_dict())
    generator = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for param in draft.parameters():
            param.add_(noise * torch.randn(param.shape, generator=generator))
    return ModelPair(
        target.to(device, dtype),
        draft.to(device, dtype),
        tokenizer,
        "noisy-target",
        "noisy-draft",
        end_token_ids(tokenizer),
    )


def shaped_pair(target: dict, draft: dict, common: dict, device: str) -> ModelPair:
    """A bf16 random-weight pair of the given shapes on the device. No end tokens: every run reaches its length."""
    return ModelPair(
        random_model(target, common, torch.bfloat16, device, seed=0),
        random_model(draft, common, torch.bfloat16, device, seed=1),
        byte_tokenizer(),
        f"random {target['hidden_size']}x{target['num_hidden_layers']}",
        f"random {draft['hidden_size']}x{draft['num_hidden_layers']}",
        frozenset(),
    )
