"""Figures and tables of viz/ on the two recorded traces (no model): shapes, marks, values and shared colours."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import plotly.graph_objects as go
import pytest

import viz
from dropmatch.criteria import ACCEPT_REASONS
from dropmatch.metrics import DEFINITIONS, compute
from dropmatch.trace import Trace
from viz.inspector import MAX_COLUMNS, shown_columns
from viz.rounds import MAP_REASONS, reason_grid
from viz.steps import STAGES
from viz.summary import status_line, traces_from_data
from viz.tables import FROM_ONE
from viz.theme import (
    ACCEPT_COLOR,
    DIVERGENCE_LABEL,
    DIVERGENCE_MARK,
    REASON_COLORS,
    REASON_LABELS,
    REJECT_COLOR,
    code,
    one_line,
    phone_title,
)
from viz.tokens import first_divergence

TRACES = Path(__file__).resolve().parent / "data" / "traces"


@pytest.fixture(scope="module")
def dm() -> Trace:
    return Trace.from_json(TRACES / "story_dropmatch.json")


@pytest.fixture(scope="module")
def ll() -> Trace:
    return Trace.from_json(TRACES / "story_lossless.json")


def drafts_with(trace: Trace, **fields):
    return [r for r in trace.records if r.kind == "draft" and all(getattr(r, k) == v for k, v in fields.items())]


def heatmaps(fig: go.Figure) -> list[go.Heatmap]:
    return [t for t in fig.data if isinstance(t, go.Heatmap)]


def scale_colors(heatmap: go.Heatmap) -> list[str]:
    return [c for _, c in heatmap.colorscale[::2]]


# ---- coloured output text ----------------------------------------------------------------------
def test_spans_follow_emitted_records(dm):
    spans, index = viz.spans(dm)
    emitted = [r for r in dm.records if r.emitted]
    assert len(spans) == len(emitted) == len(dm.token_ids)
    assert [text for text, _ in spans] == [r.text for r in emitted]
    assert [label for _, label in spans] == [REASON_LABELS[r.reason] for r in emitted]
    assert [dm.records[i] for i in index] == emitted
    assert "".join(text for text, _ in spans) == dm.text


def test_divergence_marker_points_at_the_parting_token(dm):
    spans, index = viz.spans(dm, divergence=7)
    assert spans[7] == (DIVERGENCE_MARK, DIVERGENCE_LABEL)
    assert index[7] == index[8]
    assert dm.records[index[8]].text == spans[8][0]


@pytest.mark.parametrize("name", sorted(p.name for p in TRACES.glob("*.json")))
def test_every_label_the_outputs_show_has_its_own_colour(name):
    """Each span label of a recorded trace (the divergence mark included) is coloured, and no two labels share a
    colour, so a token's reason can be read off its colour (an unknown label would show uncoloured)."""
    colors = viz.text_color_map()
    trace = Trace.from_json(TRACES / name)
    spans, _ = viz.spans(trace, divergence=min(3, len(trace.token_ids) - 1))
    assert {label for _, label in spans} <= set(colors)
    assert len(set(colors.values())) == len(colors)


def cie_lab(hex_color: str) -> tuple[float, float, float]:
    """sRGB (D65) to CIE L*a*b*: distances there follow what an eye tells apart."""
    rgb = [int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92 for c in rgb]
    xyz = (
        (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
        0.2126 * r + 0.7152 * g + 0.0722 * b,
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883,
    )
    fx, fy, fz = [v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16 / 116 for v in xyz]
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def test_no_two_reasons_look_alike():
    """Each pair of reason colours at least 20 apart in CIE L*a*b* (delta E 1976; a glance tells 10 apart), but the
    two greys of tokens no rule decided (a skipped draft, a target-only token) on purpose; typical once sat 22 from
    naive's yellow, MARS 16 from Fuzzy's teal."""
    grey = {"skipped", "target"}
    for (a, ca), (b, cb) in itertools.combinations(REASON_COLORS.items(), 2):
        if {a, b} != grey:
            assert math.dist(cie_lab(ca), cie_lab(cb)) >= 20, (a, b)


def test_every_reason_an_emitted_token_can_carry_is_coloured():
    """A new rule's reason without a colour would show its tokens uncoloured in the outputs."""
    colors = viz.text_color_map()
    for reason in (*ACCEPT_REASONS, "correction", "bonus", "target"):
        assert REASON_LABELS.get(reason) in colors, reason


def test_first_divergence(dm, ll):
    expected = next((i for i, (a, b) in enumerate(zip(dm.token_ids, ll.token_ids)) if a != b), None)
    assert viz.first_divergence(dm, ll) == expected
    assert viz.first_divergence(ll, copy.deepcopy(ll)) is None
    other = copy.deepcopy(ll)
    other.token_ids[9] += 1
    assert viz.first_divergence(other, ll) == 9
    running = copy.deepcopy(ll)
    running.token_ids = running.token_ids[:20]
    running.finish = None
    assert viz.first_divergence(ll, running) is None  # only shorter so far, not parted
    running.finish = "eos"
    assert viz.first_divergence(ll, running) == 20


def test_caption_of_a_correction_names_the_rejected_draft(dm):
    correction = next(r for r in dm.records if r.kind == "correction")
    replaced = viz.replaced_draft(dm, correction)
    assert replaced is not None and replaced.reason == "rejected" and replaced.pos == correction.pos
    assert viz.evidence_record(dm, correction) is replaced
    text = viz.caption(dm, correction)
    assert "Replaces the rejected draft" in text and replaced.text in text


def test_code_span_survives_backticks():
    assert code("```") == "```` ``` ````"
    assert code("a\nb") == "` a↵b `"


# ---- inspector ---------------------------------------------------------------------------------
def test_the_heatmap_says_when_the_runs_rule_did_not_read_the_paths(dm):
    rec = drafts_with(dm)[0]
    assert "did not read" not in one_line(viz.distribution_heatmap(rec).layout.title.text)
    assert "did not read them" in one_line(viz.distribution_heatmap(rec, read=False).layout.title.text)


def test_distribution_heatmap_rows_and_draft_column(dm):
    K = dm.config["K"]
    for rec in drafts_with(dm)[:6]:
        fig = viz.distribution_heatmap(rec)
        (heat,) = heatmaps(fig)
        assert len(heat.y) == len(heat.z) == K + 3
        assert list(heat.y[-3:]) == ["centroid", "target (unmasked)", "draft q"]
        ids = fig.layout.meta["ids"]
        assert len(heat.z[0]) == len(ids) == min(len(rec.top["ids"]), MAX_COLUMNS)
        assert set(ids) <= set(rec.top["ids"])
        col = fig.layout.meta["draft_column"]
        assert ids[col] == rec.token_id
        assert any(s.x0 == col - 0.5 and s.x1 == col + 0.5 for s in fig.layout.shapes)
        assert heat.z[-1][col] == pytest.approx(rec.q, rel=1e-5)  # the draft row holds q(d)
        assert heat.zmin == 0 and heat.zmax == 1


def test_shown_columns_keep_the_marked_tokens():
    top = {
        "ids": list(range(30)),
        "texts": [str(i) for i in range(30)],
        "draft": [0.0] * 30,
        "target": [1 / (i + 1) for i in range(30)],
        "centroid": [0.0] * 30,
        "paths": [[0.0] * 30],
    }
    cols = shown_columns(top, keep=[29], limit=5)
    assert cols == [0, 1, 2, 3, 29]


def test_heatmap_of_a_correction_marks_both_columns(dm):
    correction = next(r for r in dm.records if r.kind == "correction")
    rejected = viz.evidence_record(dm, correction)
    fig = viz.distribution_heatmap(rejected, correction)
    meta = fig.layout.meta
    assert meta["ids"][meta["emitted_column"]] == correction.token_id
    assert meta["draft_column"] != meta["emitted_column"]
    assert len(fig.layout.shapes) == 2


def test_figures_without_paths_say_why(ll, dm):
    lossless = drafts_with(ll)[0]
    bonus = next(r for r in dm.records if r.kind == "bonus")
    for rec in (lossless, bonus):
        for fig in (viz.distribution_heatmap(rec), viz.js_figure(rec), viz.votes_figure(rec)):
            assert not fig.data
            assert "No dropout paths" in fig.layout.annotations[0].text


def test_js_figure_bars_threshold_and_verdict(dm):
    rejected = drafts_with(dm, reason="rejected")[0]
    accepted = next(r for r in drafts_with(dm) if r.js_draft <= r.threshold)
    for rec, color in ((rejected, REJECT_COLOR), (accepted, ACCEPT_COLOR)):
        fig = viz.js_figure(rec)
        bars, marker = fig.data
        assert list(bars.y) == pytest.approx(rec.js_paths)
        assert marker.y[0] == pytest.approx(rec.js_draft)
        assert marker.marker.color == color
        assert fig.layout.shapes[0].y0 == pytest.approx(max(rec.js_paths))
    assert "reject" in viz.js_figure(rejected).layout.title.text


def test_votes_figure(dm):
    rec = drafts_with(dm, reason="rejected")[0]
    fig = viz.votes_figure(rec)
    votes, draft = fig.data
    assert sum(votes.y) == dm.config["K"]
    assert list(draft.y) == pytest.approx([rec.p, *rec.path_p])
    assert list(draft.text) == [f"rank {r}" for r in [rec.target_rank, *rec.path_rank]]
    assert "majority" in fig.layout.annotations[0].text


# ---- rounds, metrics, steps --------------------------------------------------------------------
def test_reason_heatmap_shape_and_shared_colors(dm, ll):
    gamma = dm.config["gamma"]
    figs = [viz.reason_heatmap(t, "x") for t in (dm, ll)]
    (heat,) = heatmaps(figs[0])
    assert len(heat.z) == len(dm.rounds) and all(len(row) == gamma + 1 for row in heat.z)
    assert scale_colors(heat) == list(MAP_REASONS.values())
    assert scale_colors(heat) == scale_colors(heatmaps(figs[1])[0])
    cells, _, _, _ = reason_grid(dm)
    assert all(row[-1] in ("correction", "bonus") for row in cells)
    names = list(MAP_REASONS)
    assert [[None if c is None else names[c] for c in row] for row in heat.z] == cells
    assert [t.marker.color for t in figs[0].data[1:]] == [REASON_COLORS[r] for r in MAP_REASONS]


def test_acceptance_figure_matches_metrics(dm, ll):
    fig = viz.acceptance_figure({"DropMatch": dm, "lossless": ll})
    m = compute(dm)
    rates, hist = fig.data[0], fig.data[1]
    assert list(rates.y) == pytest.approx(m["per_position"])
    assert sum(hist.y) == len(dm.rounds)
    assert sum(j * h for j, h in enumerate(hist.y)) == m["accepted_drafts"]


def test_metrics_frame(dm, ll):
    df = viz.metrics_frame({"DropMatch": dm, "lossless": ll})
    assert list(df.columns) == ["metric", "DropMatch", "lossless", "definition"]
    tau = df[df.metric.str.startswith("τ,")].iloc[0]
    assert float(tau["DropMatch"]) == pytest.approx(compute(dm)["tau"], abs=0.01)
    assert df[df.metric.str.startswith("speedup")].iloc[0]["lossless"] == "1"
    assert set(df.definition) - set(DEFINITIONS.values()) == {FROM_ONE["first_divergence"]}
    parts = df[df.metric == "outputs part at token"].iloc[0]
    cut = first_divergence(dm, ll)
    assert parts["DropMatch"] == str(cut + 1)
    assert f"at token {cut + 1}" in status_line({"DropMatch": dm, "lossless": ll}, "Done")  # the same count
    one = viz.metrics_frame({"DropMatch": dm, "lossless": None})
    assert list(one.columns) == ["metric", "DropMatch", "lossless", "definition"]
    assert set(one["lossless"]) == {"—"}


def test_round_figure_reveals_stages(dm):
    K = dm.config["K"]
    first = viz.round_figure(dm, 0, 0)
    (heat,) = heatmaps(first)
    rules = len(drafts_with(dm)[0].verdicts)
    assert len(heat.y) == 1 + K + 1 + rules + 2
    assert all(v is None for row in heat.z[1:] for v in row)
    last = heatmaps(viz.round_figure(dm, 1, len(STAGES) - 1))[0]
    emitted_row = last.z[-1]
    assert sum(v is not None for v in emitted_row) == sum(r.emitted for r in dm.round_records(1))


def test_round_story_and_move(dm):
    t = next(r.round for r in dm.records if r.kind == "correction")  # a round that ends in a rejection
    story = viz.round_story(dm, t, 4)
    assert f"Round {t + 1} of {len(dm.rounds)}" in story and "rejection" in story and "correction" in story
    assert viz.move(dm, 0, 0, -1) == (0, 0)
    assert viz.move(dm, 0, 4, 1) == (1, 0)
    assert viz.move(dm, len(dm.rounds) - 1, 4, 1) == (len(dm.rounds) - 1, 4)
    relative = copy.deepcopy(dm)
    relative.config.update(method="relative", criterion="typical", knob=0.09)  # its recorded paths only illustrate
    told = viz.round_story(relative, t, 4)
    assert "typical reads the unmasked target" in told and "dropout masks" not in told


def test_status_and_trace_bundles(dm, ll):
    line = status_line({"DropMatch": dm, "lossless": ll}, "Done", 1.5)
    assert f"τ = {compute(dm)['tau']:.2f}" in line and f"τ = {compute(ll)['tau']:.2f}" in line
    assert "identical" in status_line({"DropMatch": ll, "lossless": ll}, "Done", 1.5)
    bundle = traces_from_data(json.loads(json.dumps({"DropMatch": dm.to_dict(), "lossless": ll.to_dict()})))
    assert set(bundle) == {"DropMatch", "lossless"} and bundle["DropMatch"].token_ids == dm.token_ids
    assert set(traces_from_data(ll.to_dict())) == {"lossless"}
    broken = {"records": [{"round": 0}], "config": {}, "target_id": "x", "prompt": "", "rounds": []}
    for bad in ([1, 2], {"a": 1}, broken):
        with pytest.raises(ValueError, match="not a DropMatch trace"):
            traces_from_data(bad)


def test_explanation_and_glossary():
    text = viz.how_it_works("https://arxiv.org/abs/2603.03333")
    assert "](https://arxiv.org/abs/2603.03333)" in text and "$$" in text and "js+majority" in text
    glossary = viz.glossary()
    assert all(f"`{key}`" in glossary for key in DEFINITIONS)


def test_viz_imports_no_ui_and_no_model():
    code_ = "import sys, viz; assert 'gradio' not in sys.modules; assert 'transformers' not in sys.modules"
    subprocess.run([sys.executable, "-c", code_], check=True, cwd=Path(__file__).resolve().parents[1])


def test_caption_of_a_relaxed_acceptance_names_its_token_kind(dm):
    from dropmatch.metrics import relaxed

    shown = [r for r in dm.records if r.emitted and relaxed(dm, r)]
    assert shown, "the recorded DropMatch trace holds relaxed acceptances"
    for rec in shown:
        assert "Token kind: " in viz.caption(dm, rec)
    exact = next(r for r in dm.records if r.reason == "exact" and r.emitted)
    assert "Token kind" not in viz.caption(dm, exact)


def test_token_kind_reads_the_output_as_python_and_as_prose():
    from dataclasses import replace as swap

    from dropmatch.trace import TokenRecord, Trace

    texts = ["    return", " total", " +", " 1"]
    records = [
        TokenRecord(round=0, pos=i + 1, kind="draft", token_id=i, text=t, emitted=True, reason="js")
        for i, t in enumerate(texts)
    ]
    trace = Trace(config={}, target_id="t", draft_id="d", prompt="def f(total):\n", n_prompt_tokens=4, records=records)
    kinds = [viz.token_kind(trace, r) for r in records]
    assert kinds == [
        "keywords (as Python; as prose: words)",
        "identifiers (as Python; as prose: words)",
        "punctuation and operators",
        "numbers",  # a digit is a number in both readings
    ]
    assert viz.token_kind(swap(trace, prompt=""), records[2]) == "punctuation and operators"


# ---- contrast, marks beyond colour, the app's word tables ----------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "ratio"), [("#000000", "#ffffff", 21.0), ("#777777", "#ffffff", 4.48), ("#c4b5fd", "#c4b5fd", 1.0)]
)
def test_contrast_is_wcags_ratio(a, b, ratio):
    from viz.theme import contrast

    assert contrast(a, b) == pytest.approx(ratio, abs=0.01) and contrast(b, a) == pytest.approx(ratio, abs=0.01)


def test_every_token_colour_reads_at_aa_in_both_schemes():
    from viz.theme import DIVERGENCE_COLOR, contrast, ink, rgb, text_color_map, token_marks_css

    css = token_marks_css()
    for label, color in text_color_map().items():
        assert contrast(ink(color), color) >= 4.5, f"{label}: {color}"
        # on a dark page the token takes its full colour and that ink (Gradio's is black at half opacity)
        assert f'.dark .dm-output .token[style*="({rgb(color)},"] {{ background: {color} !important; }}' in css
    assert ink(DIVERGENCE_COLOR) == "#ffffff"  # the divergence mark: white on its near-black swatch, in both schemes
    divergence = f'\n.dm-output .token[style*="({rgb(DIVERGENCE_COLOR)},"] {{ background: {DIVERGENCE_COLOR} !important'
    assert divergence in css
    assert "::after { font-size: 0.65em; vertical-align: super; margin-left: 1px; color: inherit;" in css


def test_the_reason_map_carries_a_mark_beside_each_colour(dm):
    from viz.rounds import TEXT_ROW_LIMIT
    from viz.theme import CELL_MARKS

    fig = viz.reason_heatmap(dm, "x")
    (heat,) = heatmaps(fig)
    cells, text, _, _ = reason_grid(dm)
    marked = 0
    for crow, trow, shown_row in zip(cells, text, heat.text):
        for reason, token, shown in zip(crow, trow, shown_row):
            if reason in CELL_MARKS:
                assert shown == f"{token} <sup>{CELL_MARKS[reason]}</sup>", (reason, shown)
                marked += 1
            else:
                assert shown == token  # an exact match (and an empty cell) carries no mark
    assert marked >= 10 and {"js", "correction", "rejected"} <= {c for row in cells for c in row}
    names = [t.name for t in fig.data[1:]]
    assert "semantic: JS (J)" in names and "rejected draft (✗)" in names and "exact match" in names
    long = copy.deepcopy(dm)
    long.records = [dataclasses.replace(r, round=r.round + k * 100) for k in range(8) for r in dm.records]
    long.rounds = [dataclasses.replace(r, round=r.round + k * 100) for k in range(8) for r in dm.rounds]
    assert len({r.round for r in long.records}) > TEXT_ROW_LIMIT
    (heat,) = heatmaps(viz.reason_heatmap(long, "x"))
    assert {t for row in heat.text for t in row} <= {"", *(f"<sup>{m}</sup>" for m in CELL_MARKS.values())}
    assert "<sup>J</sup>" in {t for row in heat.text for t in row}  # a long run: the marks alone, still there


def test_word_table_heads_in_plain_words_with_each_definition_on_hover():
    import pandas as pd

    from viz.tables import word_table

    df = pd.DataFrame({"claim": ["tau gain"], "this sweep": ["+14%"], "kept": [True], "tau_pooled": [4.8012]})
    about = {"tau_pooled": "sum N / sum T", "claim": "what is compared"}.get
    words = {"tau_pooled": "pooled τ"}
    shown = word_table(df, about, lambda c: words.get(c, c), {"kept"}, stack=True)
    assert '<th title="what is compared">claim</th>' in shown and "<th>this sweep</th>" in shown
    assert '<th title="tau_pooled: sum N / sum T">pooled τ</th>' in shown and "<th class=dm-wide>kept</th>" in shown
    assert '<td data-label="pooled τ">4.8</td>' in shown and '<td data-label="kept" class=dm-wide>yes</td>' in shown
    assert 'class="dm-table dm-stack"' in shown and 'class="dm-table"' in word_table(df, lambda c: None)


def test_the_recoloured_map_and_the_step_figure_read_without_their_colours(dm):
    """Every cell of a recoloured map carries its agreement's mark (and the legend names it); a step's yes / no cells
    and its reasons carry theirs."""
    from viz.rules import AGREEMENT_MARKS, rule_heatmap
    from viz.steps import STEP_MARKS

    fig = rule_heatmap(dm, "typical", None, "x")
    (heat,) = heatmaps(fig)
    agreements = list(AGREEMENT_MARKS)
    shown = [
        (heat.z[i][j], t) for i, row in enumerate(heat.text) for j, t in enumerate(row) if heat.z[i][j] is not None
    ]
    assert shown and all(t.endswith(f"<sup>{AGREEMENT_MARKS[agreements[z]]}</sup>") for z, t in shown)
    assert {t.name for t in fig.data[1:]} == {f"{a} ({m})" for a, m in AGREEMENT_MARKS.items()}
    marks = {t.rsplit("<sup>", 1)[-1] for row in heatmaps(viz.round_figure(dm, 0))[0].text for t in row if "<sup>" in t}
    assert marks and marks <= {f"{m}</sup>" for m in STEP_MARKS.values()}


def test_a_message_figure_reads_on_a_phone():
    """The message is wrapped to lines a 350 px figure holds at its font (40 characters) and centred on the figure
    (the figure draws no axes, so its margins are even: the shared left margin would push the text right)."""
    message = "No cells beside lossless in this sweep yet: record lossless and one rule on the same problems."
    fig = viz.message_figure(message, "A title")
    lines = fig.layout.annotations[0].text.split("<br>")
    assert len(lines) > 1 and max(map(len, lines)) <= 40
    assert " ".join(lines) == message
    assert fig.layout.margin.l == fig.layout.margin.r


def test_a_title_is_wrapped_to_fit_a_phone_and_the_plot_keeps_its_height(dm):
    """A title line longer than a phone's plot holds (40 characters; 56 for a <sup> line) breaks at ' · ' where it
    can, else at spaces; every word stays, a <sup> line stays one on each of its lines, and the figure grows by the
    lines it added, so the plot area is what the caller asked for. Short titles and lines with other markup are left
    as written."""
    long = "Top tokens under each head · draft ' was' · 16 of 30 shown"
    sub = "one curve per rule along its knob; shaded: within 2/164 of lossless's pass@1"
    title, extra = phone_title(f"{long}<br><sup>{sub}</sup>")
    lines = title.split("<br>")
    assert lines[:2] == ["Top tokens under each head ·", "draft ' was' · 16 of 30 shown"]
    assert all(line.startswith("<sup>") and line.endswith("</sup>") for line in lines[2:]) and len(lines) == 4
    assert max(len(line) for line in lines[:2]) <= 40 and max(len(line) - 11 for line in lines[2:]) <= 56
    assert one_line(title) == f"{long} {sub}"  # every word kept, in order
    assert extra == 20 + 14
    step_title = "Round 1 of 11 · step 5/5: correction / bonus"
    assert phone_title(step_title)[0] == "Round 1 of 11 ·<br>step 5/5: correction / bonus"
    for kept in ("Mean acceptance length tau vs K", "<b>a bold line that is long enough to need a break</b>"):
        assert phone_title(kept) == (kept, 0)
    rng = random.Random(0)  # any title of short words: every line fits, and the lines give the title back
    for _ in range(300):
        words = [rng.choice(["a", "rule", "p_drop", "0.31", "·", "accept / reject", "typical"]) for _ in range(20)]
        text = " ".join(words).replace("· ·", "·").strip(" ·")
        wrapped = phone_title(text)[0]
        assert one_line(wrapped) == text and max(map(len, wrapped.split("<br>"))) <= 40, text
    code = "Top tokens under each head · draft ' <=' · 16 of 30 shown"  # a token's '<' is text, not markup
    assert phone_title(code)[0] == "Top tokens under each head ·<br>draft ' <=' · 16 of 30 shown"
    short, wrapped = (viz.theme.style(go.Figure(), t, 300, top=72) for t in ("Short", long))
    assert (short.layout.height, short.layout.margin.t) == (300, 72)
    assert (wrapped.layout.height, wrapped.layout.margin.t) == (320, 92)
    step = viz.round_figure(dm, 0)  # the step-through's last stage: its title ran past a phone's plot
    assert step.layout.title.text.count("<br>") == 1 and max(map(len, step.layout.title.text.split("<br>"))) <= 40
