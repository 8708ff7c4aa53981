"""Loading a target/draft pair (the embedded default, a hub id or a local path) once, with its tokenizer."""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
import weakref
from dataclasses import dataclass

import torch

from dropmatch import embedded, llamacpp, quant
from dropmatch.config import DRAFT_QUANTS, ENGINES, TARGET_QUANTS
from dropmatch.heads import TargetHead
from dropmatch.quant import check_lean_device, check_target_device, prune_head, quantize

DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}
DEFAULT_TARGET = embedded.EMBEDDED_ID
DEFAULT_DRAFT = embedded.EMBEDDED_ID
# The bf16 originals of the embedded models, on the hub, for machines (a Hugging Face Space) that reach it.
# A different pair from the embedded 4-bit one: its acceptance and speed numbers will differ.
HUB_PAIR = (embedded.TARGET.original, embedded.DRAFT.original)


@dataclass(frozen=True)
class ModelPair:
    target: torch.nn.Module
    draft: torch.nn.Module
    tokenizer: object
    target_id: str
    draft_id: str
    eos_ids: frozenset[int]
    draft_quant: str = "none"  # the draft's weights: DRAFT_QUANTS
    draft_vocab: int | None = None  # the draft head scores only this many frequent tokens; None: all
    engine: str = "torch"  # what runs the models: ENGINES
    gguf: tuple[str, str] | None = None  # (target, draft) GGUF files the llama.cpp engine runs
    target_quant: str = "none"  # the target body's weights: TARGET_QUANTS (its head is always dense)

    @property
    def device(self) -> torch.device:
        return next(self.target.parameters()).device

    @property
    def vocab_size(self) -> int:
        """Logit width shared by both models after padding the narrower one (extra ids get probability 0)."""
        heads = (self.target.get_output_embeddings(), self.draft.get_output_embeddings())
        return max(getattr(h, "out_features", None) or h.weight.shape[0] for h in heads)


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _resolve(model_id: str, role: str) -> str:
    if model_id == embedded.EMBEDDED_ID:
        return str(embedded.ensure_converted(embedded.TARGET if role == "target" else embedded.DRAFT))
    return model_id


def _load_one(path: str, dtype: torch.dtype, device: str, device_map: str | None):
    from transformers import AutoModelForCausalLM

    kwargs = {"dtype": dtype}
    if device_map:
        kwargs["device_map"] = device_map
    try:
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    except OSError as err:
        raise ValueError(f"cannot load model {path!r}: {str(err).splitlines()[0]}") from None
    if not device_map:
        model = model.to(device)
    return model.eval()


# End-of-turn and end-of-text tokens of the common chat families. A model's own config often names only
# one of them (the embedded Qwen2.5 GGUF headers name <|im_end|> but not <|endoftext|>), yet the model
# emits either to stop; generation stops at whichever of these its vocabulary holds as a special token.
CHAT_END_TOKENS = ("<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<end_of_turn>")


def end_token_ids(tokenizer, generation_config=None) -> frozenset[int]:
    """Every end token the model declares: its generation config's list, the tokenizer's eos, and the chat
    family's end tokens that the vocabulary holds as special (added) tokens."""
    ids: set[int] = set()
    declared = (tokenizer.eos_token_id, getattr(generation_config, "eos_token_id", None))
    for source in declared:
        if source is not None:
            ids.update(source if isinstance(source, (list, tuple)) else [source])
    special = {t.content: i for i, t in tokenizer.added_tokens_decoder.items()}
    ids.update(special[name] for name in CHAT_END_TOKENS if name in special)
    return frozenset(int(i) for i in ids)


@torch.inference_mode()
def check_head(model: torch.nn.Module, name: str = "the model") -> None:
    """Refuse a model whose own forward logits differ from its body followed by `TargetHead`.

    The decoder computes the unmasked head and every dropout path as TargetHead(body(x)); a family that
    post-processes its logits in a way TargetHead does not know would be decoded wrongly, so it is refused
    here, at load time, with a clear message (one short forward of four tokens).
    """
    x = torch.arange(min(4, model.config.get_text_config().vocab_size))[None]
    embeddings = model.get_input_embeddings().weight
    x = x.to(embeddings.device if embeddings.device.type != "meta" else "cpu")
    own = model(input_ids=x, use_cache=False).logits.float()
    ours = TargetHead.of(model)(model.get_decoder()(input_ids=x, use_cache=False).last_hidden_state).to(own.device)
    tolerance = 1e-4 if own.dtype == torch.float32 and model.dtype == torch.float32 else 1e-2
    scored = torch.isfinite(own)  # a pruned draft head leaves -inf outside its kept tokens
    same_support = torch.equal(scored, torch.isfinite(ours))
    gap = float((ours - own)[scored].abs().max()) / max(1.0, float(own[scored].abs().max()))
    if not (same_support and gap <= tolerance):
        raise ValueError(
            f"{name} ({type(model).__name__}) post-processes its logits in a way this decoder does not reproduce "
            f"(relative gap {gap:.2g} between its own logits and body + head); it cannot be decoded exactly"
        )


# model -> the processes (by id) where check_head passed on it: a process forked from the one that loaded the model
# does not count as checked (os.getpid() differs there), so it checks the model again on first use (check_heads).
_HEADS_CHECKED: weakref.WeakKeyDictionary[torch.nn.Module, set[int]] = weakref.WeakKeyDictionary()


def _check_head_once(model: torch.nn.Module, name: str) -> None:
    """check_head, unless it already passed on this model in this process."""
    checked = _HEADS_CHECKED.setdefault(model, set())
    if os.getpid() not in checked:
        check_head(model, name)
        checked.add(os.getpid())


def check_heads(pair: ModelPair) -> None:
    """check_head on the pair's target and draft, once per process: a no-op where they passed (the process that
    loaded the pair checked them there, unless it loaded with `check` False), a check of its own in a process forked
    from it. A ZeroGPU worker is such a fork, and its models reach the GPU only inside the GPU function: it calls this
    there, so the check runs on the device its paths run on, once per worker (ZeroGPU's main process, which only
    emulates CUDA on the CPU, loads the pair without checking it)."""
    _check_head_once(pair.target, f"the target {pair.target_id!r}")
    if pair.draft is not pair.target:  # one model serving both roles is checked once
        _check_head_once(pair.draft, f"the draft {pair.draft_id!r}")


def _same_tokenizer(a, b) -> bool:
    return a.get_vocab() == b.get_vocab()


def load_pair(
    target_id: str = DEFAULT_TARGET,
    draft_id: str = DEFAULT_DRAFT,
    dtype: str = "bfloat16",
    device: str | None = None,
    device_map: str | None = None,
    draft_quant: str = "none",
    draft_vocab: int | None = None,
    engine: str = "torch",
    target_quant: str = "none",
    check: bool = True,
) -> ModelPair:
    """Load a pair once per (ids, dtype, device, lean-draft options, engine) and check its heads (`check_heads`, once
    per process; `check` False leaves the check to the caller, before it decodes: on ZeroGPU the GPU function, where the
    models are on the GPU, since the process that loads them only emulates CUDA). Raises ValueError for a bad id,
    mismatched tokenizers or a head the decoder cannot reproduce. draft_quant "int8": the draft's linear layers in int8;
    draft_vocab N: the draft's head scores only the N most frequent tokens (`dropmatch.quant`). engine "llama.cpp": the
    embedded pair's GGUF files run in llama.cpp, the target's head in torch (`dropmatch.llamacpp`). target_quant "int4"
    (CPU): the target's body in torch's 4-bit format, its head dense; for the embedded pair only the layers its GGUF
    file holds in Q4_K (`quant.q4_layers`), not the Q6_K ones, which 4 bits would coarsen."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    if target_quant not in TARGET_QUANTS:
        raise ValueError(f"target quantisation must be one of {', '.join(TARGET_QUANTS)}; got {target_quant!r}")
    if target_quant != "none" and (engine != "torch" or device_map):
        raise ValueError("the int4 target is a torch-engine option for a target held whole in memory (no device map)")
    if engine != "torch":
        _check_llama(target_id, draft_id, device or "cpu", device_map, draft_quant, draft_vocab)
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {dtype!r}")
    if draft_quant not in DRAFT_QUANTS:
        raise ValueError(f"draft quantisation must be one of {', '.join(DRAFT_QUANTS)}; got {draft_quant!r}")
    if not target_id or not draft_id:
        raise ValueError("both a target and a draft model id are needed")
    if not device_map:  # before anything loads; a device_map's placement is checked once loaded (quantize)
        check_lean_device(draft_quant, device or default_device())
        check_target_device(target_quant, device or default_device())
    with _LOADING:  # one load at a time: a start-up preload and a first request never load the pair twice
        where = device or default_device()
        pair = _load_pair(target_id, draft_id, dtype, where, device_map, draft_quant, draft_vocab, target_quant)
        if check:
            check_heads(pair)  # on the device it was loaded to
        return pair if engine == "torch" else _llama_pair(pair)


def _check_llama(target_id, draft_id, device, device_map, draft_quant, draft_vocab) -> None:
    """The llama.cpp engine runs the embedded pair's GGUF files on the CPU, as they are: nothing else."""
    if target_id != embedded.EMBEDDED_ID or draft_id != embedded.EMBEDDED_ID:
        raise ValueError("the llama.cpp engine runs the embedded pair only (its GGUF files); use the torch engine")
    if device != "cpu" or device_map:
        raise ValueError("the llama.cpp engine runs on the CPU; use the torch engine on other devices")
    if draft_quant != "none" or draft_vocab is not None:
        raise ValueError(
            "a lean draft (int8, int4, a pruned head) is a torch-engine option; llama.cpp runs the GGUF draft"
        )
    llamacpp.library()


@functools.lru_cache(maxsize=1)
def _llama_pair(pair: ModelPair) -> ModelPair:
    return dataclasses.replace(pair, engine=llamacpp.ENGINE, gguf=embedded.gguf_paths())


_LOADING = threading.Lock()


def _unlock_in_child() -> None:
    """A fresh lock in a forked child: a fork taken while another thread loads (and holds the lock) would otherwise
    inherit it held, with no thread there to release it, and the child's first load_pair would wait for ever."""
    global _LOADING
    _LOADING = threading.Lock()


os.register_at_fork(after_in_child=_unlock_in_child)


@functools.lru_cache(maxsize=4)
def _shared_model(path: str, dtype: str, device: str, device_map: str | None):
    return _load_one(path, DTYPES[dtype], device, device_map)


@functools.lru_cache(maxsize=2)
def _load_pair(
    target_id: str,
    draft_id: str,
    dtype: str,
    device: str,
    device_map: str | None,
    draft_quant: str,
    draft_vocab: int | None,
    target_quant: str = "none",
) -> ModelPair:
    from transformers import AutoTokenizer

    target_path, draft_path = _resolve(target_id, "target"), _resolve(draft_id, "draft")
    try:
        tok_t = AutoTokenizer.from_pretrained(target_path)
        tok_d = tok_t if draft_path == target_path else AutoTokenizer.from_pretrained(draft_path)
    except OSError as err:
        raise ValueError(f"cannot load a tokenizer: {str(err).splitlines()[0]}") from None
    if not _same_tokenizer(tok_t, tok_d):
        raise ValueError(
            f"the target {target_id!r} and the draft {draft_id!r} use different tokenizers; speculative "
            "decoding here needs one vocabulary (the JS criterion compares distributions id by id)"
        )
    if target_quant == "none":
        target = _shared_model(target_path, dtype, device, device_map)  # pairs that differ by the draft share it
    else:  # changed in place: its own copy
        target = _load_one(target_path, DTYPES[dtype], device, device_map)
        only = quant.q4_layers(embedded.gguf_paths()[0]) if target_id == embedded.EMBEDDED_ID else None
        quant.quantize_target_int4(target, only)
    if draft_quant == "none" and draft_vocab is None:
        draft = _shared_model(draft_path, dtype, device, device_map)
    else:  # a lean draft is changed in place: its own copy
        draft = quantize(_load_one(draft_path, DTYPES[dtype], device, device_map), draft_quant)
        if draft_vocab is not None:
            prune_head(draft, tok_t, draft_vocab)
    return ModelPair(
        target,
        draft,
        tok_t,
        target_id,
        draft_id,
        end_token_ids(tok_t, target.generation_config),
        draft_quant,
        draft_vocab,
        target_quant=target_quant,
    )


def clear_cache() -> None:
    """Forget every loaded pair (its memory is freed once nothing else holds it)."""
    _load_pair.cache_clear()
    _shared_model.cache_clear()
    _llama_pair.cache_clear()


def encode_prompt(tokenizer, prompt: str, chat: bool = False) -> list[int]:
    """Token ids of the prompt; with `chat`, wrapped in the tokenizer's chat template as one user turn."""
    if not prompt or not prompt.strip():
        raise ValueError("the prompt is empty")
    if chat:
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("this tokenizer has no chat template; run without chat format")
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
        )
        return tokenizer(text, add_special_tokens=False)["input_ids"]
    return tokenizer(prompt)["input_ids"]
