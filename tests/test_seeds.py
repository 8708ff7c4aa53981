"""DropMatch's mask seed as noise, on handmade score tables with known answers: each seed against lossless, the
spread across seeds, the churn between seeds beside the tie-only floor, and the pooled verdict's clusters."""

from __future__ import annotations

import pandas as pd
import pytest

from dropmatch.tables import seeds
from dropmatch.tables.verdict import against_lossless

N = 10
BASE = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]  # lossless solves 6 of 10


def rows(method, scores, seed, tau=5.0, **setting) -> list[dict]:
    base = {"method": method, "gamma": 5, "K": None, "p_drop": None, "criterion": None, "knob": None} | setting
    return [
        base
        | {
            "prompt_id": f"HumanEval/{i}",
            "seed": seed,
            "n_tokens": 60,
            "target_forwards": 60 / tau,
            "score": float(s),
            "ties": 0,
            "length_ratio": 1.0,
            "capped": 0.0,
            "loop": 0.0,
            "loop_relaxed": float("nan"),
            "relaxed_cost_sum": 1.0,
            "relaxed_emitted": 1,
            "mean_logp": -0.2,
            "speedup": 1.0,
            "speedup_cpu": 1.0,
            "equal_share": 1.0,
        }
        for i, s in enumerate(scores)
    ]


DM = {"K": 5, "criterion": "js+majority", "p_drop": 0.3}
SEED_SCORES = {  # seed -> DropMatch 0.3's scores
    0: [0, 1, 1, 1, 1, 1, 0, 0, 0, 0],  # loses problem 0
    1: [1, 1, 1, 1, 1, 1, 0, 0, 0, 1],  # gains problem 9
    2: [0, 0, 1, 1, 1, 1, 1, 0, 0, 0],  # loses 0 and 1, gains 6
}


@pytest.fixture
def table() -> pd.DataFrame:
    out = []
    for seed, scores in SEED_SCORES.items():
        out += rows("lossless", BASE, seed, tau=4.0)
        out += rows("relative", BASE[:-1] + [1], seed, tau=4.1, criterion="tie-only")  # gains problem 9
        out += rows("dropmatch", scores, seed, tau=5.0 + seed / 10, **DM)
    return pd.DataFrame(out)


def test_each_seed_against_lossless(table):
    got = seeds.per_seed(table)
    assert list(got["seed"]) == [0, 1, 2] and (got["problems"] == N).all()
    assert got["score_diff"].round(6).tolist() == [-0.1, 0.1, -0.1]
    assert list(got["lost"]) == [1, 0, 2] and list(got["gained"]) == [0, 1, 1]
    assert got["tau"].round(6).tolist() == [5.0, 5.1, 5.2]


def test_spread_churn_and_the_tie_only_floor(table):
    got = seeds.spread(table).iloc[0]
    assert got["seeds"] == 3 and got["problems"] == N
    assert (got["tau_min"], got["tau_max"]) == pytest.approx((5.0, 5.2))
    assert (got["diff_min"], got["diff_max"], got["diff_mean"]) == pytest.approx((-0.1, 0.1, -0.1 / 3))
    assert got["diff_sd"] == pytest.approx(pd.Series([-0.1, 0.1, -0.1]).std(ddof=1))
    # seeds 0-1 differ at problems 0 and 9; 0-2 at 1 and 6; 1-2 at 0, 1, 6 and 9
    assert got["churn_between_seeds"] == pytest.approx((2 + 2 + 4) / 3)
    assert got["churn_vs_lossless"] == pytest.approx((1 + 1 + 3) / 3)
    assert got["floor"] == 1


def test_a_problem_missing_at_one_seed_leaves_every_seed(table):
    short = table[~((table["seed"] == 2) & (table["method"] == "dropmatch") & (table["prompt_id"] == "HumanEval/0"))]
    got = seeds.per_seed(short)
    assert (got["problems"] == N - 1).all()
    assert list(got["lost"]) == [0, 0, 1]  # problem 0, which seeds 0 and 2 lost, is out


def test_the_pooled_verdict_keeps_a_problems_seeds_together(table):
    pooled = against_lossless(table).set_index("rule").loc["DropMatch js+majority"]
    assert pooled["pairs"] == 3 * N and pooled["clusters"] == N and pooled["problems"] == N
    assert (pooled["lost"], pooled["gained"]) == (3, 2)
    assert pooled["score_diff"] == pytest.approx(-1 / 30)


def test_without_the_control_the_floor_is_unknown(table):
    got = seeds.spread(table[table["criterion"] != "tie-only"])
    assert got["floor"].isna().all()
