"""The rule panel and the recoloured map read the trace alone, and agree with what the decoder decided."""

import html

import pytest

from dropmatch.config import DecodeConfig
from dropmatch.criteria import LOSSLESS, RULES
from dropmatch.decode import generate
from dropmatch.trace import TokenRecord
from viz import rules
from viz.steps import round_figure
from viz.story import round_story

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
        for name in ("typical", "mars", "fuzzy-js", "fly", "ears"):
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
    assert [r["rule"] for r in rows][:2] == ["lossless", "js+majority"] and len(rows) == 1 + len(RULES)
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


def test_the_panel_shows_each_registry_entrys_label_and_explanation(relative_trace):
    """What the inspector says of a rule is the registry's: its label, and its explanation of the numbers the record
    holds (a relative's statistics, DropMatch's recorded paths), at the knob shown."""
    rec = next(r for r in relative_trace.records if r.kind == "draft" and r.votes)
    page = rules.rules_html(relative_trace, rec, {"typical": 0.3})
    assert all(html.escape(entry.label) in page for entry in (LOSSLESS, *RULES.values()))
    K, votes = relative_trace.config["K"], dict(rec.votes)
    said = {
        "typical": RULES["typical"].explain(rules.reading(rec, "typical", 0.3)[1], 0.3),
        "top-k": RULES["top-k"].explain(rules.reading(rec, "top-k", 2)[1], 2),
        "fuzzy-tv": RULES["fuzzy-tv"].explain(rules.reading(rec, "fuzzy-tv")[1], RULES["fuzzy-tv"].knob.default),
        "js": RULES["js"].explain({"js_draft": rec.js_draft, "threshold": rec.threshold}),
        "naive": RULES["naive"].explain({"votes_d": votes.get(rec.token_id, 0), "votes_top": rec.votes[0][1], "K": K}),
        "lossless": LOSSLESS.explain({"target_rank": rec.target_rank}),
    }
    rows = {row["rule"]: row["statistic"] for row in rules.rule_rows(relative_trace, rec, {"typical": 0.3})}
    for name, line in said.items():
        assert rows[name] == line and html.escape(line) in page, name
    assert "vs k 2" in rows["top-k"] and f"of {K}" in rows["naive"]


def test_a_rule_that_read_nothing_here_says_so():
    """A lazy record (no statistics, no paths) leaves the relatives and DropMatch's criteria nothing to explain."""
    rec = TokenRecord(
        round=0,
        pos=1,
        kind="draft",
        token_id=3,
        text="x",
        emitted=False,
        reason="rejected",
        accepted=False,
        lossless=False,
        q=0.5,
        p=0.1,
        p_argmax=0.6,
        target_argmax=4,
        target_rank=3,
    )
    assert rules.statistic(rec, "typical", None) == "not recorded at this position"
    assert rules.statistic(rec, "js+majority", None, 5) == "paths not computed at this position"
    assert rules.statistic(rec, "lossless", None) == LOSSLESS.explain({"target_rank": 3})
    assert rules.decide(rec, "top-k", 5) is None and rules.decide(rec, "lossless") is False


def test_the_step_through_explains_the_runs_rule_from_the_registry(relative_trace):
    t = next(r.round for r in relative_trace.records if r.reason == "rejected")
    drafts = [r for r in relative_trace.round_records(t) if r.kind == "draft"]
    said = [rules.statistic(r, "top-k", 2, relative_trace.config["K"]) for r in drafts]
    heat = round_figure(relative_trace, t).data[0]
    hover = heat.customdata[list(heat.y).index("top-k (chosen)")]
    assert [h.split("<br>")[-1] for h in hover[: len(drafts)]] == said
    story = round_story(relative_trace, t, 2)
    assert RULES["top-k"].label in story and all(f"({line})" in story for line in said)


@pytest.fixture(scope="module")
def sampled_trace(noisy_pair):
    """T 0.7, gamma 3, every statistic recorded: the uniforms u, the runs after each position, H3."""
    config = DecodeConfig(
        method="relative", criterion="fly", temperature=0.7, seed=4, gamma=3, evidence=True, max_new_tokens=40
    )
    return generate(noisy_pair, PROMPT, config)


def test_every_relative_is_recomputed_from_a_sampled_records_numbers_at_T07(sampled_trace):
    """At T 0.7 the record keeps what the rules that read the round's lossless test need (u, the native run after
    the position, the draft length), so the inspector decides as the decoder did, at any knob."""
    drafts = [r for r in sampled_trace.records if r.kind == "draft"]
    assert all(r.rule_stats["u"] is not None and r.rule_stats["gamma"] == 3 for r in drafts)
    for rec in drafts:
        for name in RULES:
            if not RULES[name].needs_paths:
                assert rules.decide(rec, name) == rec.verdicts[name], (name, rec.round, rec.pos)
        assert rules.decide(rec, "fly", 1.1) == rec.lossless and rules.decide(rec, "ears", 0.0) == rec.lossless


def test_the_panel_shows_fly_and_ears_from_the_record(sampled_trace):
    rec = next(r for r in sampled_trace.records if r.kind == "draft")
    rows = {row["rule"]: row["statistic"] for row in rules.rule_rows(sampled_trace, rec)}
    stats = rec.rule_stats
    assert rows["fly"].startswith(f"H3 {stats['h3']:.3g} vs θ 0.3; ")
    assert f"accepts the next {stats['after']:.0f} in a row (window W 2 = min(6, γ−1), γ 3)" in rows["fly"]
    assert f"vs u {stats['u']:.3g}" in rows["ears"] and "β(1 − max p)" in rows["ears"]


def test_the_panel_says_the_ears_reading_at_T0(relative_trace):
    rec = next(r for r in relative_trace.records if r.kind == "draft")
    assert rec.rule_stats["u"] is None  # greedy: no draw recorded
    row = next(r for r in rules.rule_rows(relative_trace, rec) if r["rule"] == "ears")
    assert row["statistic"].endswith("vs 1 (T = 0 reading)")
