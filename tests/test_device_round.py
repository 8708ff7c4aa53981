"""The round as a GPU runs it, checked on the CPU: every drafted position checked in one head product, decisions
and records read in two copies, and the same run as the CPU's one-position-at-a-time round."""

from __future__ import annotations

import pytest
from host_reads import counting

from dropmatch.config import DecodeConfig
from dropmatch.decode import Decoder
from dropmatch.models import encode_prompt

PROMPT = "def add(a, b):\n    return"
GREEDY = {
    "lossless": {"method": "lossless"},
    "dropmatch": {"method": "dropmatch", "p_drop": 0.3},
    "dropmatch evidence": {"method": "dropmatch", "p_drop": 0.3, "evidence": True},
    "naive replace": {"method": "dropmatch", "criterion": "naive", "p_drop": 0.5, "mode": "replace"},
    "typical": {"method": "relative", "criterion": "typical"},
    "fly": {"method": "relative", "criterion": "fly"},
    "cascade": {"method": "relative", "criterion": "cascade-token"},
    "target": {"method": "target"},
}
SAMPLED = {
    "dropmatch sampled": {"method": "dropmatch", "p_drop": 0.3, "temperature": 0.8, "seed": 3},
    "ears sampled": {"method": "relative", "criterion": "ears", "temperature": 0.7, "seed": 1},
}


def run(pair, settings: dict, at_once: bool, tokens: int = 24):
    decoder = Decoder(pair, DecodeConfig(max_new_tokens=tokens, **settings), encode_prompt(pair.tokenizer, PROMPT))
    decoder.at_once = at_once
    for trace in decoder.rounds():  # noqa: B007 (the last yielded trace is the run)
        pass
    return trace


def untimed(trace) -> dict:
    out = trace.to_dict()
    out["rounds"] = [{k: v for k, v in r.items() if not k.startswith("t_")} for r in out["rounds"]]
    out.pop("environment")
    return out


@pytest.mark.parametrize("name", sorted({**GREEDY, **SAMPLED}))
def test_checking_every_position_at_once_gives_the_same_run(name, noisy_pair):
    settings = {**GREEDY, **SAMPLED}[name]
    one_by_one, at_once = untimed(run(noisy_pair, settings, False)), untimed(run(noisy_pair, settings, True))
    assert at_once["token_ids"] == one_by_one["token_ids"]
    assert at_once["rounds"] == one_by_one["rounds"]
    assert len(at_once["records"]) == len(one_by_one["records"])
    for a, b in zip(at_once["records"], one_by_one["records"]):
        assert a.keys() == b.keys()
        for key in a:
            near = JS_ABS if key in JS_KEYS else 1e-6
            assert close(a[key], b[key], near), (a["round"], a["pos"], key, a[key], b[key])


# A JS divergence is a difference of entropies (`heads.js_divergence`): a value of about 1e-3 nats is what is left of
# sums of up to ln V nats each, so the float32 rounding of logits that a batched head product rounds differently
# (about 6e-8 of each logit, of order 10 here) moves it by some 1e-6 nats, more than the 1e-6 kept for the other
# floats. Seen on an AVX2-only CPU: 6.809e-4 against 6.824e-4 nats, the same decisions and tokens.
JS_KEYS = ("js_paths", "js_draft", "threshold")
JS_ABS = 1e-5


def close(a, b, near: float = 1e-6) -> bool:
    """Equal, floats to float32 rounding (a batched head product may round differently: within 1e-5 relative or
    `near` absolute), through lists and dicts."""
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and a == pytest.approx(b, rel=1e-5, abs=near)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(close(x, y, near) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], near) for k in a)
    return a == b


@pytest.mark.parametrize("name", sorted(GREEDY))
def test_a_greedy_round_reads_the_device_at_most_twice(name, noisy_pair, monkeypatch):
    """Decisions once, records once; the one-position-at-a-time round (the CPU's) reads once more per position."""
    with counting(monkeypatch) as tally:
        trace = run(noisy_pair, GREEDY[name], True)
    assert len(tally.reads) == len(trace.rounds) > 1
    assert max(tally.reads) <= 2, tally.reads
    assert max(tally.bytes) < 64 * 1024, tally.bytes  # scalars and top-N lists, never a distribution
    assert tally.copies[1:] == [0] * (len(trace.rounds) - 1), tally.copies  # each round feeds on device tensors
    assert tally.copies[0] <= 2, tally.copies  # the prompt, once for each model


def test_the_count_sees_host_to_device_copies(noisy_pair, monkeypatch):
    """A round that feeds the target its tokens from a host list, or indexes a device tensor with one, is seen."""
    import torch

    from dropmatch import decode

    monkeypatch.setattr(
        decode.Decoder,
        "_feed",
        lambda self, stage: torch.tensor(self._unseen(stage), dtype=torch.long, device=self.target.device),
    )
    with counting(monkeypatch) as tally:
        run(noisy_pair, GREEDY["lossless"], True)
    assert min(tally.copies[1:]) >= 1 and max(tally.copies) >= 2  # the target's feed every round, the draft's too


def test_the_one_position_at_a_time_round_reads_more(noisy_pair, monkeypatch):
    """The count sees reads: the CPU's lazy round reads each checked position's verdict as it goes."""
    with counting(monkeypatch) as tally:
        run(noisy_pair, GREEDY["dropmatch"], False)
    assert max(tally.reads) > 2


def test_a_batch_round_reads_the_device_twice_whatever_its_size(noisy_pair, monkeypatch):
    """Three greedy sequences checked at once (as on a GPU) in lockstep: each round reads the decisions of all of
    them in one copy and their records in one more, and copies no host data after the first; each sequence decodes
    as it does alone."""
    from same_trace import assert_same_run

    from dropmatch import decode

    names, prompts = ("lossless", "dropmatch", "typical"), (PROMPT, "x = ", "The quick brown fox")
    decoders = [
        Decoder(noisy_pair, DecodeConfig(max_new_tokens=24, **GREEDY[n]), encode_prompt(noisy_pair.tokenizer, p))
        for n, p in zip(names, prompts)
    ]
    for d in decoders:
        d.at_once = True
    live, sizes = list(decoders), []
    with counting(monkeypatch) as tally:
        while live:
            sizes.append(len(live))
            decode.run_round(live)
            live = [d for d in live if d.trace.finish is None]
    assert sizes[0] == 3 and max(tally.reads) <= 2, (sizes, tally.reads)
    assert tally.copies[1:] == [0] * (len(sizes) - 1), tally.copies
    for d, name in zip(decoders, names):
        alone = Decoder(noisy_pair, d.cfg, d.prompt_ids)
        alone.at_once = True
        for _ in alone.rounds():
            pass
        assert_same_run(d.trace, alone.trace, name)
