"""Sweeps: grid parsing, OFAT and grid designs, resume after an interruption, the tidy table, the real runner."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from dropmatch.cli import build_parser
from dropmatch.lab import sweep
from dropmatch.lab.report import render
from dropmatch.lab.suites import DEFAULT_SUITE, SuiteItem, load_suite
from dropmatch.lab.sweep import (
    CELLS,
    COLUMNS,
    DERIVED,
    PairRunner,
    Setting,
    check_manifest,
    design_settings,
    ids_divergence,
    load_mask_seeds,
    load_sweep,
    merge_designs,
    parse_centre,
    parse_rule,
    parse_values,
    read_baselines,
    read_cells,
    run_sweep,
    score_row,
    seed_free_reruns,
)
from dropmatch.tables import tradeoff
from dropmatch.tables.summary import rows_at, summary
from dropmatch.tables.tradeoff import centre, setting_points
from viz.sweep import relevant

PAPER_GRID = {"p_drop": [0, 0.1, 0.2, 0.3, 0.4, 0.5], "K": [1, 3, 5, 8], "gamma": [3, 5, 8]}


@pytest.mark.parametrize(
    "text, factor, expected",
    [
        ("0,0.1,0.5", "p_drop", [0.0, 0.1, 0.5]),
        (" 0.3 , 0.3,0 ", "p_drop", [0.3, 0.0]),
        ("1,3,5,8", "K", [1, 3, 5, 8]),
        ("5", "gamma", [5]),
        ("js+majority,naive", "criterion", ["js+majority", "naive"]),
        ("lossless,dropmatch", "method", ["lossless", "dropmatch"]),
    ],
)
def test_parse_values(text, factor, expected):
    assert parse_values(text, factor) == expected


@pytest.mark.parametrize(
    "text, factor, message",
    [
        ("0,abc", "p_drop", r"p_drop must lie in \[0, 1\); got 'abc'"),
        ("1", "p_drop", r"p_drop must lie in \[0, 1\); got '1'"),
        ("-0.1", "p_drop", r"p_drop must lie in \[0, 1\)"),
        ("nan", "p_drop", r"p_drop must lie in \[0, 1\)"),
        ("2.5", "K", r"K must be an integer in \[1, 32\]; got '2.5'"),
        ("0", "K", r"K must be an integer in \[1, 32\]"),
        ("17", "gamma", r"gamma must be an integer in \[1, 16\]"),
        ("0.1,,0.2", "p_drop", "comma-separated"),
        ("", "gamma", "comma-separated"),
        ("bogus", "criterion", "not one of"),
        ("target", "method", "not one of"),
        ("1", "temperature", "unknown factor"),
    ],
)
def test_bad_values_raise_clear_errors(text, factor, message):
    with pytest.raises(ValueError, match=message):
        parse_values(text, factor)


def test_parse_centre():
    assert parse_centre("gamma=8, p_drop=0.2") == {"gamma": 8, "K": 5, "p_drop": 0.2, "criterion": "js+majority"}
    for bad in ("gamma", "depth=3", "K=0"):
        with pytest.raises(ValueError):
            parse_centre(bad)


def test_ofat_varies_one_factor_at_a_time_around_the_paper_setting():
    settings = design_settings(PAPER_GRID, "ofat")
    lossless = [s for s in settings if s.method == "lossless"]
    dm = [s for s in settings if s.method == "dropmatch"]
    assert [s.gamma for s in lossless] == [5, 3, 8] and settings[:3] == lossless  # baselines first
    assert len(dm) == len(set(dm)) == 11  # centre + 5 other p_drop + 3 other K + 2 other gamma
    assert dm[0] == Setting("dropmatch", 5, 5, 0.3, "js+majority")
    for s in dm:  # every point differs from the centre in at most one factor
        assert sum([s.gamma != 5, s.K != 5, s.p_drop != 0.3, s.criterion != "js+majority"]) <= 1


def test_grid_is_the_cross_product_and_methods_filter():
    assert len(design_settings(PAPER_GRID, "grid")) == 3 + 6 * 4 * 3
    assert {s.method for s in design_settings(PAPER_GRID, "grid", ["lossless"])} == {"lossless"}
    assert len(design_settings({}, "ofat", ["dropmatch"])) == 1
    with pytest.raises(ValueError, match="design"):
        design_settings({}, "random")


def test_keys_are_unique_and_configs_valid():
    settings = design_settings(PAPER_GRID, "grid")
    assert len({s.key("s", "p1") for s in settings}) == len(settings)
    assert Setting("lossless", 5).key("s", "p1") == "s|p1|lossless|g5"
    config = Setting("dropmatch", 8, 3, 0.1, "naive").config(32, seed=7)
    assert (config.gamma, config.K, config.p_drop, config.criterion, config.max_new_tokens, config.seed) == (
        8,
        3,
        0.1,
        "naive",
        32,
        7,
    )


ITEMS = [SuiteItem("a", "qa", "p"), SuiteItem("b", "code", "q")]


def fake_runner(calls: list, fail_after: int | None = None):
    """A cheap runner: tau grows with p_drop; it can be 'interrupted' after some cells."""

    def run(item, setting):
        if fail_after is not None and len(calls) >= fail_after:
            raise KeyboardInterrupt
        calls.append(setting.key("s", item.id))
        tau = 3.0 + 4 * (setting.p_drop or 0)
        return {
            "tau": tau,
            "n_tokens": 12,
            "target_forwards": 12 / tau,
            "tokens_per_s": 10.0 * tau,
            "output_ids": "1 2 3" if setting.method == "lossless" else "1 9 3",
            "score": None,
        }

    return run


def test_an_interrupted_sweep_resumes_without_redoing_cells(tmp_path):
    settings = design_settings({"p_drop": [0.1, 0.3]}, "ofat")  # lossless + 2 DropMatch
    calls = []
    with pytest.raises(KeyboardInterrupt):
        run_sweep(ITEMS, settings, tmp_path, "s", {"max_new_tokens": 8}, fake_runner(calls, fail_after=4))
    assert len(read_cells(tmp_path)) == 4
    with (tmp_path / CELLS).open("a") as fh:  # a row cut short by the interruption
        fh.write('{"key": "s|b|dropm')
    more = []
    with pytest.warns(UserWarning, match="incomplete"):
        df = run_sweep(ITEMS, settings, tmp_path, "s", {"max_new_tokens": 8}, fake_runner(more))
    assert set(calls).isdisjoint(more) and len(calls) + len(more) == 6 == len(df)
    with pytest.warns(UserWarning):
        again = run_sweep(ITEMS, settings, tmp_path, "s", {"max_new_tokens": 8}, fake_runner(third := []))
    assert third == [] and len(again) == 6


def test_tidy_table_schema_and_comparisons(tmp_path):
    settings = design_settings({"p_drop": [0.5]}, "ofat")
    df = run_sweep(ITEMS, settings, tmp_path, "s", {"max_new_tokens": 8}, fake_runner([]))
    assert list(df.columns) == [*COLUMNS, *DERIVED] and len(df) == 6
    assert df["key"].is_unique
    base = df[df["method"] == "lossless"]
    assert (base["speedup"] == 1).all() and (base["tau_gain"] == 0).all() and (base["equal_share"] == 1).all()
    assert base["first_divergence"].isna().all() and base["K"].isna().all()
    dm = df[(df["method"] == "dropmatch") & (df["p_drop"] == 0.5)]
    assert dm["tau_gain"].round(6).tolist() == [round(5 / 3 - 1, 6)] * 2
    assert dm["speedup"].round(6).tolist() == [round(5 / 3, 6)] * 2
    assert dm["first_divergence"].tolist() == [1.0, 1.0] and dm["equal_share"].round(4).tolist() == [0.6667] * 2
    assert load_sweep(tmp_path).equals(df)
    with pytest.raises(ValueError, match="holds no sweep"):
        load_sweep(tmp_path / "missing")


def test_a_loaded_sweep_computes_each_suites_centre_once_and_its_subsets_read_it(tmp_path, monkeypatch):
    settings = design_settings({"p_drop": [0.1, 0.5]}, "ofat")  # the centre (p_drop 0.3) runs once, as each knob
    run_sweep(ITEMS, settings, tmp_path, "s", {"max_new_tokens": 8}, fake_runner([]))
    df = load_sweep(tmp_path)
    expected = {"gamma": 5, "K": 5, "p_drop": 0.3, "criterion": "js+majority"}  # the tie goes to the paper's
    assert df.attrs["centres"] == {"s": expected}
    computed = []
    monkeypatch.setattr(tradeoff, "infer_centre", lambda rows: computed.append(rows) or {})
    lossless, far = df[df["method"] == "lossless"], df[df["p_drop"] != 0.3]
    assert centre(df) == centre(lossless) == centre(far) == expected and computed == []  # read, not recomputed
    both = pd.concat([df, df.assign(suite="other")])  # several suites: no one centre to read
    assert centre(both) == {} and len(computed) == 1
    handmade = pd.DataFrame(df.to_dict("records"))  # rows without the loaded table's attrs
    assert centre(handmade) == {} and len(computed) == 2


def timed_runner(calls: list, ms: float):
    """`fake_runner` on a machine whose target forward costs `ms` milliseconds of CPU (and of wall clock)."""
    run = fake_runner(calls)

    def timed(item, setting):
        row = run(item, setting)
        seconds = row["target_forwards"] * ms / 1000
        return row | {
            "cpu_s": seconds,
            "wall_s": seconds,
            "tokens_per_cpu_s": 12 / seconds,
            "tokens_per_s": 12 / seconds,
        }

    return timed


def test_a_sitting_times_itself_against_the_lossless_cells_another_timed(tmp_path, monkeypatch):
    """A directory recorded in parts on two machines: the second sitting decodes the lossless cell of every
    BASELINE_EVERY-th problem again, just before that problem's cells, and its cells' speed ratios are scaled by what
    lossless cost per forward in the two, not read against the first machine's clock."""
    run = {"max_new_tokens": 8}
    monkeypatch.setattr(sweep, "sitting", lambda: "A")
    run_sweep(ITEMS, design_settings({}, "ofat"), tmp_path, "s", run, timed_runner([], ms=100))  # lossless, p 0.3
    assert read_baselines(tmp_path).empty  # every cell beside its own lossless
    monkeypatch.setattr(sweep, "sitting", lambda: "B")  # a machine twice as fast
    later = [Setting("dropmatch", 5, 5, 0.5, "js+majority")]
    run_sweep(ITEMS, later, tmp_path, "s", run, timed_runner(calls := [], ms=50))
    a5, b5 = "s|a|dropmatch|g5|K5|p0.5|js+majority", "s|b|dropmatch|g5|K5|p0.5|js+majority"
    assert calls == ["s|a|lossless|g5", a5, b5]  # the first such problem, then every BASELINE_EVERY-th
    timed = read_baselines(tmp_path)
    assert timed["key"].tolist() == ["s|a|lossless|g5"] and set(timed["sitting"]) == {"B"}
    assert (read_cells(tmp_path)["method"] == "lossless").sum() == 2  # the cell log keeps one lossless per problem
    monkeypatch.setattr(sweep, "BASELINE_EVERY", 1)
    run_sweep(ITEMS, [Setting("dropmatch", 5, 5, 0.2, "js+majority")], tmp_path, "s", run, timed_runner(more := [], 50))
    a2, b2 = "s|a|dropmatch|g5|K5|p0.2|js+majority", "s|b|dropmatch|g5|K5|p0.2|js+majority"
    assert more == [a2, "s|b|lossless|g5", b2]  # a's lossless this sitting timed already; b's it times now
    df = load_sweep(tmp_path).set_index(["prompt_id", "p_drop"])
    # tau 5 against lossless's 3 on the same forward cost: 5/3, where the raw clocks would read 10/3
    assert df.loc[("b", 0.5), "speedup_cpu"] == pytest.approx(5 / 3) == df.loc[("b", 0.5), "speedup"]
    assert df.loc[("b", 0.5), "speed_basis"] == "adjusted" and df.loc[("b", 0.3), "speed_basis"] == "side by side"
    assert df.loc[("b", 0.3), "speedup_cpu"] == pytest.approx(4.2 / 3)
    table = summary(load_sweep(tmp_path)).set_index("p_drop")
    assert table.loc[0.5, "speed_adjusted"] == 1 and table.loc[0.3, "speed_adjusted"] == 0

    cells, timed = read_cells(tmp_path), read_baselines(tmp_path)
    elsewhere = cells.assign(sitting=cells["sitting"].replace("B", "C"))  # a sitting that timed no lossless cell
    df = sweep.add_comparisons(elsewhere, timed).set_index(["prompt_id", "p_drop"])
    assert df.loc[("a", 0.5), "speed_basis"] == "no baseline" and math.isnan(df.loc[("a", 0.5), "speedup_cpu"])
    older = cells.assign(sitting=None)  # cells from before sittings were named: as recorded
    assert set(sweep.add_comparisons(older)["speed_basis"]) == {"as recorded"}
    for sitting, cpu in (("A", "Intel(R) Xeon(R) Processor"), ("B", "AMD EPYC"), ("C", "AMD EPYC")):
        check_manifest(tmp_path, "s", run, {"design": "ofat", "sittings": {sitting: {"cpu": cpu}}})
    page = render(load_sweep(tmp_path), json.loads((tmp_path / "sweep.json").read_text()))
    assert "3: AMD EPYC (2), Intel(R) Xeon(R) Processor (1)" in page  # the report counts the machines
    for sitting, model in (("D", "GenuineIntel 6/207/2"), ("E", "GenuineIntel 6/143/8")):  # one name, two models
        env = {"cpu": "Intel(R) Xeon(R) Processor", "cpu_model": model}
        check_manifest(tmp_path, "s", run, {"design": "ofat", "sittings": {sitting: env}})
    page = render(load_sweep(tmp_path), json.loads((tmp_path / "sweep.json").read_text()))
    assert (
        "Intel(R) Xeon(R) Processor GenuineIntel 6/207/2 (1), Intel(R) Xeon(R) Processor GenuineIntel 6/143/8 (1)"
        in page
    )


def test_one_boot_is_one_sitting_though_its_boot_time_moves(tmp_path, monkeypatch):
    """A virtual machine restored from a snapshot reports its boot time some seconds off: the same boot id is the same
    sitting, so no lossless cell is timed again, its cells' speed ratios stay side by side, and the report counts
    one machine."""
    run = {"max_new_tokens": 8}
    before, after = "2026-12-07T02:07:09Z boot da9737ac", "2026-12-07T02:07:39Z boot da9737ac"
    monkeypatch.setattr(sweep, "sitting", lambda: before)
    run_sweep(ITEMS, design_settings({}, "ofat"), tmp_path, "s", run, timed_runner([], ms=100))
    monkeypatch.setattr(sweep, "sitting", lambda: after)
    later = [Setting("dropmatch", 5, 5, 0.5, "js+majority")]
    run_sweep(ITEMS, later, tmp_path, "s", run, timed_runner(calls := [], ms=50))
    assert calls == ["s|a|dropmatch|g5|K5|p0.5|js+majority", "s|b|dropmatch|g5|K5|p0.5|js+majority"]
    assert read_baselines(tmp_path).empty
    df = load_sweep(tmp_path)
    assert set(df["speed_basis"].dropna()) == {"side by side"}
    xeon = {"cpu": "Intel(R) Xeon(R) Processor"}
    for name in (before, after):
        check_manifest(tmp_path, "s", run, {"design": "ofat", "sittings": {name: xeon}})
    page = render(df, json.loads((tmp_path / "sweep.json").read_text()))
    assert "1: Intel(R) Xeon(R) Processor (1)" in page


def test_the_manifest_keeps_every_sittings_environment():
    first = {"design": "ofat", "sittings": {"A": {"cpu": "Xeon"}}, "environment": {"cpu": "Xeon"}}
    merged = merge_designs(
        first, {"design": "ofat", "sittings": {"B": {"cpu": "EPYC"}}, "environment": {"cpu": "EPYC"}}
    )
    assert merged["sittings"] == {"A": {"cpu": "Xeon"}, "B": {"cpu": "EPYC"}} and merged["environment"] == {
        "cpu": "EPYC"
    }


@pytest.mark.parametrize(
    "a, b, first, share",
    [
        ("1 2 3", "1 2 3", None, 1.0),
        ("1 2 4", "1 2 3", 2, 2 / 3),
        ("1 2", "1 2 3", 2, 1.0),
        ("", "", None, 1.0),
        (None, "1", None, None),
    ],
)
def test_divergence(a, b, first, share):
    got_first, got_share = ids_divergence(a, b)
    assert math.isnan(got_first) if first is None else got_first == first
    assert math.isnan(got_share) if share is None else got_share == pytest.approx(share)


def test_manifest_refuses_mixed_run_settings(tmp_path):
    check_manifest(tmp_path, "s", {"max_new_tokens": 64}, {"design": "ofat"})
    check_manifest(tmp_path, "other", {"max_new_tokens": 256})  # another suite may differ
    check_manifest(tmp_path, "s", {"max_new_tokens": 64})
    with pytest.raises(ValueError, match="max_new_tokens=64 here, 32 asked"):
        check_manifest(tmp_path, "s", {"max_new_tokens": 32})
    assert json.loads((tmp_path / "sweep.json").read_text())["s"]["design"] == {"design": "ofat"}


def test_real_runner_on_the_tiny_pair(tiny_pair, tmp_path):
    """p_drop = 0 in OR mode reproduces lossless; HumanEval cells get a 0/1 score from the real scorer."""
    items = load_suite(DEFAULT_SUITE, limit=2) + load_suite("humaneval", limit=1)
    settings = [
        Setting("lossless", 3),
        Setting("dropmatch", 3, 2, 0.0, "js+majority"),
        Setting("dropmatch", 3, 2, 0.5, "naive"),
    ]
    df = run_sweep(items, settings, tmp_path, "s", {"max_new_tokens": 10}, PairRunner(tiny_pair, 10, timeout=5))
    assert len(df) == 9 and df["tau"].between(1, 4).all() and (df["n_tokens"] <= 10).all()
    exact = df[df["p_drop"] == 0]
    assert (
        (exact["equal_share"] == 1).all() and exact["first_divergence"].isna().all() and (exact["tau_gain"] == 0).all()
    )
    scored = df[df["prompt_id"] == "HumanEval/0"]
    assert scored["score"].isin([0.0, 1.0]).all() and scored["score_result"].notna().all()
    assert df.loc[df["prompt_id"] != "HumanEval/0", "score"].isna().all()
    assert set(df["finish"]) <= {"eos", "length", "stop"}
    assert (df["cpu_s"] > 0).all() and df["speedup_cpu"].notna().all() and (df["loadavg"] >= 0).all()


def test_word_problem_cells_are_scored_by_their_answer_and_run_to_their_end(tiny_pair, tmp_path):
    """A word problem is a chat turn scored by its final number (no stop sequence cuts it); the score row says what
    was answered. The tiny pair answers nothing right: a handmade row with the answer scores 1."""
    items = load_suite("word-problems", limit=2)
    df = run_sweep(items, [Setting("lossless", 3)], tmp_path, "s", {"max_new_tokens": 6}, PairRunner(tiny_pair, 6))
    assert df["score"].isin([0.0, 1.0]).all() and df["score_result"].str.match(r"passed|answered|no number").all()
    item = items[0]
    assert score_row(item, {"text": f"So it is 3.\nAnswer: {item.problem['answer']}"})["score"] == 1.0
    assert (
        score_row(item, {"text": "Answer: 0.5"})["score_result"] == f"answered 0.5, expected {item.problem['answer']}"
    )


def test_cli_parsers_reject_bad_grids_with_exit_code_2(capsys):
    parser = build_parser()
    args = parser.parse_args(["sweep", "--suite", "humaneval", "--p-drop", "0,0.1", "--k", "1,5", "--out", "x"])
    assert args.p_drop == [0.0, 0.1] and args.K == [1, 5] and args.design == "ofat" and callable(args.func)
    assert parser.parse_args(["report", "--from", "d"]).source == "d"
    for bad in (["--p-drop", "0,1.5"], ["--k", "x"], ["--design", "random"], ["--limit", "0"], ["--centre", "K=99"]):
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args(["sweep", "--suite", "s", "--out", "x", *bad])
        assert exit_info.value.code == 2
    assert "p_drop must lie in [0, 1); got '1.5'" in capsys.readouterr().err


def test_cli_on_a_finished_sweep_loads_no_model_and_writes_outputs(tmp_path, monkeypatch, capsys):
    import shutil
    from pathlib import Path

    import dropmatch.cli

    out = tmp_path / "sweep"
    shutil.copytree(Path(__file__).parents[1] / "data" / "sweep_small", out)
    monkeypatch.setattr(dropmatch.cli, "load_pair", lambda *a, **k: pytest.fail("no cell is pending"))
    parser = build_parser()
    grid = ["--p-drop", "0,0.3", "--k", "1,5", "--gamma", "3,5", "--limit", "3", "--max-new-tokens", "16"]
    args = parser.parse_args(["sweep", "--suite", str(DEFAULT_SUITE), *grid, "--out", str(out)])
    assert args.func(args) == 0
    assert "0 cells to run" in capsys.readouterr().out
    shown = relevant(load_sweep(out).query("suite == 'mini_spec_bench'"))
    written = sorted(f.stem for f in (out / "figures").glob("mini_spec_bench_*.html"))
    assert (out / "table.csv").exists() and written == sorted(f"mini_spec_bench_{name}" for name in shown)
    assert "lossiness_vs_tau" in shown and "category_bars" not in shown  # three prompts of one category
    args = parser.parse_args(["sweep", "--suite", str(DEFAULT_SUITE), *grid[:-2], "--out", str(out)])
    with pytest.raises(ValueError, match="other settings"):  # max_new_tokens 64 into a 16-token sweep
        args.func(args)
    args = parser.parse_args(["sweep", "--suite", str(DEFAULT_SUITE), *grid, "--batch", "4", "--out", str(out)])
    with pytest.raises(ValueError, match="batch=None here, 4 asked"):  # a directory keeps the batch it was recorded at
        args.func(args)
    args = parser.parse_args(["report", "--from", str(out)])
    assert args.func(args) == 0 and (out / "report.html").stat().st_size > 1_000_000


@pytest.mark.parametrize(
    "text, expected",
    [
        ("typical=0.05, 0.09,0.05", ("typical", [0.05, 0.09])),
        ("top-k=2,3", ("top-k", [2.0, 3.0])),
        ("fuzzy-tv=0.4", ("fuzzy-tv", [0.4])),
        ("relaxed-top-k=8/0.5,8/1,8/0.5", ("relaxed-top-k", [(8, 0.5), (8, 1.0)])),  # a pair of knobs, K/delta
        ("tie-only", ("tie-only", [None])),  # a rule without a knob, by its name alone
    ],
)
def test_parse_rule(text, expected):
    assert parse_rule(text) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("typical", "expected NAME=V1,V2"),
        ("js=0.1", "NAME one of typical, top-k"),
        ("top-k=2.5", "k must be an integer"),
        ("fuzzy-tv=1.5", r"threshold must lie in \[0, 1\]"),
        ("mars=0.9,", "comma-separated"),
        ("relaxed-top-k=8", "K/delta takes two numbers, written 8/0.5"),
    ],
)
def test_parse_rule_refuses_clearly(text, message):
    with pytest.raises(ValueError, match=message):
        parse_rule(text)


def test_relatives_join_a_design_at_the_centres_gamma():
    settings = design_settings({"gamma": [3, 5]}, "ofat", rules={"typical": [0.09, 0.3], "top-k": [2]})
    relatives = [s for s in settings if s.method == "relative"]
    assert [(s.criterion, s.knob, s.gamma) for s in relatives] == [
        ("typical", 0.09, 5),
        ("typical", 0.3, 5),
        ("top-k", 2, 5),
    ]
    assert relatives[0].key("s", "p") == "s|p|relative|g5|typical=0.09"
    assert relatives[2].config(8).knob == 2 and relatives[2].config(8).method == "relative"
    assert not [
        s
        for s in design_settings({}, "ofat", methods=["lossless", "dropmatch"], rules={"top-k": [2]})
        if s.method == "relative"
    ]
    grid = design_settings({"gamma": [3, 8]}, "grid", rules={"top-k": [2]})  # the centre's gamma is not in the grid
    assert [s.gamma for s in grid if s.method == "lossless"] == [3, 8, 5]  # yet the relatives get their baseline


def test_relatives_sweep_on_the_tiny_pair_and_its_report(noisy_pair, tmp_path):
    """top-k with k = 1 reproduces lossless; a loose rule relaxes; the report compares them at DropMatch's tau."""
    items = load_suite(DEFAULT_SUITE, limit=2)
    settings = design_settings(
        {"gamma": [3]},
        "ofat",
        rules={"top-k": [1, 50], "typical": [0.3]},
        centre={"gamma": 3, "K": 5, "p_drop": 0.3, "criterion": "js+majority"},
    )
    df = run_sweep(items, settings, tmp_path, "s", {"max_new_tokens": 12}, PairRunner(noisy_pair, 12))
    exact = df[(df["criterion"] == "top-k") & (df["knob"] == 1)]
    assert (exact["equal_share"] == 1).all() and (exact["relaxed_share"] == 0).all() and exact["loop"].notna().all()
    loose = df[(df["criterion"] == "top-k") & (df["knob"] == 50)]
    assert (loose["relaxed_emitted"] > 0).any() and loose["relaxed_cost_mean"].notna().any()
    for _, row in df.iterrows():  # every cell keeps its per-token reasons and where each relaxation sits
        reasons = row["reasons"].split()
        assert len(reasons) == len(row["output_ids"].split())
        assert len(row["relaxed_tokens"]) == row["relaxed_emitted"]
        assert all(reasons[i] == reason for i, _, _, reason, _ in row["relaxed_tokens"])
    assert (exact["relaxed_tokens"].map(len) == 0).all() and (loose["relaxed_tokens"].map(len) > 0).any()
    assert df["length_ratio"].notna().all() and df["mean_logp"].lt(0).all()
    page = render(df, {})
    assert "DropMatch beside its relatives" in page and "tau_target" in page and "s-tradeoff-" in page


def test_a_batched_sweep_records_what_batch_1_records(noisy_pair, tmp_path):
    """Cells decoded several at a time (continuous batching, rows written as cells finish) give batch 1's rows:
    the same tokens, tau, reasons and scores, each cell once; in float32 on the tiny pair."""
    items = load_suite(DEFAULT_SUITE, limit=3)
    settings = design_settings({"p_drop": [0.1, 0.3], "gamma": [3]}, "ofat", rules={"typical": [0.3]})
    run = {"max_new_tokens": 12}
    one = run_sweep(items, settings, tmp_path / "one", "s", run, PairRunner(noisy_pair, 12)).set_index("key")
    many = run_sweep(items, settings, tmp_path / "many", "s", run, PairRunner(noisy_pair, 12, batch=4)).set_index("key")
    assert len(many) == len(one) == len(items) * len(settings) and not many.index.duplicated().any()
    columns = ["output_ids", "tau", "reasons", "finish", "n_tokens", "relaxed_share"]
    assert many.loc[one.index, columns].equals(one[columns])
    assert many["cpu_s"].gt(0).all()


def test_a_sampled_sweep_runs_each_setting_once_per_seed_against_lossless_of_the_same_seed(noisy_pair, tmp_path):
    """The T 0.7 track's shape: --temperature and --seeds; each replicate is keyed by its seed, decoded with it, and
    compared with lossless sampled from the same seed (so the two seeds of a setting are two draws, not one)."""
    items = load_suite(DEFAULT_SUITE, limit=1)
    settings = design_settings(
        {"p_drop": [0.3]}, "ofat", rules={"min-p": [0.1]}, seeds=[0, 1], methods=["lossless", "dropmatch", "truncation"]
    )
    assert [(s.method, s.seed) for s in settings] == [
        ("lossless", 0),
        ("lossless", 1),
        ("dropmatch", 0),
        ("dropmatch", 1),
        ("truncation", 0),
        ("truncation", 1),
    ]
    assert settings[1].key("s", "p") == "s|p|lossless|g5|s1" and settings[1].config(8, 0, 0.7).seed == 1
    run = {"max_new_tokens": 12, "seed": 0, "temperature": 0.7}
    df = run_sweep(items, settings, tmp_path, "s", run, PairRunner(noisy_pair, 12, temperature=0.7))
    assert sorted(df["seed"]) == [0, 0, 0, 1, 1, 1] and (df["temperature"] == 0.7).all()
    lossless = df[df["method"] == "lossless"].set_index("seed")
    assert lossless.loc[0, "output_ids"] != lossless.loc[1, "output_ids"]  # two draws
    for _, row in df[df["method"] != "lossless"].iterrows():  # joined with lossless of its own seed
        assert row["tau_lossless"] == lossless.loc[row["seed"], "tau"]
    args = build_parser().parse_args(
        ["sweep", "--suite", "humaneval", "--temperature", "0.7", "--seeds", "0,1,1", "--out", str(tmp_path)]
    )
    assert (args.temperature, args.seeds) == (0.7, [0, 1])


def test_a_directory_recorded_in_parts_keeps_every_commands_design(tmp_path):
    first = {"design": "ofat", "grid": {"p_drop": [0.1, 0.3], "K": None}, "methods": ["lossless", "dropmatch"]}
    second = {"design": "ofat", "grid": {"p_drop": None}, "methods": ["lossless", "relative"], "rules": {"fly": [0.3]}}
    check_manifest(tmp_path, "humaneval", {"max_new_tokens": 8}, first | {"rules": {}})
    check_manifest(tmp_path, "humaneval", {"max_new_tokens": 8}, second)
    design = json.loads((tmp_path / "sweep.json").read_text())["humaneval"]["design"]
    assert design["methods"] == ["lossless", "dropmatch", "relative"]
    assert design["grid"]["p_drop"] == [0.1, 0.3] and design["rules"] == {"fly": [0.3]}


def test_a_pair_knob_and_a_rule_without_a_knob_sweep_and_report(noisy_pair, tmp_path):
    """relaxed top-K/delta logs its knob as the app writes it and runs one curve per K along delta; K 1 relaxes
    nothing; the tie-only control is one point with no knob; the tables and the report take both."""
    items = load_suite(DEFAULT_SUITE, limit=2)
    rules = {"relaxed-top-k": [(1, 0.5), (8, 0.5), (8, 3.0)], "tie-only": [None]}
    centre = {"gamma": 3, "K": 5, "p_drop": 0.3, "criterion": "js+majority"}
    settings = design_settings({"gamma": [3]}, "ofat", rules=rules, centre=centre)
    keys = [s.key("s", "p") for s in settings if s.method == "relative"]
    assert keys[:2] == ["s|p|relative|g3|relaxed-top-k=1/0.5", "s|p|relative|g3|relaxed-top-k=8/0.5"]
    assert keys[-1] == "s|p|relative|g3|tie-only"
    df = run_sweep(items, settings, tmp_path, "s", {"max_new_tokens": 12}, PairRunner(noisy_pair, 12))
    strict = df[df["knob"] == "1/0.5"]
    assert len(strict) == 2 and (strict["equal_share"] == 1).all() and (strict["relaxed_share"] == 0).all()
    assert (df.loc[df["knob"].isin(["8/0.5", "8/3"]), "relaxed_emitted"] > 0).any()
    ties = df[df["criterion"] == "tie-only"]
    assert len(ties) == 2 and (ties["equal_share"] == 1).all()  # float32: no ties, so no churn
    table = summary(df)
    assert {"1/0.5", "8/0.5", "8/3"} <= set(table["knob"].dropna())
    points = setting_points(df)
    assert {"relaxed-top-k K1", "relaxed-top-k K8", "tie-only"} <= set(points["rule"])
    assert sorted(points.loc[points["rule"] == "relaxed-top-k K8", "knob"]) == [0.5, 3.0]  # the curve runs along delta
    page = render(df, {})
    assert "relaxed-top-k K8" in page and "tie-only" in page


def test_the_span_gate_is_a_sweep_axis_for_the_rules_alone(noisy_pair, tmp_path):
    held_at = {"gamma": 3, "K": 5, "p_drop": 0.3, "criterion": "js+majority"}
    settings = design_settings({}, "ofat", rules={"typical": [0.3]}, centre=held_at, gates=(False, True))
    keys = [s.key("s", "p") for s in settings]
    assert keys.count("s|p|lossless|g3") == 1  # the baseline once
    assert "s|p|relative|g3|typical=0.3" in keys and "s|p|relative|g3|typical=0.3|gated" in keys
    assert "s|p|dropmatch|g3|K5|p0.3|js+majority|gated" in keys
    assert all(s.config(8).span_gate == s.span_gate for s in settings)
    items = load_suite(DEFAULT_SUITE, limit=2)
    df = run_sweep(items, settings, tmp_path, "s", {"max_new_tokens": 12}, PairRunner(noisy_pair, 12))
    points = setting_points(df)
    assert {"typical", "typical (span-gated)", "DropMatch js+majority (span-gated)"} <= set(points["rule"])
    assert set(summary(df)["span_gate"].dropna()) == {False, True}
    assert centre(df) == held_at and len(rows_at(df, "dropmatch", **held_at)) == len(items)  # plain DropMatch alone
    assert "typical (span-gated)" in render(df, {})


def test_a_manifest_keeps_pairs_of_knobs_rules_without_one_and_the_span_gate(tmp_path):
    design = {"design": "ofat", "rules": {"relaxed-top-k": [(8, 0.5)], "tie-only": [None]}, "span_gate": "both"}
    check_manifest(tmp_path, "s", {"max_new_tokens": 8}, design)
    later = {"design": "ofat", "rules": {"relaxed-top-k": [(8, 1.5)], "typical": [0.3]}}
    check_manifest(tmp_path, "s", {"max_new_tokens": 8}, later)  # recorded in parts: the knobs of both kept
    kept = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))["s"]["design"]["rules"]
    assert kept == {"relaxed-top-k": [[8, 0.5], [8, 1.5]], "tie-only": [None], "typical": [0.3]}


def test_mask_seeds_load_as_one_table_with_lossless_at_every_seed(noisy_pair, tmp_path):
    """Greedy runs that differ only in --seed: lossless decodes alike under another seed (the premise the loader rests
    on, checked here by decoding it), DropMatch does not, and each seed's DropMatch rows are paired with lossless."""
    items = load_suite(DEFAULT_SUITE, limit=2)
    both = design_settings({"p_drop": [0.5]}, "ofat", methods=["lossless", "dropmatch"])  # and the centre's 0.3
    dirs = [tmp_path / "s0", tmp_path / "s1"]
    for seed, d in enumerate(dirs):
        run = {"max_new_tokens": 12, "seed": seed}
        check_manifest(d, "s", run, {"design": "ofat"})
        run_sweep(items, both, d, "s", run, PairRunner(noisy_pair, 12, seed=seed))
    zero, one = read_cells(dirs[0]).set_index("key"), read_cells(dirs[1]).set_index("key")
    lossless = zero.index[zero["method"] == "lossless"]
    assert zero.loc[lossless, "output_ids"].equals(one.loc[lossless, "output_ids"])
    masked = zero.index[zero["method"] == "dropmatch"]
    assert not zero.loc[masked, "output_ids"].equals(one.loc[masked, "output_ids"])  # the seed draws other masks

    df = load_mask_seeds(dirs, "s")
    assert sorted(df["seed"]) == [0] * 6 + [1] * 6 and df["key"].is_unique
    for _, row in df[df["method"] == "dropmatch"].iterrows():
        own = (zero if row["seed"] == 0 else one).loc[row["key"].rsplit("|seed", 1)[0]]
        assert row["output_ids"] == own["output_ids"]
        assert row["tau_lossless"] == zero.loc[f"s|{row['prompt_id']}|lossless|g5", "tau"]

    reruns = seed_free_reruns(dirs, "s")
    expected = {"directory": str(dirs[1]), "method": "lossless", "cells": 2, "same_tokens": 2, "same_score": None}
    assert reruns.to_dict("records") == [expected]  # no task score in this suite

    args = build_parser().parse_args(["seeds", "--from", *map(str, dirs), "--suite", "s"])
    with pytest.raises(ValueError, match="no scored s cells"):  # a suite without a task score has no verdict
        args.func(args)

    check_manifest(tmp_path / "b4", "s", {"max_new_tokens": 12, "seed": 2, "batch": 4})
    with pytest.raises(ValueError, match="other settings.*batch None in .*, 4 here"):
        load_mask_seeds([dirs[0], tmp_path / "b4"], "s")
    with pytest.raises(ValueError, match="its own mask seed"):
        load_mask_seeds([dirs[0], dirs[0]], "s")
    with pytest.raises(ValueError, match="at least two"):
        load_mask_seeds(dirs[:1], "s")
    with pytest.raises(ValueError, match="holds no other"):
        load_mask_seeds(dirs, "other")

    for d, scores in zip(dirs, ([1.0, 0.0], [1.0, 1.0])):  # as if scored: the second problem's score differs
        log = d / CELLS
        rows = [json.loads(line) for line in log.read_text().splitlines()]
        for row in rows:
            if row["method"] == "lossless":
                row["score"] = scores[[item.id for item in items].index(row["prompt_id"])]
        log.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert seed_free_reruns(dirs, "s").to_dict("records") == [expected | {"same_score": 1}]
