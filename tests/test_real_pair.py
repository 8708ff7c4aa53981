"""The real embedded pair in float32 on CPU, loaded once for all of these: lossless greedy = target greedy, p_drop 0 =
lossless, caches cut to the accepted length, both Qwen end tokens, and the CLI's `generate --json` contract."""

import json

import pytest
import torch

from dropmatch import metrics
from dropmatch.cli import main
from dropmatch.config import DecodeConfig
from dropmatch.decode import Decoder, generate
from dropmatch.models import encode_prompt

pytestmark = pytest.mark.slow  # the embedded pair, loaded once

PROMPTS = [
    ("def quicksort(arr):\n", False),
    ("A train travels 60 km in 45 minutes. What is its average speed in km/h?", True),
    ("Write one sentence about the sea.", True),
]
N = 32


def logit_margins(pair, prompt_ids: list[int], generated: list[int]) -> list[float]:
    """Top-1 minus top-2 target logit at every generated position (one full forward, float32)."""
    with torch.inference_mode():
        logits = pair.target(torch.tensor([prompt_ids + generated])).logits[0, len(prompt_ids) - 1 : -1].float()
    top2 = logits.topk(2, -1).values
    return (top2[:, 0] - top2[:, 1]).tolist()


@pytest.mark.parametrize("prompt, chat", PROMPTS)
def test_lossless_greedy_equals_target_greedy_real_pair(real_pair_f32, prompt, chat):
    target = generate(real_pair_f32, prompt, DecodeConfig(method="target", max_new_tokens=N), chat=chat)
    lossless = generate(real_pair_f32, prompt, DecodeConfig(method="lossless", max_new_tokens=N), chat=chat)
    if lossless.token_ids != target.token_ids:  # report the near-tie instead of weakening the test
        ids = encode_prompt(real_pair_f32.tokenizer, prompt, chat)
        i = next(i for i, (a, b) in enumerate(zip(lossless.token_ids, target.token_ids)) if a != b)
        margin = logit_margins(real_pair_f32, ids, target.token_ids)[i]
        pytest.fail(f"lossless departs from target greedy at token {i}; target logit margin there {margin:.2e}")
    assert metrics.compute(lossless)["tau"] > 1.5  # the pair really speculates


def test_lossless_with_the_int8_draft_equals_target_greedy_real_pair(real_pair_f32):
    from dropmatch import models

    lean = models.load_pair(dtype="float32", device="cpu", draft_quant="int8")  # the same target, an int8 draft
    assert lean.target is real_pair_f32.target and lean.draft is not real_pair_f32.draft
    prompt, chat = PROMPTS[0]
    target = generate(real_pair_f32, prompt, DecodeConfig(method="target", max_new_tokens=N), chat=chat)
    lossless = generate(lean, prompt, DecodeConfig(method="lossless", max_new_tokens=N), chat=chat)
    assert lossless.token_ids == target.token_ids and lossless.config["draft_quant"] == "int8"
    assert metrics.compute(lossless)["tau"] > 1.5  # the int8 draft still speculates


@pytest.mark.parametrize("prompt, chat", PROMPTS[:2])
def test_p_drop_zero_equals_lossless_real_pair(real_pair_f32, prompt, chat):
    lossless = generate(real_pair_f32, prompt, DecodeConfig(method="lossless", max_new_tokens=N), chat=chat)
    dm = generate(
        real_pair_f32, prompt, DecodeConfig(method="dropmatch", p_drop=0.0, evidence=True, max_new_tokens=N), chat=chat
    )
    assert dm.token_ids == lossless.token_ids
    assert metrics.compute(dm)["relaxed_share"] == 0.0


def test_the_static_ensemble_decodes_as_transformers_own_on_the_embedded_pair(real_pair_f32):
    """transformers' `assistant_ensemble_weight`, this project's pinned dependency, is the reference: in float32
    greedy the registry's ensemble emits the same tokens, and it relaxes (it is not lossless by accident)."""
    from test_rule_entries import transformers_ensemble

    relaxed = 0
    for prompt, chat in PROMPTS[:2]:
        config = DecodeConfig(method="relative", criterion="ensemble", knob=0.3, max_new_tokens=N)
        ours = generate(real_pair_f32, prompt, config, chat)
        assert ours.token_ids == transformers_ensemble(real_pair_f32, prompt, 0.3, 5, N, chat), prompt
        relaxed += sum(r.reason == "ensemble" for r in ours.records)
    assert relaxed > 0


def test_caches_are_cut_to_the_accepted_length(real_pair_f32):
    ids = encode_prompt(real_pair_f32.tokenizer, PROMPTS[0][0])
    decoder = Decoder(real_pair_f32, DecodeConfig(method="dropmatch", max_new_tokens=N), ids)
    for _ in decoder.rounds():
        assert decoder.target.length == decoder.context_length - 1
        assert decoder.draft.length <= decoder.context_length - 1
        assert decoder.context_length == len(ids) + len(decoder.trace.token_ids)
    assert len(decoder.trace.token_ids) == N


def test_the_embedded_pair_stops_at_both_qwen_end_tokens(real_pair_f32):
    assert {151643, 151645} <= real_pair_f32.eos_ids  # <|endoftext|> and <|im_end|>
    assert real_pair_f32.tokenizer.convert_ids_to_tokens([151643, 151645]) == ["<|endoftext|>", "<|im_end|>"]


def test_generate_json_contract(real_pair_f32, tmp_path, capsys):
    out = tmp_path / "run.json"
    code = main(
        [
            "generate",
            "--prompt",
            "def add(a, b):",
            "--max-new-tokens",
            "12",
            "--dtype",
            "float32",
            "--device",
            "cpu",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    data = json.loads(out.read_text())
    assert {"config", "text", "token_ids", "records", "metrics"} <= set(data)
    assert len(data["token_ids"]) == data["metrics"]["n_tokens"] <= 12
    assert {
        "tau",
        "acceptance_rate",
        "tokens_per_s",
        "target_forwards",
        "draft_forwards",
        "n_tokens",
        "histogram",
    } <= set(data["metrics"])
    assert data["config"]["method"] == "dropmatch" and data["config"]["K"] == 5
    assert data["text"] in capsys.readouterr().out


def test_a_batch_decodes_as_its_sequences_alone_real_pair(real_pair_f32):
    """Four requests of the embedded pair in one batch (ragged prompts, greedy and sampled, DropMatch, a relative and
    lossless; they finish at different rounds): each gives its batch-1 tokens, in float32."""
    from dropmatch.decode import Request, stream_many

    requests = [
        Request(PROMPTS[0][0], DecodeConfig(method="dropmatch", p_drop=0.3, max_new_tokens=N)),
        Request(PROMPTS[1][0], DecodeConfig(method="lossless", max_new_tokens=N - 8), chat=True),
        Request(PROMPTS[2][0], DecodeConfig(method="relative", criterion="typical", max_new_tokens=N), chat=True),
        Request(PROMPTS[0][0], DecodeConfig(method="dropmatch", p_drop=0.3, temperature=0.7, max_new_tokens=N - 4)),
    ]
    batched = {s.index: s.trace for s in stream_many(real_pair_f32, requests, batch=4) if s.left}
    for i, (prompt, config, chat) in enumerate(requests):
        alone = generate(real_pair_f32, prompt, config, chat=chat)
        assert batched[i].token_ids == alone.token_ids, (i, config.method)
        assert [r.reason for r in batched[i].records] == [r.reason for r in alone.records], i
