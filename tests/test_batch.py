"""Batched decoding (`decode.stream_many`, `decode.run_round`): in float32 every sequence of a batch decodes token for
token and record for record as it does alone, whatever its neighbours run; the batch-1 round is the plain one."""

from __future__ import annotations

import pytest
import torch
from same_trace import assert_same_run

from dropmatch import decode
from dropmatch.config import DecodeConfig
from dropmatch.criteria import DROPMATCH_CRITERIA, RELATIVE_CRITERIA
from dropmatch.decode import Request, generate, stream_many

PROMPTS = ("def add(a, b):\n", "The quick brown fox", "x", "for i in range(10):\n    print(i)\n# and then", "Once")


def _configs() -> list[DecodeConfig]:
    """Every kind of run a batch may mix: each method, every DropMatch criterion and every relative (greedy and
    sampled), the span gate, lossless at another gamma; lengths chosen so sequences finish at different rounds."""
    out = [
        DecodeConfig(method="lossless", max_new_tokens=20),
        DecodeConfig(method="lossless", max_new_tokens=17, gamma=3, temperature=0.7, seed=3),
        DecodeConfig(method="target", max_new_tokens=9),
        DecodeConfig(method="target", max_new_tokens=11, temperature=0.9, seed=1),
        DecodeConfig(method="truncation", criterion="min-p", knob=0.05, max_new_tokens=8, temperature=0.8),
        DecodeConfig(method="relative", criterion="typical", span_gate=True, max_new_tokens=19),
    ]
    for i, criterion in enumerate(DROPMATCH_CRITERIA):
        out.append(DecodeConfig(method="dropmatch", criterion=criterion, p_drop=0.3, max_new_tokens=14 + i))
        out.append(
            DecodeConfig(
                method="dropmatch", criterion=criterion, p_drop=0.2, temperature=0.7, seed=i, max_new_tokens=13
            )
        )
    for i, criterion in enumerate(RELATIVE_CRITERIA):
        out.append(DecodeConfig(method="relative", criterion=criterion, max_new_tokens=10 + i % 7))
        out.append(DecodeConfig(method="relative", criterion=criterion, temperature=0.7, seed=i, max_new_tokens=12))
    return out


def _requests() -> list[Request]:
    return [Request(PROMPTS[i % len(PROMPTS)], c, chat=i % 9 == 4) for i, c in enumerate(_configs())]


@pytest.mark.parametrize("batch", [2, 5, 64])
def test_every_sequence_of_a_batch_decodes_as_it_does_alone(noisy_pair, batch):
    """Each request in a batch of mixed rules, temperatures, seeds, prompts and lengths (continuous batching refills
    the batch as sequences finish) gives the trace it gives alone: the same tokens, records and costs."""
    requests = _requests()
    finished = {}
    for step in stream_many(noisy_pair, requests, batch=batch):
        if step.left:
            finished[step.index] = step.trace
    assert sorted(finished) == list(range(len(requests)))
    relaxed = 0
    for i, (prompt, config, chat) in enumerate(requests):
        alone = generate(noisy_pair, prompt, config, chat=chat)
        assert_same_run(finished[i], alone, f"request {i} ({config.method} {config.criterion} T {config.temperature})")
        relaxed += sum(r.emitted and r.reason not in ("exact", "correction", "bonus", "target") for r in alone.records)
    assert relaxed > 0  # the rules relaxed somewhere: the comparison reached their decisions


def test_the_batched_forward_runs_once_for_several_sequences(noisy_pair, monkeypatch):
    """Several short feeds share one forward of the body; a long feed (a prompt) runs in a forward of its own."""
    calls = []
    forward = decode._batched_hidden

    def counted(stages, feeds):
        calls.append([len(f) for f in feeds])
        return forward(stages, feeds)

    monkeypatch.setattr(decode, "_batched_hidden", counted)
    long = "word " * decode.PREFILL
    requests = [Request(p, DecodeConfig(method="lossless", max_new_tokens=12)) for p in ("a", "bb", long)]
    list(stream_many(noisy_pair, requests, batch=3))
    assert calls and max(len(c) for c in calls) >= 2  # sequences shared forwards
    assert all(n <= decode.PREFILL for c in calls for n in c)  # the long prompt never padded a batch


def test_until_takes_a_request_out_and_the_next_one_in(tiny_pair):
    """`until` ends a request after a round (its finish stays unset, as when a caller stops a stream), and the
    waiting request takes its place; the CPU seconds of each request are its share of the rounds it was in."""
    requests = [Request(p, DecodeConfig(method="lossless", max_new_tokens=40)) for p in ("a", "b", "c")]
    steps = list(stream_many(tiny_pair, requests, batch=2, until=lambda i, t: i == 0 and len(t.token_ids) >= 5))
    first = [s for s in steps if s.index == 0]
    assert first[-1].left and first[-1].trace.finish is None and len(first) <= 5
    assert [s.index for s in steps if s.left][0] == 0  # it left first: "c" joined while "b" still ran
    entered = [s.index for s in steps].index(2)
    assert any(s.index == 1 and not s.left for s in steps[entered:])
    assert all(s.cpu_s > 0 for s in steps) and all(
        later.cpu_s >= earlier.cpu_s for earlier, later in zip(steps, steps[1:]) if earlier.index == later.index
    )


def test_a_batch_size_below_one_is_refused(tiny_pair):
    with pytest.raises(ValueError, match="at least 1"):
        next(stream_many(tiny_pair, [Request("a", DecodeConfig())], batch=0))


def test_a_stage_that_cannot_stack_its_cache_runs_alone(tiny_pair):
    """A sliding-window layer keeps state left-padding would break: such a cache never joins a stacked forward."""
    from transformers.cache_utils import DynamicSlidingWindowLayer

    stage = decode._Stage(tiny_pair.target, tiny_pair.vocab_size)
    assert decode._batchable(stage)
    stage.cache.layers[0] = DynamicSlidingWindowLayer(sliding_window=4)
    assert not decode._batchable(stage)
    other = decode._Stage(tiny_pair.target, tiny_pair.vocab_size)
    feeds = [torch.tensor([1, 2, 3]), torch.tensor([4, 5])]
    alone = decode._Stage(tiny_pair.target, tiny_pair.vocab_size).hidden(feeds[1])
    hs = decode.hidden_all([stage, other], feeds)
    assert torch.allclose(hs[1], alone, atol=1e-5)


def test_a_draft_with_its_own_head_proposes_through_its_own_next_logits(tiny_pair):
    """llama.cpp's draft stage gives logits, not hidden states, and cannot stack its cache: each step asks it for its
    next logits alone, as a batch of one did, while the stacked torch stages share one forward and one head."""

    class OwnHead:  # the stage interface of llama.cpp's draft: next_logits, no hidden states for a torch head
        def __init__(self, stage):
            self.stage, self.calls = stage, 0

        def next_logits(self, feed):
            self.calls += 1
            return self.stage.next_logits(feed)

    stages = [decode._Stage(tiny_pair.draft, tiny_pair.vocab_size) for _ in range(3)]
    own = OwnHead(decode._Stage(tiny_pair.draft, tiny_pair.vocab_size))
    feeds = [torch.tensor([5, 6, 7]), torch.tensor([8]), torch.tensor([9, 10]), torch.tensor([11, 12])]
    logits = decode.next_logits_all([*stages, own], feeds)
    assert own.calls == 1 and [x.shape for x in logits] == [torch.Size([tiny_pair.vocab_size])] * 4
    for feed, got in zip(feeds, logits):
        alone = decode._Stage(tiny_pair.draft, tiny_pair.vocab_size).next_logits(feed)
        assert torch.allclose(got, alone, atol=1e-5)
