"""The inspector's test and inputs figures show the rule that ran, from the numbers its record holds.

Handcrafted records give known numbers (the line must be the registry's bound at the knob, the bar the record's
statistic); a recorded example relabelled as each relative's run checks that every rule's figure decides as the
registry does and draws only the record's numbers; DropMatch runs keep the JS and votes figures unchanged.
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from pathlib import Path

import plotly.graph_objects as go
import pytest

import viz
from dropmatch.criteria import DROPMATCH_CRITERIA, RULES
from dropmatch.rules.target_only import typical_bound
from dropmatch.trace import TokenRecord, Trace
from viz import distributions, rule_test
from viz.panels import REFERENCE
from viz.rules import decide
from viz.theme import ACCEPT_COLOR, REJECT_COLOR, legend_html

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "assets" / "traces" / "examples" / "03_dropmatch.json"  # rejections, corrections, every statistic
STORY = ROOT / "tests" / "data" / "traces"
RELATIVES = [name for name, entry in RULES.items() if not entry.needs_paths]
# The statistic each relative's first bar draws, read from the record's numbers (rules.shown_numbers).
FIRST_BAR = {
    "fuzzy-js": lambda n: n["js_pq"],
    "fuzzy-kl": lambda n: n["kl_qp"],
    "fuzzy-tv": lambda n: n["tv"],
    "typical": lambda n: n["p_d"],
    "top-k": lambda n: n["order"],
    "mars": lambda n: n["margin"],
    "fly": lambda n: n["h3"],
    "ears": lambda n: n["p_d"] / n["q_d"],
    "cascade-token": lambda n: n["p1_d"],
    "cascade-opt": lambda n: n["q1_max"],
    "lenience": lambda n: n["p_d"] / n["q_d"],
    "tie-only": lambda n: n["rank"],
    "ensemble": lambda n: n["ens_edge"],
    "relaxed-top-k": lambda n: n["gap"],
}


@pytest.fixture(scope="module")
def example() -> Trace:
    return Trace.from_json(EXAMPLE)


def run_as(trace: Trace, **config) -> Trace:
    """The same records, as if another method or rule had run (the records carry every rule's statistics)."""
    other = copy.deepcopy(trace)
    other.config.update(config)
    return other


def draft(**fields) -> TokenRecord:
    base = dict(round=0, pos=1, kind="draft", token_id=7, text=" cat", emitted=False, reason="rejected")
    base |= dict(accepted=False, lossless=False, q=0.5, p=0.12, p_argmax=0.6, target_argmax=3, target_rank=3)
    return TokenRecord(**(base | fields))


def trace_of(records: list[TokenRecord], **config) -> Trace:
    cfg = {"method": "relative", "mode": "or", "temperature": 0.0, "K": 5, "top_n": 10, "knob": None} | config
    return Trace(config=cfg, target_id="t", draft_id="d", prompt="", n_prompt_tokens=0, records=records)


def bars(fig: go.Figure) -> list[go.Bar]:
    return [t for t in fig.data if isinstance(t, go.Bar)]


def lines(fig: go.Figure) -> list[float]:
    """The value of each dashed line drawn across a panel."""
    return [t.y[0] for t in fig.data if isinstance(t, go.Scatter) and t.mode == "lines"]


def title(fig: go.Figure) -> str:
    return fig.layout.title.text.replace("<br>", " ")


def message(fig: go.Figure) -> str:
    assert not fig.data
    return fig.layout.annotations[0].text.replace("<br>", " ")


def assert_every_mark_says_what_it_is(fig: go.Figure) -> None:
    for trace in fig.data:
        assert trace.hovertemplate and len(trace.customdata) == len(trace.y), trace.name
        assert all(str(h).strip() for h in trace.customdata), trace.name
    assert fig.layout.width is None  # no fixed width: the figure follows a phone's 390 px


# ---- each relative's test, from known numbers --------------------------------------------------
def test_typical_marks_p_against_the_registrys_bound_at_the_knob():
    rec = draft(rule_stats={"entropy": 2.0})
    for knob, accepts in ((0.09, True), (0.9, False)):  # bound min(0.09, 0.3 e^-2) = 0.041; min(0.9, 0.95 e^-2) = 0.128
        fig = viz.rule_test_figure(trace_of([rec], criterion="typical", knob=knob), rec)
        (bar,) = bars(fig)
        assert list(bar.y) == [pytest.approx(rec.p)]
        assert lines(fig) == [pytest.approx(float(typical_bound(2.0, knob)))]
        assert list(bar.marker.color) == [ACCEPT_COLOR if accepts else REJECT_COLOR]
        assert fig.layout.meta["verdict"] is accepts is decide(rec, "typical", knob)
        assert title(fig).startswith(f"typical acceptance (Medusa), epsilon {knob:g}:")
        assert "p(d) against its bound" in title(fig)
        assert_every_mark_says_what_it_is(fig)


def test_a_run_without_a_knob_is_drawn_at_the_rules_default():
    rec = draft(rule_stats={"entropy": 2.0})
    fig = viz.rule_test_figure(trace_of([rec], criterion="typical"), rec)
    default = RULES["typical"].knob.default
    assert fig.layout.meta["knob"] == default and f"epsilon {default:g}" in title(fig)
    assert lines(fig) == [pytest.approx(float(typical_bound(2.0, default)))]


@pytest.mark.parametrize(("rule", "statistic"), [("fuzzy-js", "js_pq"), ("fuzzy-kl", "kl_qp"), ("fuzzy-tv", "tv")])
def test_fuzzy_draws_the_divergence_against_the_threshold(rule, statistic):
    for value, accepts in ((0.2, True), (0.45, False)):
        rec = draft(rule_stats={statistic: value})
        fig = viz.rule_test_figure(trace_of([rec], criterion=rule, knob=0.3), rec)
        (bar,) = bars(fig)
        assert list(bar.y) == [pytest.approx(value)] and lines(fig) == [pytest.approx(0.3)]
        assert list(bar.marker.color) == [ACCEPT_COLOR if accepts else REJECT_COLOR]
        assert title(fig).startswith(f"{RULES[rule].title}, threshold 0.3:")
        assert_every_mark_says_what_it_is(fig)


def test_an_infinite_kl_is_drawn_at_the_top_and_written_as_infinite():
    rec = draft(rule_stats={"kl_qp": None})  # a null KL stands for +inf (config.NULL_MEANS)
    fig = viz.rule_test_figure(trace_of([rec], criterion="fuzzy-kl", knob=1.0), rec)
    (bar,) = bars(fig)
    assert list(bar.text) == ["∞"] and bar.y[0] == fig.layout.yaxis.range[1]
    assert fig.layout.meta["verdict"] is False


def test_top_k_marks_k_and_the_draft_among_the_targets_top_tokens():
    top = {
        "ids": [3, 5, 7, 9],
        "texts": [" dog", " cow", " cat", " hen"],
        "target": [0.6, 0.2, 0.12, 0.05],
        "draft": [0.1, 0.2, 0.5, 0.1],
        "centroid": [0.5, 0.2, 0.2, 0.1],
        "paths": [[0.5, 0.2, 0.2, 0.1]],
    }
    rec = draft(rule_stats={"order": 3.0}, top=top)
    for k, accepts in ((2, False), (3, True)):
        fig = viz.rule_test_figure(trace_of([rec], criterion="top-k", knob=k), rec)
        place, ranking = bars(fig)
        assert list(place.y) == [3.0] and lines(fig) == [pytest.approx(k), pytest.approx(top["target"][k - 1])]
        assert list(ranking.y) == pytest.approx(top["target"])
        colors = list(ranking.marker.color)
        assert colors[2] == (ACCEPT_COLOR if accepts else REJECT_COLOR)  # the draft token's bar
        assert colors.count(REFERENCE) == 3
        assert fig.layout.meta["knob"] == k and f"target top-k, k {k}:" in title(fig)
        assert_every_mark_says_what_it_is(fig)


def test_mars_shows_the_margin_against_theta_and_the_rank_against_two():
    rec = draft(rule_stats={"margin": 0.95}, target_rank=2)
    fig = viz.rule_test_figure(trace_of([rec], criterion="mars", knob=0.9), rec)
    margin, rank = bars(fig)
    assert list(margin.y) == [pytest.approx(0.95)] and list(rank.y) == [2] and lines(fig) == [0.9, 2]
    assert fig.layout.meta["verdict"] is True and list(margin.marker.color) == [ACCEPT_COLOR]
    calm = viz.rule_test_figure(trace_of([rec], criterion="mars", knob=0.99), rec)
    assert calm.layout.meta["verdict"] is False and list(bars(calm)[0].marker.color) == [REJECT_COLOR]


def test_ears_at_t_above_zero_tests_the_widened_ratio_against_u():
    rec = draft(q=0.5, p=0.2, p_argmax=0.6, rule_stats={"u": 0.5})
    fig = viz.rule_test_figure(trace_of([rec], criterion="ears", knob=0.5, temperature=1.0), rec)
    (bar,) = bars(fig)
    assert list(bar.y) == pytest.approx([0.4, 0.2, 0.6])  # p/q, beta (1 - max p), their sum
    assert lines(fig) == [0.5] and fig.layout.meta["verdict"] is True and "against u" in title(fig)


def test_a_sampled_token_v3_off_its_set_shows_the_edge_too():
    stats = {"p1_d": 0.1, "p1_max": 0.6, "v3_edge": 0.3, "u": 0.4}
    rec = draft(lossless=True, rule_stats=stats)
    fig = viz.rule_test_figure(trace_of([rec], criterion="cascade-token", knob=0.5, temperature=1.0), rec)
    probs, edge = bars(fig)
    assert list(probs.y) == pytest.approx([0.1, 0.6]) and list(edge.y) == pytest.approx([0.3])
    assert lines(fig) == pytest.approx([0.3, 0.5])  # (1 - alpha) max p1, then 1 - alpha
    assert fig.layout.meta["verdict"] is True is decide(rec, "cascade-token", 0.5)


def test_every_relative_decides_as_the_registry_and_draws_the_records_numbers(example):
    drafts = [r for r in example.records if r.kind == "draft"]
    drafts = [
        r for reason in ("exact", "js", "rejected", "skipped") for r in [d for d in drafts if d.reason == reason][:2]
    ]
    assert {r.reason for r in drafts} == {"exact", "js", "rejected", "skipped"}
    recorded = set(viz.rules.numbers(drafts[0]))
    relatives = [name for name, rule in RULES.items() if not rule.needs_paths and set(rule.reads) <= recorded]
    assert set(RULES) - set(relatives) - set(DROPMATCH_CRITERIA) == set()  # the example records every statistic
    for name in relatives:
        run = run_as(example, method="relative", criterion=name, knob=None)
        knob = RULES[name].setting(None)
        for rec in drafts:
            fig = viz.rule_test_figure(run, rec)
            assert fig.layout.meta["rule"] == name and fig.layout.meta["knob"] == knob
            assert fig.layout.meta["verdict"] == decide(rec, name, knob), (name, rec.pos)
            if rec.verdicts and name in rec.verdicts:
                assert fig.layout.meta["verdict"] == rec.verdicts[name]  # what the decoder decided there
            numbers = viz.rules.reading(rec, name, knob, example.config["K"])[1]
            value, first = FIRST_BAR[name](numbers), bars(fig)[0]
            if math.isnan(value):  # MARS's ratio where z1 <= 0: undefined, drawn as nothing
                assert first.y[0] == 0 and first.text[0] == "—"
            else:
                assert first.y[0] == pytest.approx(value)
            assert RULES[name].explain(numbers, knob) in fig.layout.annotations[-1].text.replace("<br>", " ")
            assert_every_mark_says_what_it_is(fig)


# ---- DropMatch, lossless, bonus and correction ------------------------------------------------
def test_a_dropmatch_run_keeps_the_js_and_votes_figures():
    dm = Trace.from_json(STORY / "story_dropmatch.json")
    one_each = {(r.kind, r.reason): r for r in dm.records}  # a draft of each reason, a correction, a bonus
    assert {"correction", "bonus"} <= {kind for kind, _ in one_each}
    for rec in one_each.values():
        ev = viz.evidence_record(dm, rec)
        assert viz.rule_test_figure(dm, rec).to_dict() == viz.js_figure(ev).to_dict()
        assert viz.rule_inputs_figure(dm, rec).to_dict() == viz.votes_figure(ev).to_dict()


def test_a_greedy_lossless_run_shows_p_against_the_top_p():
    ll = Trace.from_json(STORY / "story_lossless.json")
    for rec in [r for r in ll.records if r.kind == "draft"][:12]:
        fig = viz.rule_test_figure(ll, rec)
        (bar,) = bars(fig)
        assert list(bar.y) == [pytest.approx(rec.p)] and lines(fig) == [pytest.approx(rec.p_argmax)]
        assert list(bar.marker.color) == [ACCEPT_COLOR if rec.lossless else REJECT_COLOR]
        assert title(fig).startswith("lossless test, greedy:") and fig.layout.meta["rule"] == "lossless"
        assert_every_mark_says_what_it_is(fig)
        assert "reads no dropout paths" in message(viz.rule_inputs_figure(ll, rec))  # nor a top-N was recorded


def test_a_sampled_lossless_test_shows_the_acceptance_probability_and_u():
    rec = draft(q=0.5, p=0.2, lossless=True, rule_stats={"u": 0.3})
    fig = viz.rule_test_figure(trace_of([rec], method="lossless", temperature=0.7), rec)
    (bar,) = bars(fig)
    assert list(bar.y) == pytest.approx([0.2, 0.5, 0.4]) and lines(fig) == [0.3]  # p, q, min(1, p / q); u
    assert list(bar.marker.color)[-1] == ACCEPT_COLOR and "T 0.7" in title(fig)


def test_a_bonus_token_says_the_target_added_it(example):
    bonus = next(r for r in example.records if r.kind == "bonus")
    for run in (run_as(example, method="relative", criterion="typical"), run_as(example, method="lossless")):
        assert message(viz.rule_test_figure(run, bonus)) == message(viz.message_figure(rule_test.BONUS))
        assert "bonus token" in message(viz.rule_inputs_figure(run, bonus))


def test_a_correction_shows_the_test_of_the_draft_it_replaced(example):
    run = run_as(example, method="relative", criterion="mars", knob=0.9)
    correction = next(r for r in example.records if r.kind == "correction")
    replaced = viz.replaced_draft(example, correction)
    fig = viz.rule_test_figure(run, correction)
    assert fig.layout.meta["token_id"] == replaced.token_id
    assert fig.layout.annotations[-1].text.startswith("This correction replaced the rejected draft")
    inputs = viz.rule_inputs_figure(run, correction)
    ids = inputs.layout.meta["ids"]
    assert ids[inputs.layout.meta["draft_column"]] == replaced.token_id
    assert ids[inputs.layout.meta["emitted_column"]] == correction.token_id
    assert list(bars(inputs)[0].y) == [replaced.top["target"][replaced.top["ids"].index(t)] for t in ids]
    assert_every_mark_says_what_it_is(inputs)


def test_a_position_the_rule_never_checked_shows_the_lossless_test_that_decided():
    rec = draft(lossless=True, accepted=True, reason="exact", target_rank=1, p=0.6, target_argmax=7)  # lazy: no stats
    fig = viz.rule_test_figure(trace_of([rec], criterion="fly", knob=0.3), rec)
    assert fig.layout.meta["rule"] == "lossless" and "not recorded here" in title(fig)
    assert title(fig).startswith("FLy (deferred rejection), theta 0.3:")
    assert "lossless test" in title(fig)


def test_the_inputs_of_a_relative_without_a_top_n_say_it_reads_no_paths():
    rec = draft(rule_stats={"entropy": 2.0})
    text = message(distributions.rule_inputs_figure(trace_of([rec], criterion="typical"), rec))
    assert "typical acceptance (Medusa) reads no dropout paths" in text


# ---- words ----------------------------------------------------------------------------------------
def test_a_relatives_caption_names_its_rule_knob_and_reading(example):
    rec = next(r for r in example.records if r.reason == "rejected")
    run = run_as(example, method="relative", criterion="typical", knob=0.3)
    text = viz.caption(run, rec)
    assert "Rule of this run: **typical acceptance (Medusa)**, epsilon 0.3 (OR the lossless test)." in text
    assert RULES["typical"].explain(viz.rules.reading(rec, "typical", 0.3, 5)[1], 0.3) in text
    correction = next(r for r in example.records if r.kind == "correction" and r.round == rec.round)
    assert "At this draft: " in viz.caption(run, correction)  # the draft it replaced
    cascade = viz.caption(run_as(example, method="relative", criterion="cascade-opt", knob=None), rec)
    assert "alpha 0.5 (its own verification, in place of the lossless test)" in cascade
    for other in (example, run_as(example, method="lossless")):
        assert "Rule of this run" not in viz.caption(other, rec)
    assert "Rule of this run" not in viz.caption(replace(example, config={}), rec)


def test_the_legend_names_the_chosen_rules_output():
    assert "the chosen rule's output" in legend_html() and "DropMatch output" not in legend_html()


# ---- a decoded run at T > 0 (the hermetic tiny pair) -------------------------------------------
@pytest.fixture(scope="module")
def sampled(noisy_pair) -> Trace:
    from dropmatch.config import DecodeConfig
    from dropmatch.decode import generate

    cfg = DecodeConfig(method="relative", criterion="ears", temperature=0.8, evidence=True, max_new_tokens=24)
    return generate(noisy_pair, "def add(a, b):", cfg)


def test_at_t_above_zero_each_rule_decides_as_the_decoder_did(sampled):
    drafts = [r for r in sampled.records if r.kind == "draft"]
    assert any(r.rule_stats.get("u") is not None for r in drafts)  # the round's uniforms were recorded
    for name in RELATIVES:
        run = run_as(sampled, criterion=name, knob=None)
        for rec in drafts[:6]:
            fig = viz.rule_test_figure(run, rec)
            assert fig.layout.meta["verdict"] == rec.verdicts[name], (name, rec.round, rec.pos)
            assert_every_mark_says_what_it_is(fig)
    lossless = run_as(sampled, method="lossless")
    for rec in drafts[:6]:
        fig = viz.rule_test_figure(lossless, rec)
        (bar,) = bars(fig)
        assert list(bar.y) == pytest.approx([rec.p, rec.q, min(1.0, rec.p / rec.q)])
        assert lines(fig) == [pytest.approx(rec.rule_stats["u"])] and fig.layout.meta["verdict"] == rec.lossless
        assert (rec.rule_stats["u"] <= min(1.0, rec.p / rec.q)) == rec.lossless  # the bar against u is the test
