"""Live sweeps for the Analysis tab: plans within limits, clear errors, cell-by-cell runs, hover definitions."""

from __future__ import annotations

import pandas as pd
import pytest

from dropmatch.lab import live as lab
from dropmatch.lab import suites, sweep
from dropmatch.lab.files import CELLS, MANIFEST, TABLE
from dropmatch.lab.report import COLUMN_DEFINITIONS, table_html
from dropmatch.lab.suites import DEFAULT_SUITE, SuiteItem, load_suite, spread
from dropmatch.lab.sweep import TOKEN_COLUMNS, load_sweep
from dropmatch.tables.summary import summary


def test_spread_takes_categories_round_robin():
    items = [SuiteItem(f"{c}-{i}", c, "p") for c in "abc" for i in range(3)]
    assert [i.id for i in spread(items, 4)] == ["a-0", "b-0", "c-0", "a-1"]
    assert len(spread(items, 100)) == len(items)
    suite = load_suite(DEFAULT_SUITE)
    categories = {i.category for i in suite}
    assert {i.category for i in spread(suite, len(categories))} == categories


def test_plan_counts_cells_and_spreads_prompts():
    p = lab.plan("mini_spec_bench", 3, "p_drop", "0,0.3,0.5", 32)
    # lossless at gamma 5, and DropMatch at the centre (p_drop 0.3) plus 0 and 0.5
    assert [(s.method, s.p_drop) for s in p.settings] == [
        ("lossless", None),
        ("dropmatch", 0.3),
        ("dropmatch", 0.0),
        ("dropmatch", 0.5),
    ]
    assert p.cells == 12 and len({i.category for i in p.items}) == 3
    assert p.run == {"max_new_tokens": 32, "seed": 0} and p.grid == {"p_drop": [0.0, 0.3, 0.5]}
    gammas = lab.plan("mini_spec_bench", 1, "gamma", "3,8", 16)
    assert [s.gamma for s in gammas.settings if s.method == "lossless"] == [5, 3, 8]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nope", 2, "p_drop", "0.1", 32), "suite must be one of"),
        (("mini_spec_bench", 2, "temperature", "0.1", 32), "varied factor must be one of"),
        (("mini_spec_bench", 0, "p_drop", "0.1", 32), r"prompts must be an integer in \[1, 8\]"),
        (("mini_spec_bench", 2.5, "p_drop", "0.1", 32), "prompts must be an integer"),
        (("mini_spec_bench", 2, "p_drop", "0.1,x", 32), r"p_drop must lie in \[0, 1\); got 'x'"),
        (("mini_spec_bench", 2, "p_drop", "1.5", 32), r"p_drop must lie in \[0, 1\); got '1.5'"),
        (("mini_spec_bench", 2, "K", "", 32), "expected a comma-separated list"),
        (("mini_spec_bench", 2, "p_drop", "0.1", 1000), r"max new tokens must be an integer in \[8, 256\]"),
        (("mini_spec_bench", 8, "p_drop", "0,0.1,0.2,0.4,0.5", 8), "at most 32 cells"),
        (("mini_spec_bench", 8, "p_drop", "0.1", 256), "at most 2048 tokens"),
    ],
)
def test_plan_refuses_bad_input_clearly(args, message):
    with pytest.raises(ValueError, match=message):
        lab.plan(*args)


def fake_runner(item, setting):
    """A deterministic stand-in for decoding: tau grows with p_drop, lossless is the baseline."""
    tau = 2.0 + (setting.p_drop or 0) * (setting.K or 1) / 5
    n = 16
    return {
        "tau": tau,
        "acceptance_rate": 0.5,
        "relaxed_share": 0.0,
        "n_tokens": n,
        "target_forwards": n / tau,
        "drafted": 20,
        "accepted_drafts": 10,
        "head_products": 40,
        "wall_s": 1.0,
        "tokens_per_s": tau,
        "overhead_share": 0.0,
        "cpu_s": 1.0,
        "tokens_per_cpu_s": tau,
        "loadavg": 0.0,
        "finish": "length",
        "score": None,
        "score_result": None,
        "output_ids": "1 2 3",
        "text": "x",
    }


def test_run_live_yields_every_cell_and_writes_a_sweep(tmp_path):
    p = lab.plan("mini_spec_bench", 2, "K", "1,8", 16)
    seen = list(lab.run_live(p, tmp_path, fake_runner))
    assert [(done, total) for done, total, _ in seen] == [(i, p.cells) for i in range(1, p.cells + 1)]
    assert (tmp_path / CELLS).exists() and (tmp_path / MANIFEST).exists()
    df = load_sweep(tmp_path)
    assert len(df) == p.cells and set(df["prompt_id"]) == {i.id for i in p.items}
    dm = df[df["method"] == "dropmatch"].set_index(["prompt_id", "K"])
    # tau gain is computed against lossless on the same prompt and gamma
    expected = (2.0 + 0.3 * 8 / 5) / 2.0 - 1
    assert dm.loc[(p.items[0].id, 8), "tau_gain"] == pytest.approx(expected)
    assert list(lab.run_live(p, tmp_path, fake_runner)) == [], "a finished sweep has nothing to redo"


def test_a_live_sweep_writes_its_own_table_and_report(tmp_path):
    p = lab.plan("mini_spec_bench", 1, "p_drop", "0.1", 8)
    for done, _, _ in lab.run_live(p, tmp_path, fake_runner):
        df, path = lab.write_table(tmp_path)
        assert path == tmp_path / TABLE and len(pd.read_csv(path)) == len(df) == done
    df, files = lab.finish(tmp_path)
    assert [f.name for f in files] == ["report.html", TABLE] and all(f.exists() for f in files)
    assert len(df) == p.cells and "<h2>Suite: mini_spec_bench" in files[0].read_text(encoding="utf-8")
    table = pd.read_csv(files[1])
    assert table["key"].tolist() == df["key"].tolist()
    # the per-token records stay in cells.jsonl only; every other column of the tidy table is in the file
    assert list(table.columns) == [c for c in df.columns if c not in TOKEN_COLUMNS] and "text" in table.columns
    assert set(TOKEN_COLUMNS) <= set(df.columns) and '"output_ids": "1 2 3"' in (tmp_path / CELLS).read_text()


def test_table_html_puts_each_definition_one_hover_away():
    df = pd.DataFrame({"tau": [1.23456], "prompts": [3], "dropmatch tau": [2.0], "weird <col>": ["a&b"]})
    html = table_html(df)
    assert f'title="{COLUMN_DEFINITIONS["tau"]}"' in html
    assert html.count('title="') == 3  # tau, prompts, and the per-category "dropmatch tau"
    assert "<td>1.23</td>" in html and "&lt;col&gt;" in html and "a&amp;b" in html


def test_every_summary_column_has_a_definition(tmp_path):
    p = lab.plan("mini_spec_bench", 1, "p_drop", "0.1", 8)
    list(lab.run_live(p, tmp_path, fake_runner))
    columns = summary(load_sweep(tmp_path)).columns
    assert [c for c in columns if c not in COLUMN_DEFINITIONS] == []


def test_a_live_sweep_can_vary_a_relatives_knob_beside_dropmatch():
    p = lab.plan("mini_spec_bench", 2, "typical", "0.09,0.3", 16)
    assert [(s.method, s.criterion, s.knob) for s in p.settings] == [
        ("lossless", None, None),
        ("dropmatch", "js+majority", None),
        ("relative", "typical", 0.09),
        ("relative", "typical", 0.3),
    ]
    assert p.rules == {"typical": [0.09, 0.3]} and p.grid == {}
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 1000\]"):
        lab.plan("mini_spec_bench", 2, "top-k", "2,3.5", 16)


TIMINGS = ("wall_s", "tokens_per_s", "overhead_share", "cpu_s", "tokens_per_cpu_s", "loadavg")


def test_decoded_cells_are_scored_where_they_arrive_as_a_sweep_scores_them_inline(monkeypatch, noisy_pair, tmp_path):
    """decode_cells leaves the task score out (it runs where the model is held, a GPU slot on ZeroGPU); scored adds
    it as each cell arrives, and the log holds what PairRunner, scoring inline, writes."""
    scored_texts = []

    def stand_in_scorer(problem, completion, timeout):
        scored_texts.append(completion)
        return {"passed": len(scored_texts) % 2 == 1, "result": f"stand-in {len(scored_texts)}"}

    monkeypatch.setattr(suites, "score_completion", stand_in_scorer)  # HumanEval's scorer, behind suites.score
    p = lab.plan("humaneval", 2, "p_drop", "0.3", 8)
    due = lab.todo(p, tmp_path)
    decoded = list(lab.decode_cells(p, noisy_pair, due))
    assert scored_texts == [] and all(row["score"] is None for _, row in decoded)
    split = [row for _, _, row in lab.run_live(p, tmp_path, lab.scored(p, iter(decoded)))]
    assert len(scored_texts) == p.cells and [row["score"] for row in split] == [1.0, 0.0] * (p.cells // 2)
    scored_texts.clear()
    inline = [row for _, _, row in lab.run_live(p, tmp_path / "inline", sweep.PairRunner(noisy_pair, 8))]
    assert [{k: v for k, v in row.items() if k not in TIMINGS} for row in split] == [
        {k: v for k, v in row.items() if k not in TIMINGS} for row in inline
    ]
    with pytest.raises(ValueError, match="came where .* was due"):
        list(lab.run_live(p, tmp_path / "reordered", lab.scored(p, iter(decoded[::-1]))))
