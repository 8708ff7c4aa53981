"""Where relaxation happens, on handmade HumanEval cells: each relaxed acceptance classed in the program the tests
ran, relaxations after the stop sequence left out, and a lost problem classed by the token where it first parts
from lossless."""

from __future__ import annotations

import pandas as pd
import pytest

from dropmatch.lab.relaxations import NOT_RELAXED, TIE, first_divergence, kinds_table, relaxations

GOOD = "    return number % 1.0\n"
BAD = "    return number // 1.0\n"  # the relaxed " //" (punctuation) breaks it
WORSE = "    return num % 2\n"  # a relaxed identifier " num" on line 0
TYP = "typical"


def cell(method, text, score, relaxed=(), knob=None, criterion=None, pid="HumanEval/2", ids=None) -> dict:
    """A handmade cell; its output ids default to one id per character of the text (equal texts, equal ids) and every
    token's reason to exact, except its relaxed ones."""
    ids = ids or [ord(c) for c in text]
    reasons = ["exact"] * len(ids)
    for i, _, reason, _ in relaxed:
        reasons[i] = reason
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
        "output_ids": " ".join(map(str, ids)),
        "reasons": " ".join(reasons),
    }


@pytest.fixture
def table() -> pd.DataFrame:
    stop = "\n\ndef check():\n    pass  "  # a stop sequence: what follows was never scored
    return pd.DataFrame(
        [
            cell("lossless", GOOD, 1.0),
            # "    return number " is 18 characters: the typical run parts from lossless at index 18, its relaxed " //"
            cell(
                "relative", BAD + stop, 0.0, [(18, " //", "typical", 0.7), (40, "  ", "typical", 0.1)], 0.3, "typical"
            ),
            # "    return num" parts at index 14; its relaxed " num" is there, the relaxed number " 2" later on the line
            cell("relative", WORSE, 0.0, [(14, " num", "top-k", 1.2), (17, " 2", "top-k", 0.4)], 2, "top-k"),
        ]
    )


def test_each_relaxation_is_classed_where_it_was_scored(table):
    found = relaxations(table)
    typical = found[found["rule"] == "typical"]
    assert typical[["text", "kind", "line"]].values.tolist() == [[" //", "punctuation", 0]]  # "  " came after the stop
    topk = found[found["rule"] == "top-k"]
    assert topk["kind"].tolist() == ["identifier", "number"] and topk["cost"].tolist() == [1.2, 0.4]


def test_kinds_table_shares_costs_and_lost_problems_by_their_first_differing_token(table):
    got = kinds_table(table).set_index("rule")
    assert got.loc["top-k", "relaxed"] == 2
    assert got.loc["top-k", "share identifier"] == 0.5 and got.loc["top-k", "cost number"] == 0.4
    assert got.loc["typical", "share punctuation"] == 1.0
    # top-k parts from lossless at its relaxed identifier; its relaxed number later on the line is not the start
    assert got.loc["top-k", "lost"] == 1 and got.loc["top-k", "lost at identifier"] == 1
    assert got.loc["top-k", "lost at number"] == 0
    assert got.loc["typical", "lost"] == 1 and got.loc["typical", "lost at punctuation"] == 1


def test_the_first_divergence_of_a_handmade_pair_of_runs():
    """Lossless 1 2 3 4 5. A run that relaxes a number at index 2 parts there; a later relaxed word (index 4) does
    not count. A tie at the first differing index is a tie; a differing token with an exact reason (the target
    itself moved, at a near-tie) is no relaxation; runs that never part give None."""
    base = "1 2 3 4 5"
    assert first_divergence("1 2 9 4 7", base, "exact exact mars exact mars", {2: "number", 4: "word"}) == "number"
    assert first_divergence("1 9 3", base, "exact tie exact", {}) == TIE
    assert first_divergence("1 2 3 8 5", base, "exact exact exact exact exact", {}) == NOT_RELAXED
    assert first_divergence(base, base, "exact exact exact exact exact", {}) is None
    assert first_divergence("1 2 3", base, "exact exact exact", {}) == NOT_RELAXED  # stopped early: parts at its end


def test_kinds_heatmap_rows_are_settings_and_sum_to_one(table):
    from viz.verdict import kinds_heatmap

    fig = kinds_heatmap(kinds_table(table))
    assert fig.layout.meta["rows"] == ["top-k 2", "typical 0.3"]  # by rule, then knob
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
            cell("relative", WORSE, 0.0, [(14, " num", "top-k", 1.2)], 2, "top-k"),
            cell("relative", GOOD, 1.0, [], 0.3, "typical"),
        ]
    )
    got = kinds_table(pd.concat([table.assign(seed=0), seed1.assign(seed=1)])).set_index("rule")
    assert (got.loc["top-k", "lost"], got.loc["top-k", "lost at identifier"]) == (1, 1)
    assert (got.loc["typical", "lost"], got.loc["typical", "lost at punctuation"]) == (1, 1)
    assert got.loc["top-k", "relaxed"] == 3  # both seeds' relaxations count
