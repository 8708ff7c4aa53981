"""The rule panel and the recoloured map read the trace alone, and agree with what the decoder decided."""

import pytest

from dropmatch.config import DecodeConfig
from dropmatch.decode import generate
from viz import rules

PROMPT = "def add(a, b):"


@pytest.fixture(scope="module")
def relative_trace(noisy_pair):
    return generate(
        noisy_pair, PROMPT, DecodeConfig(method="relative", criterion="top-k", knob=2, evidence=True, max_new_tokens=24)
    )


@pytest.fixture(scope="module")
def lossless_trace(noisy_pair):
    return generate(noisy_pair, PROMPT, DecodeConfig(method="lossless", evidence=True, max_new_tokens=24))


def test_recomputed_verdicts_are_the_decoders(relative_trace):
    drafts = [r for r in relative_trace.records if r.kind == "draft"]
    assert drafts
    for rec in drafts:
        assert rules.decide(rec, "top-k", 2) == rec.verdicts["top-k"]  # the run's own rule and knob
        for name in ("typical", "mars", "fuzzy-js"):
            assert rules.decide(rec, name) == rec.verdicts[name]  # every other relative at its default
        assert rec.verdicts["js"] == (rec.js_draft <= rec.threshold)  # DropMatch's JS rule, from the recorded paths


def test_top_k_of_one_is_exact_match_on_a_lossless_run(lossless_trace):
    drafts = [r for r in lossless_trace.records if r.kind == "draft"]
    assert any(not r.lossless for r in drafts)
    assert all(rules.decide(r, "top-k", 1) == r.lossless for r in drafts)
    assert all(rules.decide(r, "js") is None for r in drafts)  # no paths in a lossless run: cannot tell


def test_the_panel_lists_every_rule_with_its_knob_and_the_runs_rule_marked(relative_trace):
    rec = next(r for r in relative_trace.records if r.kind == "draft")
    rows = rules.rule_rows(relative_trace, rec, {"typical": 0.3})
    assert [r["rule"] for r in rows][:2] == ["lossless", "js+majority"] and len(rows) == 12
    knob = {r["rule"]: r["knob"] for r in rows}
    assert knob["top-k"] == "k 2" and knob["typical"] == "epsilon 0.3" and knob["mars"] == "theta 0.9"
    page = rules.rules_html(relative_trace, rec, {"typical": 0.3})
    assert "top-k <b>(this run)</b>" in page and "nothing re-decoded" in page


def test_the_recoloured_map_compares_the_rule_with_the_run(relative_trace):
    same = rules.rule_heatmap(relative_trace, "top-k", 2, "t").data[0]
    names = list(rules.AGREEMENT)
    seen = {names[int(v)] for row in same.z for v in row if v is not None}
    assert seen <= {"accepts, as the run did", "rejects, as the run did"}  # the run's own rule agrees everywhere
    looser = rules.rule_heatmap(relative_trace, "top-k", 50, "t").data[0]
    seen = {names[int(v)] for row in looser.z for v in row if v is not None}
    assert "accepts where the run rejected" in seen
