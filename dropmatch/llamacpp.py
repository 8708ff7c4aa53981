"""The llama.cpp engine: the bodies run in llama.cpp on the embedded pair's GGUF files, the target's head in torch.

On a CPU, llama.cpp is what a user would run these 4-bit GGUF files with: it multiplies the 4-bit weights as they
are stored (a quarter of the bytes of the bf16 copy the torch engine dequantises them to). Here the draft runs in
llama.cpp whole, head included (its logits are q), and the target's body runs there too, each verify returning its
final hidden states (after the final norm, llama.cpp's per-token embeddings with no pooling). The target's LM
head stays in torch (`TargetHead`, bf16 as the torch engine loads it), so the unmasked logits z and every dropout
path are products with the same head weights, and p_drop 0 decodes as lossless. The KV caches are cut with
llama.cpp's sequence removal.

The engine is a slightly different model from the torch engine's: llama.cpp's CPU kernels quantise each
activation row to 8 bits before the 4-bit dot product. Position 0 shows it most: the first token carries the
model's massive activations (the residual stream there reaches about 3,300, elsewhere under 10), and its final
hidden state differs from torch's (cosine 0.63; every later position 0.999). Lossless decoding equals the
engine's own target-only greedy decoding, not the torch engine's.

llama-cpp-python is optional (it compiles llama.cpp, several minutes): `requirements-llama.txt` has the install
line. Without it, asking for this engine is a clear error.
"""

from __future__ import annotations

import ctypes
import functools
import threading

import numpy as np
import torch

from dropmatch.heads import TargetHead, pad_vocab

ENGINE = "llama.cpp"
INSTALL_HINT = (
    'CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF" pip install --no-deps --require-hashes -r requirements-llama.txt '
    "(compiles llama.cpp for this CPU, about 5-8 minutes on 2 cores)"
)
CONTEXT = 8192  # tokens each context holds: prompt, output and one round's drafts
BATCH = 512  # tokens per llama_decode call; a longer input goes in pieces


def library():
    """llama-cpp-python's low-level module, its log silenced; a ValueError naming the install line if absent."""
    try:
        import llama_cpp
    except ImportError:
        raise ValueError(f"the llama.cpp engine needs llama-cpp-python; install it with: {INSTALL_HINT}") from None
    _quiet(llama_cpp)
    return llama_cpp


def available() -> bool:
    try:
        library()
    except ValueError:
        return False
    return True


@functools.cache
def _quiet(lib) -> None:
    lib.llama_log_set(_silent(lib), ctypes.c_void_p(0))
    lib.llama_backend_init()


@functools.cache
def _silent(lib):  # one callback object for the life of the process (llama.cpp keeps the pointer)
    return lib.llama_log_callback(lambda level, text, data: None)


_LOADING = threading.Lock()


@functools.cache
def _model(path: str):
    """One llama.cpp model per GGUF file (weights memory-mapped), shared by every context."""
    lib = library()
    with _LOADING:
        model = lib.llama_model_load_from_file(path.encode(), lib.llama_model_default_params())
    if not model:
        raise ValueError(f"llama.cpp cannot load {path!r}")
    return model


class Stage:
    """One model in llama.cpp with its own context (its KV cache): the decoder's stage interface.

    With a `head` (the target), `hidden` returns the final hidden states of every fed token for the torch head;
    without one (the draft), `next_logits` returns llama.cpp's own logits of the last fed token.
    """

    device = torch.device("cpu")

    def __init__(self, path: str, vocab: int, head: TargetHead | None = None, threads: int | None = None):
        self.lib, self.model = library(), _model(path)
        params = self.lib.llama_context_default_params()
        params.n_ctx, params.n_batch, params.n_ubatch = CONTEXT, BATCH, BATCH
        params.n_threads = params.n_threads_batch = threads or torch.get_num_threads()
        params.embeddings = head is not None
        params.pooling_type = self.lib.LLAMA_POOLING_TYPE_NONE
        self.ctx = self.lib.llama_init_from_model(self.model, params)
        if not self.ctx:
            raise ValueError(f"llama.cpp cannot make a context for {path!r}")
        self.batch = self.lib.llama_batch_init(BATCH, 0, 1)
        self.hidden_size = self.lib.llama_model_n_embd(self.model)
        self.model_vocab = self.lib.llama_vocab_n_tokens(self.lib.llama_model_get_vocab(self.model))
        self.head, self.vocab, self.length = head, vocab, 0
        self.dtype = head.module.weight.dtype if head is not None else torch.float32

    def __del__(self):
        lib = getattr(self, "lib", None)
        if lib is not None and getattr(self, "ctx", None):
            lib.llama_batch_free(self.batch)
            lib.llama_free(self.ctx)
            self.ctx = None

    def _decode(self, ids: list[int], outputs: int) -> int:
        """Feed one piece (<= BATCH tokens) at the next positions, asking outputs for its last `outputs` tokens."""
        b, n = self.batch, len(ids)
        b.n_tokens = n
        for i, tok in enumerate(ids):
            b.token[i], b.pos[i], b.n_seq_id[i] = tok, self.length + i, 1
            b.seq_id[i][0] = 0
            b.logits[i] = i >= n - outputs
        status = self.lib.llama_decode(self.ctx, b)
        if status != 0:
            raise RuntimeError(f"llama_decode failed with status {status} (context of {CONTEXT} tokens)")
        self.length += n
        return min(n, outputs)

    def _feed(self, ids: list[int], outputs: int) -> np.ndarray:
        """Feed new tokens in pieces; the outputs (hidden states, or logits) of the last `outputs` of them."""
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        if not ids:
            raise ValueError("nothing to feed")
        if self.length + len(ids) > CONTEXT:
            raise ValueError(f"the llama.cpp engine holds {CONTEXT} tokens of context; this run needs more")
        read = self.lib.llama_get_embeddings if self.head is not None else self.lib.llama_get_logits
        width = self.hidden_size if self.head is not None else self.model_vocab
        rows = []
        for start in range(0, len(ids), BATCH):
            piece = ids[start : start + BATCH]
            n = self._decode(piece, max(0, outputs - (len(ids) - start - len(piece))))
            if n:
                rows.append(np.ctypeslib.as_array(read(self.ctx), shape=(n, width)).copy())
        return np.concatenate(rows)

    def hidden(self, ids: list[int]) -> torch.Tensor:
        """Feed new tokens, extending the cache: their final hidden states, in the head's dtype.  # [n, H]"""
        return torch.from_numpy(self._feed(ids, len(ids))).to(self.dtype)

    @torch.inference_mode()
    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """The target's torch head in float32, padded to the pair's vocabulary.  # [n, V]"""
        return pad_vocab(self.head(h), self.vocab)

    def next_logits(self, ids: list[int]) -> torch.Tensor:
        """Feed new tokens; the logits after the last of them (llama.cpp's own head, or the torch head).  # [V]"""
        return self.last_logits(ids, 1)[0]

    def last_logits(self, ids: list[int], n: int) -> torch.Tensor:
        """Feed new tokens; the logits after each of the last n of them.  # [n, V]"""
        if self.head is not None:
            return self.logits(self.hidden(ids)[-n:])
        return pad_vocab(torch.from_numpy(self._feed(ids, n)), self.vocab)

    def cut(self, keep: int) -> None:
        """Drop cached positions past `keep`."""
        if self.length > keep:
            self.lib.llama_memory_seq_rm(self.lib.llama_get_memory(self.ctx), 0, keep, -1)
            self.length = keep
