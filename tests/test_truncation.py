"""Truncation sampling of the target alone (top-k, min-p) as a method: its warpers on handcrafted distributions,
its config, its decodes at T = 0 and T = 0.7 (the first-token distribution by chi-square), its sweep rows; the
tie reason on a pair whose target has tied logits; each registry rule's family."""

from __future__ import annotations

import pytest
import torch
from tiny_pair import byte_tokenizer, tiny_models

from dropmatch.config import TRUNCATION_KNOBS, DecodeConfig
from dropmatch.criteria import FAMILIES, RULES
from dropmatch.decode import generate
from dropmatch.lab.suites import DEFAULT_SUITE, load_suite
from dropmatch.lab.sweep import PairRunner, design_settings, parse_rule, run_sweep
from dropmatch.metrics import compute
from dropmatch.models import ModelPair, encode_prompt
from dropmatch.tables.summary import summary
from dropmatch.tables.tradeoff import matched_table
from dropmatch.truncation import min_p, top_k, truncate

P = torch.tensor([0.4, 0.2, 0.2, 0.1, 0.06, 0.04])
CHI2_001 = {1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52}  # chi-square at p = 0.001 by degrees of freedom


def test_top_k_keeps_the_ties_at_the_kth_value_and_min_p_keeps_the_top_token():
    assert top_k(P, 2).tolist() == [True, True, True, False, False, False]  # 0.2 is the 2nd value, tied: both kept
    assert top_k(P, 1).tolist() == [True] + [False] * 5
    assert top_k(P, 100).all()
    assert min_p(P, 0.5).tolist() == [True, True, True, False, False, False]  # p >= 0.5 * 0.4
    assert min_p(P, 1.0).tolist() == [True] + [False] * 5 and min_p(P, 0.0).all()
    assert truncate(P, "min-p", 0.3).tolist() == pytest.approx([0.5, 0.25, 0.25, 0, 0, 0])


def test_the_config_names_truncation_a_method_with_a_knob():
    cfg = DecodeConfig.from_settings(criterion="min-p", knob="")
    assert (cfg.method, cfg.knob) == ("truncation", TRUNCATION_KNOBS["min-p"].default)
    assert DecodeConfig.from_settings(criterion="top-k-sampling", knob="3").knob == 3
    with pytest.raises(ValueError, match="k must be an integer"):
        DecodeConfig(method="truncation", criterion="top-k-sampling", knob=0)
    with pytest.raises(ValueError, match="not a truncation criterion"):
        DecodeConfig(method="truncation", criterion="typical")


def run(pair, **settings):
    return generate(pair, "Hello", DecodeConfig.from_settings(max_new_tokens=12, **settings))


def test_truncation_is_greedy_at_t0_top_k_1_is_greedy_and_min_p_0_is_plain_sampling(tiny_pair):
    greedy = run(tiny_pair, method="target").token_ids
    assert run(tiny_pair, criterion="min-p", knob=0.5).token_ids == greedy  # T = 0: greedy target decoding
    trace = run(tiny_pair, criterion="top-k-sampling", knob=1, temperature=0.7, seed=3)
    assert trace.token_ids == greedy and trace.draft_id is None
    assert {r.kind for r in trace.records} == {"target"} and trace.config["criterion"] == "top-k-sampling"
    sampled = run(tiny_pair, method="target", temperature=0.7, seed=3).token_ids
    assert sampled != greedy  # the sampling test below can fail
    assert run(tiny_pair, criterion="min-p", knob=0, temperature=0.7, seed=3).token_ids == sampled
    assert run(tiny_pair, criterion="top-k-sampling", knob=1000, temperature=0.7, seed=3).token_ids == sampled
    assert compute(trace)["tau"] == 1.0 and compute(trace)["per_position"] == []


@pytest.mark.distribution
@pytest.mark.parametrize("criterion, knob", [("top-k-sampling", 4), ("min-p", 0.04)])
def test_the_first_token_at_t07_is_drawn_from_the_truncated_renormalised_target(criterion, knob):
    """Chi-square over 1000 seeds of the first token against truncate(p_T): the kept tokens (at most five bins,
    the rest one more) must match it, and no token outside the kept set may appear."""
    tok = byte_tokenizer()
    target, draft = tiny_models(len(tok), noise=0.1, initializer_range=0.3)
    pair = ModelPair(target, draft, tok, "t", "d", frozenset(), "none")
    prompt, T, runs = "Hello", 0.7, 1000
    with torch.inference_mode():
        p = torch.softmax(target(torch.tensor([encode_prompt(tok, prompt)])).logits[0, -1] / T, -1)
    expected_dist = truncate(p, criterion, knob)
    kept = int((expected_dist > 0).sum())
    assert 2 <= kept and float(p[expected_dist > 0].sum()) < 0.9  # truncation matters: plain p_T would show
    bins = expected_dist.topk(min(5, kept)).indices.tolist()
    expected = [float(expected_dist[b]) for b in bins] + [1 - float(expected_dist[bins].sum())]
    observed = [0] * (len(bins) + 1)
    cfg = DecodeConfig(method="truncation", criterion=criterion, knob=knob, temperature=T, max_new_tokens=1)
    for seed in range(runs):
        first = generate(pair, prompt, DecodeConfig(**{**cfg.to_dict(), "seed": seed})).token_ids[0]
        assert expected_dist[first] > 0, f"token {first} is outside the truncated set"
        observed[bins.index(first) if first in bins else -1] += 1
    cells = [(o, e) for o, e in zip(observed, expected) if e > 1e-9]
    chi2 = sum((o - runs * e) ** 2 / (runs * e) for o, e in cells)
    assert chi2 < CHI2_001[len(cells) - 1], (observed, [round(runs * e) for e in expected])


def test_a_sweep_holds_truncation_rows_beside_lossless_and_the_relatives(tiny_pair, tmp_path):
    assert parse_rule("min-p=0.05,0.1") == ("min-p", [0.05, 0.1])
    items = load_suite(DEFAULT_SUITE, limit=1)
    rules = {"top-k": [2], "min-p": [0.1], "top-k-sampling": [1]}
    settings = design_settings({}, "ofat", methods=["lossless", "relative", "truncation"], rules=rules)
    assert [s.method for s in settings] == ["lossless", "relative", "truncation", "truncation"]
    assert settings[2].key("s", "p") == "s|p|truncation|g5|min-p=0.1"
    df = run_sweep(items, settings, tmp_path, "s", {"max_new_tokens": 8}, PairRunner(tiny_pair, 8))
    rows = df[df["method"] == "truncation"]
    assert sorted(rows["criterion"]) == ["min-p", "top-k-sampling"] and (rows["tau"] == 1).all()
    assert (rows["equal_share"].notna()).all()  # compared with lossless on the same prompt
    table = summary(df)
    assert list(table["method"]) == ["lossless", "relative", "truncation", "truncation"]
    assert set(table.loc[table["method"] == "truncation", "family"]) == {"the target alone (no draft)"}
    matched = matched_table(df)  # no DropMatch row to match here: nothing to compare at its tau
    assert matched.empty


def test_a_draft_tied_with_the_targets_argmax_is_accepted_as_a_tie_at_t0():
    """The target's head scores token v + 128 exactly as v, so its argmax (first index) is always v < 128; the
    draft, a noisy copy, often prefers the twin: exact match rejects it by index order, top-k 2 accepts it."""
    tok = byte_tokenizer()
    target, draft = tiny_models(len(tok))
    with torch.no_grad():
        for model in (target, draft):
            model.lm_head.weight[128:256] = model.lm_head.weight[:128]
        draft.lm_head.weight[128:256] += 0.01 * torch.randn_like(draft.lm_head.weight[128:256])
    pair = ModelPair(target, draft, tok, "t", "d", frozenset(), "none")
    cfg = DecodeConfig(method="relative", criterion="top-k", knob=2, max_new_tokens=24)
    trace = generate(pair, "Hello", cfg)
    ties = [r for r in trace.records if r.reason == "tie"]
    assert ties and all(r.target_rank == 1 and r.token_id == r.target_argmax + 128 and not r.lossless for r in ties)
    m = compute(trace)
    assert m["ties"] == len([r for r in ties if r.accepted]) and m["ties_share"] > 0
    assert not [r for r in trace.records if r.reason == "top-k" and r.target_rank == 1]  # never a relaxed accept


def test_every_registry_rule_names_its_family():
    assert {rule.family for rule in RULES.values()} <= set(FAMILIES)
    assert RULES["js+majority"].family == "reads the dropout paths"
    assert (
        RULES["fuzzy-js"].family == "compares draft and target" and RULES["typical"].family == "reads the target only"
    )


def test_the_report_renders_a_sweep_with_truncation_rows(tiny_pair, tmp_path):
    from dropmatch.lab.report import render

    items = load_suite(DEFAULT_SUITE, limit=1)
    rules = {"top-k": [1, 50], "min-p": [0.1]}
    centre = {"gamma": 3, "K": 5, "p_drop": 0.3, "criterion": "js+majority"}
    settings = design_settings({"gamma": [3]}, "ofat", rules=rules, centre=centre)
    df = run_sweep(items, settings, tmp_path, "s", {"max_new_tokens": 8}, PairRunner(tiny_pair, 8))
    matched = matched_table(df)
    assert "min-p" in set(matched["rule"]) and "family" in matched
    page = render(df, {})
    assert "min-p γ3 min_p=0.1" in page or "min-p 0.1" in page
    assert "by construction it favours rules that threshold p(d)" in page
