"""The decode loop on a tiny random pair: equivalences, seeding, lazy = full evidence, caps, metrics identities."""

import dataclasses

import pytest
import torch

from dropmatch import decode, metrics
from dropmatch.config import RECORDED_STATISTICS, DecodeConfig
from dropmatch.criteria import RULES
from dropmatch.decode import generate, stream
from dropmatch.models import ModelPair, encode_prompt
from dropmatch.trace import Trace

PROMPTS = ["def add(a, b):", "The quick brown fox", "1, 2, 3, 4,"]


def cfg(**kw) -> DecodeConfig:
    return DecodeConfig(**{"max_new_tokens": 24, **kw})


def leading_true(flags: list[bool]) -> int:
    n = 0
    for f in flags:
        if not f:
            break
        n += 1
    return n


@pytest.mark.parametrize("prompt", PROMPTS)
def test_lossless_greedy_equals_target_greedy(tiny_pair, prompt):
    target = generate(tiny_pair, prompt, cfg(method="target"))
    lossless = generate(tiny_pair, prompt, cfg(method="lossless"))
    assert lossless.token_ids == target.token_ids
    assert metrics.compute(lossless)["accepted_drafts"] > 0  # the tiny draft agrees often enough to matter


@pytest.mark.parametrize("prompt", PROMPTS)
def test_p_drop_zero_or_mode_equals_lossless(tiny_pair, prompt):
    """T 0 (greedy): with nothing dropped every path is the unmasked head, so no DropMatch rule relaxes."""
    lossless = generate(tiny_pair, prompt, cfg(method="lossless"))
    for criterion in ("js+majority", "naive", "js"):
        dm = generate(tiny_pair, prompt, cfg(method="dropmatch", p_drop=0.0, criterion=criterion, evidence=True))
        assert dm.token_ids == lossless.token_ids, criterion
        assert {r.reason for r in dm.records} <= {"exact", "rejected", "skipped", "correction", "bonus"}


@pytest.mark.parametrize("prompt", PROMPTS)
def test_p_drop_zero_greedy_computes_no_paths(noisy_pair, prompt):
    """The shortcut (no paths at p_drop 0, greedy, OR) decides what the computed paths decide (evidence mode)."""
    lossless = generate(noisy_pair, prompt, cfg(method="lossless", max_new_tokens=48))
    assert any(r.kind == "correction" for r in lossless.records)  # rejections happen: the paths would be asked
    for criterion in ("js+majority", "naive", "majority"):
        lazy = generate(noisy_pair, prompt, cfg(method="dropmatch", p_drop=0.0, criterion=criterion, max_new_tokens=48))
        shown = generate(
            noisy_pair,
            prompt,
            cfg(method="dropmatch", p_drop=0.0, criterion=criterion, max_new_tokens=48, evidence=True),
        )
        assert lazy.token_ids == shown.token_ids == lossless.token_ids, criterion
        assert sum(r.path_positions for r in lazy.rounds) == 0 < sum(r.path_positions for r in shown.rounds)


def test_dropmatch_accepts_at_least_lossless_every_round(tiny_pair):
    trace = generate(
        tiny_pair, PROMPTS[0], cfg(method="dropmatch", p_drop=0.5, criterion="naive", evidence=True, max_new_tokens=48)
    )
    relaxed = 0
    for t in range(len(trace.rounds)):
        drafts = [r for r in trace.round_records(t) if r.kind == "draft"]
        a = sum(r.accepted for r in drafts)
        assert a >= leading_true([r.lossless for r in drafts])
        relaxed += sum(r.accepted and not r.lossless for r in drafts)
    assert relaxed > 0  # the test exercises semantic acceptances


def test_same_seed_same_trace_and_lazy_equals_evidence(tiny_pair):
    base = cfg(method="dropmatch", p_drop=0.4, temperature=0.8, seed=7)
    a, b = generate(tiny_pair, PROMPTS[1], base), generate(tiny_pair, PROMPTS[1], base)
    assert a.token_ids == b.token_ids
    assert [r.reason for r in a.records] == [r.reason for r in b.records]
    full = generate(tiny_pair, PROMPTS[1], dataclasses.replace(base, evidence=True))
    assert full.token_ids == a.token_ids  # masks come from per-position generators
    lazy_reasons = [(r.round, r.pos, r.kind, r.reason) for r in a.records]
    assert lazy_reasons == [(r.round, r.pos, r.kind, r.reason) for r in full.records]
    other = generate(tiny_pair, PROMPTS[1], dataclasses.replace(base, seed=8))
    assert other.token_ids != a.token_ids  # sampling really depends on the seed


def test_lazy_skips_paths_where_exact_match_accepts(tiny_pair):
    trace = generate(tiny_pair, PROMPTS[0], cfg(method="dropmatch", p_drop=0.3))
    for r in trace.records:
        if r.reason == "exact":
            assert r.path_tokens is None
        if r.reason in ("naive", "js", "majority"):
            assert r.path_tokens is not None and r.verdicts
    m = metrics.compute(trace)
    assert sum(rd.path_positions for rd in trace.rounds) < m["drafted"]


@pytest.mark.parametrize("method", ["target", "lossless", "dropmatch"])
def test_length_limit_and_metric_identities(tiny_pair, method):
    trace = generate(tiny_pair, PROMPTS[2], cfg(method=method, gamma=4, max_new_tokens=23))
    assert len(trace.token_ids) == 23 and trace.finish == "length"
    m = metrics.compute(trace)
    rs = metrics.round_stats(trace)
    assert m["tau"] == pytest.approx(m["n_tokens"] / m["target_forwards"])
    assert sum(m["histogram"]) == m["target_forwards"]
    assert sum(j * h for j, h in enumerate(m["histogram"])) == rs["a"].sum()
    if method != "target":
        assert m["acceptance_rate"] == pytest.approx(rs["a"].sum() / rs["k"].sum())
        assert (rs["e"] <= rs["a"] + 1).all() and (rs["k"] <= 4).all()
    else:
        assert m["tau"] == 1.0
    assert [r.token_id for r in trace.records if r.emitted] == trace.token_ids


def test_eos_stops_generation(tiny_pair):
    first = generate(tiny_pair, PROMPTS[0], cfg(method="lossless", max_new_tokens=12))
    stop = first.token_ids[5]
    pair = dataclasses.replace(tiny_pair, eos_ids=frozenset({stop}))
    trace = generate(pair, PROMPTS[0], cfg(method="lossless", max_new_tokens=12))
    assert trace.finish == "eos" and trace.token_ids == first.token_ids[: first.token_ids.index(stop) + 1]


def test_stream_yields_every_round_and_trace_roundtrips(tiny_pair):
    seen = [len(t.token_ids) for t in stream(tiny_pair, PROMPTS[0], cfg(method="dropmatch", evidence=True))]
    assert seen == sorted(seen) and len(seen) > 1 and seen[-1] == 24
    trace = generate(tiny_pair, PROMPTS[0], cfg(method="dropmatch", evidence=True))
    again = Trace.from_json(trace.to_json())
    assert again == trace
    assert metrics.compute(again)["tau"] == metrics.compute(trace)["tau"]
    rec = next(r for r in trace.records if r.kind == "draft")
    assert len(rec.top["paths"]) == trace.config["K"] and len(rec.top["ids"]) == len(rec.top["texts"])
    assert rec.threshold == pytest.approx(max(rec.js_paths))


def test_replace_mode_with_naive_at_p_drop_zero_is_exact_match(tiny_pair):
    lossless = generate(tiny_pair, PROMPTS[1], cfg(method="lossless"))
    replace = generate(tiny_pair, PROMPTS[1], cfg(method="dropmatch", mode="replace", criterion="naive", p_drop=0.0))
    assert replace.token_ids == lossless.token_ids


# ---- tests that would catch a wrong decoder -------------------------------------------------------------
def counts_from_records(trace: Trace) -> dict:
    """N, T, sum a_t, sum k_t and the histogram of a_t, counted from the token records alone."""
    T = len(trace.rounds)
    a = [sum(1 for r in trace.round_records(t) if r.kind == "draft" and r.accepted) for t in range(T)]
    k = [sum(1 for r in trace.round_records(t) if r.kind == "draft") for t in range(T)]
    N = sum(1 for r in trace.records if r.emitted)
    hist = [a.count(j) for j in range(max(k, default=0) + 1)]
    return {"N": N, "T": T, "a": a, "k": k, "hist": hist}


@pytest.mark.parametrize("method", ["lossless", "dropmatch"])
def test_metric_identities_against_counts_from_the_records(noisy_pair, method):
    trace = generate(noisy_pair, PROMPTS[0], cfg(method=method, gamma=4, max_new_tokens=30))
    c, m = counts_from_records(trace), metrics.compute(trace)
    assert m["n_tokens"] == c["N"] == len(trace.token_ids) and m["target_forwards"] == c["T"]
    assert m["tau"] == pytest.approx(c["N"] / c["T"])
    assert m["acceptance_rate"] == pytest.approx(sum(c["a"]) / sum(c["k"]))
    assert m["histogram"][: len(c["hist"])] == c["hist"] and sum(m["histogram"]) == c["T"]
    assert sum(j * h for j, h in enumerate(m["histogram"])) == sum(c["a"])
    assert 0 < sum(c["a"]) < sum(c["k"])  # rejections and acceptances both happen: the counts mean something


def test_an_end_token_mid_round_ends_the_run_with_the_identities_intact(tiny_pair):
    free = generate(tiny_pair, PROMPTS[1], cfg(method="lossless", max_new_tokens=40))
    # an accepted draft, new in the output, followed by another accepted draft of its round: an end token
    # there cuts the round inside its accepted prefix
    recs, seen, cut = free.records, set(), None
    for i, r in enumerate(recs[:-1]):
        nxt = recs[i + 1]
        if r.kind == "draft" and r.accepted and r.token_id not in seen and nxt.round == r.round and nxt.accepted:
            cut = r
            break
        seen |= {r.token_id} if r.emitted else set()
    assert cut is not None
    pair = dataclasses.replace(tiny_pair, eos_ids=frozenset({cut.token_id}))
    trace = generate(pair, PROMPTS[1], cfg(method="lossless", max_new_tokens=40))
    first = free.token_ids.index(cut.token_id)
    assert trace.finish == "eos" and trace.token_ids == free.token_ids[: first + 1]
    last = trace.round_records(len(trace.rounds) - 1)
    emitted, accepted = sum(r.emitted for r in last), sum(bool(r.accepted) for r in last)
    assert emitted < accepted  # cut inside the accepted prefix: a_t counts drafts that were never emitted
    c, m = counts_from_records(trace), metrics.compute(trace)
    assert m["n_tokens"] == c["N"] and m["tau"] == pytest.approx(c["N"] / c["T"])
    assert sum(j * h for j, h in enumerate(m["histogram"])) == sum(c["a"])  # a_t counted before the cut


@torch.inference_mode()
def test_recorded_q_is_the_uncached_drafts_distribution_across_rounds(tiny_pair):
    trace = generate(tiny_pair, PROMPTS[1], cfg(method="lossless", max_new_tokens=40))
    assert any(r.kind == "bonus" for r in trace.records)  # full acceptances: the draft cache must catch up
    prompt_ids = encode_prompt(tiny_pair.tokenizer, PROMPTS[1])
    emitted = []
    for t in range(len(trace.rounds)):
        records = trace.round_records(t)
        drafts = [r for r in records if r.kind == "draft"]
        for j, rec in enumerate(drafts):
            prefix = prompt_ids + emitted + [d.token_id for d in drafts[:j]]
            q = torch.softmax(tiny_pair.draft(torch.tensor([prefix])).logits[0, -1].float(), -1)
            assert rec.token_id == int(q.argmax()), (t, rec.pos)  # the cache proposes what an uncached draft would
            assert rec.q == pytest.approx(float(q[rec.token_id]), abs=1e-5)
        emitted += [r.token_id for r in records if r.emitted]


@pytest.mark.parametrize("draft_quant", ["none", "int8"])
def test_lossless_sampling_draws_from_the_target_distribution(draft_quant):
    """Chi-square on the first emitted token over many seeds against the target's exact distribution, with a
    draft far from the target (so a wrong acceptance test or residual would show); the same with the draft in
    int8 (q is then the quantised draft's distribution, the one it sampled from)."""
    from tiny_pair import byte_tokenizer, tiny_models

    from dropmatch.quant import quantize

    tok = byte_tokenizer()
    # noise 0.1: the draft overlaps the target enough that a wrong residual shows, and differs enough that
    # accepting every draft would show (expected chi-square about 66 and 1460 over 1000 runs, against 20.5)
    target, draft = tiny_models(len(tok), noise=0.1, initializer_range=0.3)
    pair = ModelPair(target, quantize(draft, draft_quant), tok, "t", "d", frozenset(), draft_quant)
    prompt, T, runs = PROMPTS[0], 0.7, 1000
    with torch.inference_mode():
        p = torch.softmax(target(torch.tensor([encode_prompt(tok, prompt)])).logits[0, -1] / T, -1)
        q = torch.softmax(draft(torch.tensor([encode_prompt(tok, prompt)])).logits[0, -1] / T, -1)
    bins = p.topk(5).indices.tolist()  # the five likeliest tokens and "the rest"
    expected = [float(p[b]) for b in bins] + [1 - float(p[bins].sum())]
    observed = [0] * 6
    for seed in range(runs):
        first = generate(
            pair, prompt, cfg(method="lossless", temperature=T, seed=seed, gamma=3, max_new_tokens=2)
        ).token_ids[0]
        observed[bins.index(first) if first in bins else 5] += 1
    chi2 = sum((o - runs * e) ** 2 / (runs * e) for o, e in zip(observed, expected))
    assert chi2 < 20.52, (observed, [round(runs * e) for e in expected])  # chi-square, 5 df, p = 0.001
    tv = 0.5 * float((p - q).abs().sum())
    assert tv > 0.2  # the draft alone would be told apart


def test_replace_mode_labels_accepts_by_the_criterion_and_evidence_marks_skipped_paths(noisy_pair):
    replace = generate(
        noisy_pair, PROMPTS[0], cfg(method="dropmatch", mode="replace", criterion="majority", evidence=True)
    )
    accepted = [r for r in replace.records if r.kind == "draft" and r.accepted]
    assert accepted and all(r.reason == "majority" for r in accepted)  # never "exact": lossless decides nothing
    assert any(r.lossless for r in accepted)
    full = generate(noisy_pair, PROMPTS[0], cfg(method="dropmatch", evidence=True))
    lazy = generate(noisy_pair, PROMPTS[0], cfg(method="dropmatch"))
    skipped_full = [r for r in full.records if r.reason == "skipped"]
    assert skipped_full and all(r.verdicts and r.path_tokens for r in skipped_full)  # paths computed, shown
    assert all(r.verdicts is None for r in lazy.records if r.reason == "skipped")  # lazily never computed


# ---- the relatives through the same loop ---------------------------------------------------------------
@pytest.mark.parametrize("criterion, knob", [("top-k", 1), ("mars", 1.0)])
@pytest.mark.parametrize("mode", ["or", "replace"])
def test_a_relative_that_relaxes_nothing_reproduces_lossless(noisy_pair, criterion, knob, mode):
    """T 0 (greedy): top-k with k = 1 and MARS with theta = 1 relax nothing: lossless, in either mode (at T 0.7:
    tests/test_sampling_rules.py)."""
    lossless = generate(noisy_pair, PROMPTS[0], cfg(method="lossless"))
    trace = generate(noisy_pair, PROMPTS[0], cfg(method="relative", criterion=criterion, knob=knob, mode=mode))
    assert trace.token_ids == lossless.token_ids
    assert metrics.compute(trace)["relaxed_share"] == 0


@pytest.mark.parametrize("criterion, knob", [("top-k", 5), ("typical", 0.3), ("fuzzy-tv", 0.9), ("mars", 0.5)])
def test_a_relative_accepts_at_least_lossless_and_never_computes_paths(noisy_pair, criterion, knob):
    trace = generate(noisy_pair, PROMPTS[0], cfg(method="relative", criterion=criterion, knob=knob, max_new_tokens=40))
    relaxed = 0
    for t, rd in enumerate(trace.rounds):
        drafts = [r for r in trace.round_records(t) if r.kind == "draft"]
        assert sum(r.accepted for r in drafts) >= leading_true([r.lossless for r in drafts])
        relaxed += sum(r.accepted and not r.lossless for r in drafts)
        assert rd.path_positions == 0 and rd.head_products == len(drafts) + 1  # no K-path products at all
    assert relaxed > 0
    reasons = {r.reason for r in trace.records if r.accepted and not r.lossless}
    assert reasons == {"fuzzy" if criterion.startswith("fuzzy") else criterion}


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_a_relative_decides_the_same_lazily_and_with_full_evidence(noisy_pair, temperature):
    base = cfg(method="relative", criterion="top-k", knob=2, temperature=temperature, seed=3)
    lazy, full = (
        generate(noisy_pair, PROMPTS[1], base),
        generate(noisy_pair, PROMPTS[1], dataclasses.replace(base, evidence=True)),
    )
    assert lazy.token_ids == full.token_ids
    assert [(r.round, r.pos, r.reason) for r in lazy.records] == [(r.round, r.pos, r.reason) for r in full.records]
    drafts = [r for r in full.records if r.kind == "draft"]
    assert all(set(r.rule_stats) == set(RECORDED_STATISTICS) for r in drafts)
    assert all(r.path_tokens is not None and set(r.verdicts) >= {"js", "top-k", "mars"} for r in drafts)
    # the run's rule at the run's knob: every relaxed acceptance it made, and every rejection, agree with it
    assert all(r.verdicts["top-k"] for r in drafts if r.reason == "top-k")
    assert all(not r.verdicts["top-k"] for r in drafts if r.reason == "rejected")
    if temperature == 0:  # (at T = 0.8 the tiny pair's near-uniform p and q pass rejection sampling everywhere)
        assert any(r.reason == "top-k" for r in drafts) and any(r.reason == "rejected" for r in drafts)


def test_a_lossless_run_with_evidence_records_the_relatives_statistics_but_no_paths(noisy_pair):
    trace = generate(noisy_pair, PROMPTS[0], cfg(method="lossless", evidence=True))
    drafts = [r for r in trace.records if r.kind == "draft"]
    assert drafts and all(r.rule_stats and r.path_tokens is None for r in drafts)
    assert all("js" not in r.verdicts and "top-k" in r.verdicts for r in drafts)  # paths were never computed
    assert all(rd.path_positions == 0 for rd in trace.rounds)
    assert trace.token_ids == generate(noisy_pair, PROMPTS[0], cfg(method="lossless")).token_ids


@pytest.mark.parametrize(
    "criterion", ["js+majority", "js", "majority", "naive", "fuzzy-tv", "typical", "top-k", "mars"]
)
def test_a_lazy_record_keeps_what_its_rule_reads(noisy_pair, criterion):
    """A lazy run's checked positions keep the statistics and path fields its rule declares it reads (Rule.reads),
    no others: majority keeps no JS values, fuzzy-tv only TV; an evidence run keeps all of them."""
    rule = RULES[criterion]
    method = "dropmatch" if rule.needs_paths else "relative"
    lazy = generate(noisy_pair, PROMPTS[0], cfg(method=method, criterion=criterion, p_drop=0.5, max_new_tokens=40))
    checked = [r for r in lazy.records if r.kind == "draft" and r.verdicts is not None]
    assert checked, "the run checked no position: the test would say nothing"
    stats = [name for name in RECORDED_STATISTICS if name in rule.reads]
    for rec in checked:
        assert (rec.rule_stats or {}).keys() == set(stats)
        assert (rec.path_tokens is not None) == rule.needs_paths
        assert (rec.js_paths is not None) == (rec.threshold is not None) == ("js_paths" in rule.reads)
    assert all(r.rule_stats is None and r.js_paths is None for r in lazy.records if r.verdicts is None)
    full = generate(noisy_pair, PROMPTS[0], cfg(method=method, criterion=criterion, p_drop=0.5, evidence=True))
    drafts = [r for r in full.records if r.kind == "draft"]
    assert all(set(r.rule_stats) == set(RECORDED_STATISTICS) and r.js_paths is not None for r in drafts)


def test_a_stage_with_nothing_to_drop_calls_no_crop(tiny_pair, monkeypatch):
    """crop(0) emptied the whole cache in transformers before 5.x (PR #47720): a cut that keeps everything (the
    target after a fully accepted round; the draft, which never read its last draft) must not call it."""
    from transformers import DynamicCache

    calls, crop = [], DynamicCache.crop
    monkeypatch.setattr(DynamicCache, "crop", lambda self, n: (calls.append(n), crop(self, n))[1])
    trace = generate(tiny_pair, "The quick brown fox", cfg(method="lossless", max_new_tokens=24))
    assert any(r.kind == "bonus" for r in trace.records)  # a fully accepted round happened
    assert calls and 0 not in calls


CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 207
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 2
flags\t\t: fpu avx2 avx512f avx512_bf16
processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 207
"""


def test_a_trace_names_the_cpus_model_and_bf16_path_beside_its_name(monkeypatch, tiny_pair):
    """Under a hypervisor one generic name ("Intel(R) Xeon(R) Processor") covers CPUs that round bf16 otherwise."""
    monkeypatch.setattr(decode, "_cpuinfo", CPUINFO.splitlines)
    assert decode.cpu_name() == "Intel(R) Xeon(R) Processor"
    assert decode.cpu_model() == "GenuineIntel 6/207/2" and decode.cpu_bf16()
    env = generate(tiny_pair, "def add(a, b):", cfg(max_new_tokens=2)).environment
    assert env["cpu_model"] == "GenuineIntel 6/207/2" and env["cpu_bf16"] == "native"
    assert env["threads"] == str(torch.get_num_threads())
    monkeypatch.setattr(decode, "_cpuinfo", lambda: [])  # a system that does not say
    assert decode.cpu_model() == "unknown" and not decode.cpu_bf16()
