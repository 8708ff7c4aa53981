"""A hermetic tiny pair for fast tests: random-weight Qwen2 models over a byte-level vocabulary built in memory.

No model files, no download: the tokenizer maps each UTF-8 byte to one id (256 ids) plus two end tokens and
the chat markers, and carries a ChatML template, so chat prompts and end-token handling work as on a real pair.
"""

from __future__ import annotations

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def byte_tokenizer() -> PreTrainedTokenizerFast:
    """One id per byte (256 ids) and the specials after them; nothing is read from disk."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet, key=lambda c: ord(c)))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.add_special_tokens({"additional_special_tokens": SPECIALS[1:2]})
    tok.chat_template = CHATML
    return tok


def tiny_models(
    vocab: int, noise: float = 0.002, seed: int = 0, config_cls=Qwen2Config, model_cls=Qwen2ForCausalLM, **extra
):
    """A random target and a draft that is the target with weight noise, so they mostly agree."""
    config = config_cls(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=False,
        **extra,
    )
    torch.manual_seed(seed)
    target = model_cls(config).eval()
    draft = model_cls(config).eval()
    draft.load_state_dict(target.state_dict())
    with torch.no_grad():
        for param in draft.parameters():
            param.add_(noise * torch.randn_like(param))
    return target, draft


def tiny_pair(noise: float = 0.002):
    """The pair the fast tests decode with; a larger `noise` makes the draft disagree more often."""
    from dropmatch.models import ModelPair, end_token_ids

    tokenizer = byte_tokenizer()
    target, draft = tiny_models(len(tokenizer), noise=noise)
    return ModelPair(target, draft, tokenizer, "tiny-target", "tiny-draft", end_token_ids(tokenizer))
