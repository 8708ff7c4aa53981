"""Where relaxation happens, on handmade HumanEval cells: each relaxed acceptance classed in the program the tests
ran, relaxations after the stop sequence left out, and a lost problem counted as begun by a relaxed identifier."""

from __future__ import annotations

import pandas as pd
import pytest

from dropmatch.lab.relaxations import first_changed_line, kinds_table, relaxations

GOOD = "    return number % 1.0\n"
BAD = "    return number // 1.0\n"  # the relaxed " //" (punctuation) breaks it
WORSE = "    return num % 2\n"  # a relaxed identifier " num" on line 0


def cell(method, text, score, relaxed=(), knob=None, criterion=None, pid="HumanEval/2") -> dict:
    return {
        "suite": "humaneval",
        "prompt_id": pid,
        "category": "humaneval",
        "method": method,
        "gamma": 5,
        "K": None,
        "p_drop": None,
        "criterion": criterion,
        "knob": knob,
        "score": score,
        "text": text,
        "relaxed_tokens": [[i, text.rindex(t), t, reason, cost] for i, t, reason, cost in relaxed],  # its last place
    }


@pytest.fixture
def table() -> pd.DataFrame:
    stop = "\n\ndef check():\n    pass  "  # a stop sequence: what follows was never scored
    return pd.DataFrame(
        [
            cell("lossless", GOOD, 1.0),
            cell("relative", BAD + stop, 0.0, [(3, " //", "typical", 0.7), (12, "  ", "typical", 0.1)], 0.3, "typical"),
            cell("relative", WORSE, 0.0, [(2, " num", "top-k", 1.2), (4, " 2", "top-k", 0.4)], 2, "top-k"),
        ]
    )


def test_each_relaxation_is_classed_where_it_was_scored(table):
    found = relaxations(table)
    typical = found[found["rule"] == "typical"]
    assert typical[["text", "kind", "line"]].values.tolist() == [[" //", "punctuation", 0]]  # "  " came after the stop
    topk = found[found["rule"] == "top-k"]
    assert topk["kind"].tolist() == ["identifier", "number"] and topk["cost"].tolist() == [1.2, 0.4]


def test_kinds_table_shares_costs_and_lost_problems_begun_by_an_identifier(table):
    got = kinds_table(table).set_index("rule")
    assert got.loc["top-k", "relaxed"] == 2
    assert got.loc["top-k", "share identifier"] == 0.5 and got.loc["top-k", "cost number"] == 0.4
    assert got.loc["typical", "share punctuation"] == 1.0
    assert (got.loc["top-k", "lost"], got.loc["top-k", "lost_semantic_first"]) == (1, 1)
    assert (got.loc["typical", "lost"], got.loc["typical", "lost_semantic_first"]) == (1, 0)


def test_first_changed_line():
    assert first_changed_line("a\nb\nc", "a\nx\nc") == 1
    assert first_changed_line("a\nb", "a\nb\nc") == 2


def test_kinds_heatmap_rows_are_settings_and_sum_to_one(table):
    from viz.verdict import kinds_heatmap

    fig = kinds_heatmap(kinds_table(table))
    assert fig.layout.meta["rows"] == ["typical 0.3", "top-k 2"]
    assert [sum(row) for row in fig.data[0].z] == pytest.approx([1.0, 1.0])
    assert "no relaxed acceptance" in kinds_heatmap(pd.DataFrame()).layout.annotations[0].text


def test_a_sweep_with_lossless_alone_has_no_relaxations(table):
    assert relaxations(table[table["method"] == "lossless"]).empty
    assert kinds_table(table[table["method"] == "lossless"]).empty


def test_a_sampled_sweep_meets_each_seed_with_lossless_of_the_same_seed(table):
    # seed 0 as above; on seed 1 lossless failed too, so nothing was lost there, and top-k's seed-1 output is the
    # one that breaks by punctuation: each seed is judged against its own lossless run, never across seeds
    seed1 = pd.DataFrame(
        [
            cell("lossless", BAD, 0.0),
            cell("relative", WORSE, 0.0, [(2, " num", "top-k", 1.2)], 2, "top-k"),
            cell("relative", GOOD, 1.0, [], 0.3, "typical"),
        ]
    )
    got = kinds_table(pd.concat([table.assign(seed=0), seed1.assign(seed=1)])).set_index("rule")
    assert (got.loc["top-k", "lost"], got.loc["top-k", "lost_semantic_first"]) == (1, 1)
    assert (got.loc["typical", "lost"], got.loc["typical", "lost_semantic_first"]) == (1, 0)
    assert got.loc["top-k", "relaxed"] == 3  # both seeds' relaxations count
