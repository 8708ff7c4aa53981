"""Sweep figures and the HTML report, built from a small sweep recorded with the real embedded pair."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest

from dropmatch.lab.claims import paper_comparison
from dropmatch.lab.paper import PAPER, PAPER_COLUMN
from dropmatch.lab.report import VERDICT_NOTE, definition, render, table_html, write_outputs, write_report
from dropmatch.lab.suites import load_suite
from dropmatch.lab.sweep import load_sweep
from dropmatch.tables.summary import per_category, summary
from dropmatch.tables.tradeoff import centre, held, infer_centre, matched_table
from dropmatch.tables.verdict import against_lossless, greedy, shown_rules
from viz.sweep import FIGURES, label, relevant
from viz.verdict import verdict_tables

RECORDED = Path(__file__).parents[1] / "data" / "sweep_small"


@pytest.fixture(scope="module")
def table():
    return load_sweep(RECORDED)


def test_recorded_sweep_loads_as_the_tidy_table(table):
    assert set(table["suite"]) == {"mini_spec_bench", "humaneval"}
    assert table["key"].is_unique and table["tau"].ge(1).all()
    assert centre(table[table["suite"] == "mini_spec_bench"]) == {
        "gamma": 5,
        "K": 5,
        "p_drop": 0.3,
        "criterion": "js+majority",
    }
    exact = table[(table["method"] == "dropmatch") & (table["p_drop"] == 0)]
    assert (exact["equal_share"] == 1).all()  # p_drop = 0 in OR mode reproduces lossless


@pytest.mark.parametrize("name", list(FIGURES))
@pytest.mark.parametrize("suite", ["mini_spec_bench", "humaneval"])
def test_every_figure_builds_from_the_recorded_sweep(table, name, suite):
    fig = FIGURES[name](table[table["suite"] == suite])
    assert isinstance(fig, go.Figure) and fig.layout.title.text
    has_data = len(fig.data) > 0
    no_score = name == "score_vs_tau" and suite != "humaneval"
    assert has_data != no_score  # an explained empty figure instead of an error
    if no_score:
        assert "no task score" in fig.layout.annotations[0].text


def test_figure_values_are_medians_of_the_table(table):
    part = table[table["suite"] == "mini_spec_bench"]
    fig = FIGURES["tau_vs_p_drop"](part)
    k5 = next(t for t in fig.data if t.name == "5")
    expected = (
        part[(part["method"] == "dropmatch") & (part["K"] == 5) & (part["gamma"] == 5)]
        .groupby("p_drop")["tau"]
        .median()
    )
    assert list(k5.x) == list(expected.index) and list(k5.y) == pytest.approx(list(expected))
    faithful = FIGURES["lossiness_vs_tau"](part)
    points = {name: t for t in faithful.data for name in t.hovertext}
    assert points["lossless γ5"].y[0] == 1.0  # lossless equals itself
    zero = list(points["DropMatch γ5 K5 p0 js+majority"].hovertext).index("DropMatch γ5 K5 p0 js+majority")
    assert points["DropMatch γ5 K5 p0 js+majority"].y[zero] == 1.0  # p_drop 0 in OR mode is lossless
    assert {t.name for t in faithful.data} == {"lossless", "centre", "p_drop", "K", "gamma"}
    scored = FIGURES["score_vs_tau"](table[table["suite"] == "humaneval"])
    assert {n for t in scored.data for n in t.hovertext} == {"lossless γ5", "DropMatch γ5 K5 p0.3 js+majority"}
    assert {n for t in scored.data for n in t.text} == {"lossless", "DropMatch"}  # nothing varies: short labels


def test_relevant_figures_skip_what_the_sweep_did_not_vary(table):
    suite = table[table["suite"] == "mini_spec_bench"]
    assert relevant(suite) == ["tau_vs_p_drop", "tau_vs_k", "speedup_vs_gamma", "lossiness_vs_tau"]  # no bars
    assert relevant(table[table["suite"] == "humaneval"]) == ["speedup_vs_gamma", "score_vs_tau", "lossiness_vs_tau"]


def test_figures_accept_an_empty_table(table):
    for figure in FIGURES.values():
        assert isinstance(figure(table.iloc[:0]), go.Figure)
    assert label({"method": "lossless", "gamma": 8.0}) == "lossless γ8"


def test_paper_comparison_quotes_the_paper_and_computes_ours(table):
    comp = paper_comparison(table)
    assert list(comp["claim"]) == [claim for claim, _, _ in PAPER.values()]
    gain = comp.loc[0, "this sweep"]
    assert "mini_spec_bench: γ 5:" in gain and "+10%" not in gain  # ours is measured, the paper's is quoted
    assert comp.loc[0, PAPER_COLUMN] == "about +10%"
    part = table[table["suite"] == "humaneval"]
    base = part[part["method"] == "lossless"]["score"].mean()
    assert f"pass@1 {base:.1%}" in comp.loc[3, "this sweep"]


def test_paper_comparison_tests_a_problems_seeds_together(table):
    part = table[table["suite"] == "humaneval"]
    one = paper_comparison(part).loc[3, "this sweep"]
    two = paper_comparison(pd.concat([part.assign(seed=0), part.assign(seed=1)])).loc[3, "this sweep"]
    p_one = re.search(r"exact McNemar p = ([\d.]+)", one).group(1)
    n = part["prompt_id"].nunique()
    assert f"{n} problems x 2 seeds" in two and f"seeds kept together, = {p_one})" in two  # a copy adds no evidence


def test_short_labels_name_only_what_varies(table):
    part = table[table["suite"] == "humaneval"]
    dm = part[part["method"] == "dropmatch"]
    swept = pd.concat([part, dm.assign(p_drop=0.5, key=dm["key"] + "|0.5")])
    fig = FIGURES["score_vs_tau"](swept)
    assert {n for t in fig.data for n in t.text} == {"lossless", "p0.3", "p0.5"}
    gated = pd.concat([swept, dm.assign(span_gate=True, key=dm["key"] + "|gated")])  # gated DropMatch at the centre
    fig = FIGURES["score_vs_tau"](gated)
    assert {n for t in fig.data for n in t.text} == {"lossless", "p0.3", "p0.5", "p0.3 gated"}
    assert {t.name for t in FIGURES["lossiness_vs_tau"](gated).data} == {"lossless", "centre", "p_drop", "span gate"}


def test_labels_write_a_pair_of_knobs_and_a_rule_without_one(table):
    """relaxed top-K/δ's knob is a pair ("8/0.5"), the tie-only control has none (NaN): both label their points."""
    part = table[table["suite"] == "humaneval"]
    dm = part[part["method"] == "dropmatch"]
    relative = dm.assign(method="relative", K=float("nan"), p_drop=float("nan"))
    pair = relative.assign(criterion="relaxed-top-k", knob="8/0.5", key=dm["key"] + "|topk")
    control = relative.assign(criterion="tie-only", knob=float("nan"), key=dm["key"] + "|tie")
    fig = FIGURES["score_vs_tau"](pd.concat([part, pair, control]))
    shown = {(t.text[i], t.hovertext[i]) for t in fig.data for i in range(len(t.text))}
    assert ("relaxed-top-k 8/0.5", "relaxed-top-k γ5 K/delta=8/0.5") in shown
    assert ("tie-only", "tie-only γ5") in shown


def test_centre_prefers_the_papers_setting_on_a_tie(table):
    part = table[table["suite"] == "humaneval"]
    dm = part[part["method"] == "dropmatch"]
    for p_drop in (0.1, 0.5):  # as many rows at 0.1 and at 0.5 as at the paper's 0.3
        part = pd.concat([part, dm.assign(p_drop=p_drop, key=dm["key"] + f"|{p_drop}")])
    assert infer_centre(part)["p_drop"] == 0.3
    assert infer_centre(part[part["p_drop"] != 0.3])["p_drop"] == 0.1  # without it: the smallest of the tied values
    assert centre(part[part["p_drop"] != 0.3])["p_drop"] == 0.3  # rows of a loaded sweep hold the centre it had


def test_paper_comparison_names_the_criteria_a_sweep_varied(table):
    part = table[table["suite"] == "mini_spec_bench"]
    centre_rows = held(part)  # DropMatch at the centre: gamma 5, K 5, p_drop 0.3, js+majority
    naive = centre_rows.assign(criterion="naive", tau=centre_rows["tau"] + 1)
    row = paper_comparison(pd.concat([part, naive])).set_index("claim").iloc[-1]
    expected = f"{centre_rows['tau'].median():.2f} / {centre_rows['tau'].median() + 1:.2f}"
    assert row["this sweep"].startswith(f"mini_spec_bench: {expected} for criterion js+majority / naive")
    assert paper_comparison(part).iloc[-1]["this sweep"] == "not in this sweep"


def test_report_is_one_self_contained_html_file(table, tmp_path):
    path = write_report(RECORDED, tmp_path / "report.html")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and text.endswith("</html>")
    assert text.count("window.PlotlyConfig") == 1  # plotly.js inlined once
    assert "<script src=" not in text and 'src="https://cdn.plot.ly' not in text
    # the relevant figures of each suite, and HumanEval's verdict curves (its cells predate the relaxations' record)
    assert text.count('class="plotly-graph-div"') == 4 + 3 + 1
    assert "The verdict" in text and "Where relaxation happens" not in text
    assert "Comparison with the paper" in text and "about +10%" in text
    assert render(table, {}).count("<h2>Suite:") == 2
    assert "<b>disagreement</b>" not in text  # no reasons kept: no round columns, so none defined
    kept = render(table.assign(reasons="exact exact correction"), {})  # every cell kept its reasons
    assert "<b>disagreement</b>" in kept and "<b>follow_on</b>" in kept


def test_rewriting_the_outputs_of_a_sweep_changes_no_file(tmp_path):
    import shutil

    shutil.copytree(RECORDED, tmp_path / "sweep")
    write_outputs(tmp_path / "sweep")
    first = {p.name: p.read_bytes() for p in (tmp_path / "sweep" / "figures").iterdir()}
    write_outputs(tmp_path / "sweep")
    assert first and first == {p.name: p.read_bytes() for p in (tmp_path / "sweep" / "figures").iterdir()}


def test_the_report_renders_the_tables_the_tables_modules_compute(table):
    """report.py computes no table: each one in the HTML is table_html of what tables.summary, tables.tradeoff and
    claims return for the same rows, and the verdict is the app's own composition of it."""
    page = render(table, {})
    assert table_html(paper_comparison(table)) in page
    for _, part in table.groupby("suite"):
        assert table_html(summary(part).drop(columns=["suite"])) in page
        assert table_html(per_category(part)) in page
    relatives = load_sweep(Path(__file__).parents[2] / "assets" / "relatives")
    part = relatives[relatives["suite"] == "humaneval"]
    page = render(part, {})
    shown = shown_rules(against_lossless(part), greedy(part))  # EARS, typical, MARS: "(greedy reading)"
    verdict, _ = verdict_tables(part, definition, VERDICT_NOTE)  # the app's composition, in plain words
    assert len(shown) and verdict in page and "typical (greedy reading)" in verdict  # in the verdict, once
    assert page.count("Task score against lossless") == 0 and page.count("Every setting against lossless") == 1
    assert len(matched_table(part)) and table_html(matched_table(part)) in page


def test_a_suite_recorded_in_parts_reports_its_whole_settings_and_lists_the_rest():
    verdict_dir = Path(__file__).parents[2] / "assets" / "verdict"
    part = load_sweep(verdict_dir)
    first = part[part["method"] == "lossless"].head(3)
    partial = first.assign(method="relative", criterion="typical", knob=0.99, key=first["key"] + "|partial")
    page = render(pd.concat([part, partial]), {})
    assert "typical 0.99 (3 of 164)" in page  # named as still being recorded
    assert page.count("typical=0.99") == 0 and "typical γ5 epsilon=0.99" not in page  # in no figure


def test_a_suites_first_problems_are_its_own_first_and_read_as_in_the_whole_table():
    """A limit keeps the suite's first problems in the suite's order (not the order Ray recorded them in), every
    setting's rows of them, and each row as the whole recording reads it (speed ratios and all)."""
    verdict_dir = Path(__file__).parents[2] / "assets" / "verdict"
    ids = [item.id for item in load_suite("humaneval", 20)]
    first, whole = load_sweep(verdict_dir, limit=20), load_sweep(verdict_dir)
    assert set(first["prompt_id"]) == set(ids)
    expected = whole[whole["prompt_id"].isin(ids)]
    pd.testing.assert_frame_equal(
        first.sort_values("key").reset_index(drop=True), expected.sort_values("key").reset_index(drop=True)
    )


def test_a_report_on_the_first_problems_keeps_the_whole_report_and_refuses_a_suite_file(tmp_path):
    with pytest.raises(ValueError, match="mini_spec_bench"):
        load_sweep(RECORDED, limit=2)  # a suite file's order does not travel with its cells
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_bytes((RECORDED / "sweep.json").read_bytes())
    lines = (RECORDED / "cells.jsonl").read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if json.loads(line)["suite"] == "humaneval"]
    (sweep / "cells.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    path = write_report(sweep, limit=2)
    assert path == sweep / "report_first2.html" and not (sweep / "report.html").exists()
    text = path.read_text(encoding="utf-8")
    assert "first 2 problems" in text and "Suite: humaneval (2 prompts)" in text


ASSETS = Path(__file__).parents[2] / "assets"
INPUTS = ("cells.jsonl", "baselines.jsonl", "sweep.json")  # what a sweep directory records; the rest is written


@pytest.mark.parametrize("folder", sorted(p.parent.name for p in ASSETS.glob("*/cells.jsonl")))
def test_a_recorded_sweeps_written_files_are_what_its_cells_give_now(folder, tmp_path):
    """The Analysis tab offers a recorded sweep's report and table.csv for download, and docs link its figures: a
    file written before a change of the code (or before more cells were recorded) would show other numbers or miss
    columns the tab has. Each is written again from the directory's records and compared byte for byte. A directory
    being recorded fails here until its outputs are rewritten with the cells (`report.write_outputs`)."""
    source = ASSETS / folder
    for name in INPUTS:
        if (source / name).exists():
            (tmp_path / name).write_bytes((source / name).read_bytes())
    write_outputs(tmp_path)
    if (source / "report.html").exists():
        write_report(tmp_path)
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file() and p.name not in INPUTS)
    kept = sorted(str(p.relative_to(source)) for p in source.rglob("*") if p.is_file() and p.name not in INPUTS)
    assert kept == written, "a written file is missing, or one is kept that the records no longer give"
    stale = [name for name in written if (tmp_path / name).read_bytes() != (source / name).read_bytes()]
    assert not stale, f"assets/{folder}: {stale} differ from what its records give; rewrite them"


def test_the_settings_table_names_the_centre_its_tables_hold_and_defines_every_column(table):
    """A directory recorded by several commands keeps the last command's design in sweep.json; a last command run at
    another centre (span-gated DropMatch at p_drop 0.31) must not relabel the centre the tables hold (0.3). Every
    column of the table has its definition on hover."""
    manifest = json.loads((RECORDED / "sweep.json").read_text(encoding="utf-8"))
    manifest["humaneval"]["design"]["centre"] = {"gamma": 5, "K": 5, "p_drop": 0.31, "criterion": "js+majority"}
    page = render(table, manifest)
    settings = page.split("<h2>Settings</h2>")[1].split("</table>")[0]
    rows = [re.findall(r"<td>([^<]*)</td>", row) for row in settings.split("<tr>")]
    rows = {cells[0]: cells for cells in rows if cells}
    assert "gamma=5 K=5 p_drop=0.3 criterion=js+majority" in rows["humaneval"]
    assert not any("p_drop=0.31" in cell for cell in rows["humaneval"])
    headers = re.findall(r"<th( title=\"[^\"]+\")?>([^<]+)</th>", settings)
    assert "centre" in [name for _, name in headers]
    assert [name for title, name in headers if not title] == []
