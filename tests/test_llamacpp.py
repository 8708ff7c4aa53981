"""The llama.cpp engine: refused clearly where it cannot run; where llama-cpp-python is installed, on the embedded
pair: p_drop 0 equals lossless; lossless greedy equals the engine's own target-only greedy, and llama.cpp's own
speculative loop its plain decoding, except at a near-tie within llama.cpp's batch rounding (its batched and
one-token bodies give logits about 0.3-0.4 apart on this pair: a verify of six tokens and a single step are
different kernels); a cut cache replays exactly; the trace names the engine."""

import sys

import pytest
import torch

from dropmatch import llamacpp, models
from dropmatch.config import DecodeConfig
from dropmatch.decode import Decoder, generate
from dropmatch.heads import TargetHead, path_logits
from dropmatch.lab import bench
from dropmatch.models import encode_prompt


def test_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="engine must be one of torch, llama.cpp"):
        models.load_pair(engine="onnx")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"target_id": "Qwen/Qwen2.5-Coder-1.5B-Instruct"}, "embedded pair only"),
        ({"device": "cuda"}, "runs on the CPU"),
        ({"device_map": "auto"}, "runs on the CPU"),
        ({"draft_quant": "int8"}, "torch-engine option"),
        ({"draft_vocab": 4096}, "torch-engine option"),
    ],
)
def test_engine_refuses_what_it_cannot_run(kwargs, message):
    with pytest.raises(ValueError, match=message):
        models.load_pair(engine="llama.cpp", **kwargs)


def test_missing_library_names_the_install_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import fails as if it were not installed
    assert not llamacpp.available()
    with pytest.raises(ValueError, match="requirements-llama.txt"):
        models.load_pair(engine="llama.cpp")


needs_llama = pytest.mark.skipif(not llamacpp.available(), reason="llama-cpp-python is not installed")
PROMPTS = [("def quicksort(arr):\n", False), ("Write one sentence about the sea.", True)]
N = 32
BATCH_ROUNDING = 1.0  # logits: above the 0.3-0.4 measured between llama.cpp's batched and one-token bodies here


def parting(a: list[int], b: list[int]) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None if len(a) == len(b) else min(len(a), len(b)))


def margin(stage: llamacpp.Stage, context: list[int]) -> float:
    """Top-1 minus top-2 logit after `context`, fed in one batch to a fresh stage."""
    top = stage.next_logits(context).topk(2).values
    return float(top[0] - top[1])


@pytest.fixture(scope="module")
def llama_pair():
    """The embedded pair on the llama.cpp engine, the torch head in float32."""
    import gc

    yield models.load_pair(dtype="float32", device="cpu", engine="llama.cpp")
    models.clear_cache()
    gc.collect()


@needs_llama
@pytest.mark.slow
@pytest.mark.parametrize("prompt, chat", PROMPTS)
def test_lossless_equals_the_engines_target_greedy(llama_pair, prompt, chat):
    target = generate(llama_pair, prompt, DecodeConfig(method="target", max_new_tokens=N), chat=chat)
    lossless = generate(llama_pair, prompt, DecodeConfig(method="lossless", max_new_tokens=N), chat=chat)
    dropmatch = generate(llama_pair, prompt, DecodeConfig(method="dropmatch", p_drop=0.0, max_new_tokens=N), chat=chat)
    assert dropmatch.token_ids == lossless.token_ids  # the same batch shapes: exact
    i = parting(lossless.token_ids, target.token_ids)
    if i is not None:  # a near-tie that llama.cpp's batched and one-token kernels round apart, or a bug
        ids = encode_prompt(llama_pair.tokenizer, prompt, chat) + target.token_ids[:i]
        head = TargetHead.of(llama_pair.target)
        gap = margin(llamacpp.Stage(llama_pair.gguf[0], llama_pair.vocab_size, head=head), ids)
        assert gap < BATCH_ROUNDING, f"lossless departs from the engine's target greedy at token {i}, margin {gap}"
    assert lossless.environment["engine"] == "llama.cpp" and target.environment["engine"] == "llama.cpp"
    assert sum(r.draft_forwards for r in lossless.rounds) > 0  # the draft really ran in llama.cpp


@needs_llama
@pytest.mark.slow
def test_paths_and_the_unmasked_logits_share_the_torch_head(llama_pair):
    ids = encode_prompt(llama_pair.tokenizer, "def add(a, b):\n    return")
    decoder = Decoder(llama_pair, DecodeConfig(method="dropmatch", max_new_tokens=8), ids)
    assert decoder.target.head.module is llama_pair.target.get_output_embeddings()
    h = decoder.target.hidden(ids)[-2:]  # llama.cpp's final hidden states, in the torch head's dtype
    assert h.dtype == torch.float32 and h.shape == (2, llama_pair.target.config.hidden_size)
    z = decoder.target.logits(h)
    paths = path_logits(h, decoder.target.head, torch.ones(2, 5, h.shape[-1], dtype=torch.bool), 0.0)
    assert torch.equal(paths.argmax(-1), z.argmax(-1)[:, None].expand(2, 5))
    assert torch.allclose(paths, z[:, None].expand_as(paths), atol=1e-4)


@needs_llama
@pytest.mark.slow
def test_a_cut_cache_replays_exactly(llama_pair):
    stage = llamacpp.Stage(llama_pair.gguf[0], llama_pair.vocab_size, head=None)
    ids = encode_prompt(llama_pair.tokenizer, "def add(a, b):\n    return")
    stage.last_logits(ids[:-3], 1)
    first = stage.last_logits(ids[-3:], 3)
    stage.last_logits([11, 12, 13], 3)  # tokens that a cut must forget
    stage.cut(len(ids) - 3)
    again = stage.last_logits(ids[-3:], 3)  # the same batch shape as `first`: the same kernels
    assert stage.length == len(ids)
    assert torch.equal(first, again)


@needs_llama
@pytest.mark.slow
def test_llamas_own_speculation_equals_its_plain_decoding(llama_pair):
    ids = encode_prompt(llama_pair.tokenizer, "def fibonacci(n):\n")
    args = (llama_pair.gguf, llama_pair.vocab_size, llama_pair.eos_ids, ids, 5, N)
    plain, spec = bench.llama_run(*args, spec=False), bench.llama_run(*args, spec=True)
    i = parting(spec["token_ids"], plain["token_ids"])
    if i is not None:
        stage = llamacpp.Stage(llama_pair.gguf[0], llama_pair.vocab_size)
        assert margin(stage, ids + plain["token_ids"][:i]) < BATCH_ROUNDING
    assert len(plain["token_ids"]) == N and plain["tau"] == 1.0 and spec["tau"] > 1.0
