"""The speed / quality trade-off across rules: per-setting points, the Pareto front, the matched-tau table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dropmatch.tables.tradeoff import matched_knob, matched_table, pareto_front, setting_points
from viz.sweep import tradeoff, tradeoff_measures


def rows(method, tau, quality, prompts=2, **setting) -> list[dict]:
    """`prompts` rows of one setting with the given pooled tau (N = 60 over 60 / tau forwards) and quality."""
    base = {"method": method, "gamma": 5, "K": None, "p_drop": None, "criterion": None, "knob": None} | setting
    return [
        base
        | {
            "prompt_id": f"p{i}",
            "n_tokens": 60,
            "target_forwards": 60 / tau,
            "speedup": tau / 3,
            "speedup_cpu": tau / 3,
            "score": quality,
            "equal_share": quality,
            "length_ratio": 1.0,
            "loop": 0.0,
            "loop_relaxed": np.nan,
            "capped": 1.0,
            "relaxed_cost_sum": 2.0 * (1 - quality),
            "relaxed_emitted": 2,
            "mean_logp": -1.0,
        }
        for i in range(prompts)
    ]


@pytest.fixture
def table() -> pd.DataFrame:
    dm = {"K": 5, "criterion": "js+majority"}
    return pd.DataFrame(
        rows("lossless", 3.0, 1.0)
        + rows("dropmatch", 4.0, 0.6, p_drop=0.3, **dm)
        + rows("dropmatch", 4.5, 0.5, p_drop=0.5, **dm)
        + rows("dropmatch", 9.0, 0.0, K=8, p_drop=0.3, criterion="js+majority")  # another K: not on the curve
        + rows("relative", 3.5, 0.9, criterion="typical", knob=0.3)
        + rows("relative", 5.0, 0.4, criterion="typical", knob=0.09)
        + rows("relative", 3.2, 0.95, criterion="top-k", knob=2)
        + rows("relative", 4.2, 0.7, criterion="top-k", knob=3)
        + rows("relative", 3.1, 0.99, criterion="mars", knob=0.9)
        + rows("relative", 3.3, 0.98, criterion="mars", knob=0.7)
    )


def test_setting_points_pool_tau_and_keep_one_curve_per_rule(table):
    pts = setting_points(table)
    assert set(pts["rule"]) == {"lossless", "DropMatch js+majority", "typical", "top-k", "mars"}
    assert len(pts) == 9  # the K 8 point is not compared (another K)
    dm = pts[pts["rule"] == "DropMatch js+majority"].set_index("knob")
    assert dm.loc[0.3, "tau"] == pytest.approx(4.0) and dm.loc[0.5, "knob_name"] == "p_drop"
    typical = pts[pts["rule"] == "typical"].set_index("knob")
    assert typical.loc[0.09, "relaxed_cost_mean"] == pytest.approx(2 * 0.6 * 2 / 4)  # pooled: sum cost / sum count
    assert typical.loc[0.09, "knob_name"] == "epsilon"


def test_pareto_front_marks_the_points_nothing_beats(table):
    pts = setting_points(table)
    front = dict(zip(zip(pts["rule"], pts["knob"].fillna(-1)), pareto_front(pts, "score")))
    assert front[("lossless", -1)]  # the best score
    assert front[("typical", 0.09)]  # the fastest
    assert front[("top-k", 3)] and not front[("DropMatch js+majority", 0.3)]  # top-k 3: faster and better than it
    assert front[("mars", 0.7)]  # (3.3, 0.98): nothing is both faster and better
    assert not front[("top-k", 2)]  # (3.2, 0.95): mars 0.7 is both
    lower = pareto_front(pts, "relaxed_cost_mean")  # here cost = 1 - score: lower is better, the same front
    assert lower.tolist() == pareto_front(pts, "score").tolist() and lower.sum() >= 3


@pytest.mark.parametrize(
    "knobs, taus, target, integer, expected",
    [
        ([0.1, 0.3], [3.0, 5.0], 4.0, False, 0.2),  # rising
        ([0.09, 0.3], [5.0, 3.5], 4.0, False, 0.09 + (4.0 - 5.0) * (0.3 - 0.09) / (3.5 - 5.0)),  # falling
        ([2, 3, 5], [3.2, 4.2, 5.5], 4.0, True, 3.0),  # integer: the nearer measured knob
        ([0.7, 0.9], [3.3, 3.1], 4.0, False, None),  # out of range
    ],
)
def test_matched_knob(knobs, taus, target, integer, expected):
    found = matched_knob(pd.DataFrame({"knob": knobs, "tau": taus}), target, integer)
    if expected is None:
        assert found is None
    else:
        assert found[0] == pytest.approx(expected)


def test_matched_table_interpolates_quality_and_says_what_it_could_not_reach(table):
    m = matched_table(table).set_index("rule")
    assert list(m.index[:2]) == ["lossless", "DropMatch js+majority"] and (m["tau_target"] == 4.0).all()
    typical = m.loc["typical"]
    assert typical["tau"] == pytest.approx(4.0) and typical["score"] == pytest.approx(0.9 + (0.4 - 0.9) * (1 / 3))
    assert "interpolated" in typical["basis"]
    assert m.loc["top-k", "knob"] == 3 and "nearest" in m.loc["top-k", "basis"]
    assert math.isnan(m.loc["mars", "knob"]) and m.loc["mars", "basis"].startswith("not reached (tau 3.10-3.30)")


def test_the_tradeoff_figure_has_a_curve_per_rule_and_names_its_front(table):
    assert "score" in tradeoff_measures(table)
    fig = tradeoff(table, "score")
    names = [d.name for d in fig.data]
    assert {"lossless", "DropMatch js+majority", "typical (greedy reading)", "top-k", "mars (greedy reading)"} <= set(
        names
    )  # at T = 0 typical acceptance and MARS are this project's readings of their sources, and say so
    assert "typical" in {d.name for d in tradeoff(table.assign(temperature=0.7), "score").data}
    assert "Pareto front (ringed)" in names and fig.layout.meta["measure"] == "score"
    assert sum(fig.layout.meta["front"]) >= 2


def test_a_knob_within_one_percent_is_named_with_its_own_tau():
    # FLy's two knobs decode almost alike (tau 5.07, 5.09): no pair brackets 5.02, but 5.07 lies within 1%
    found = matched_knob(pd.DataFrame({"knob": [0.0, 0.3], "tau": [5.09, 5.07]}), 5.02)
    assert found == (0.3, "measured at 0.3 (tau 5.07, within 1%)")
    assert matched_knob(pd.DataFrame({"knob": [0.0, 0.3], "tau": [5.09, 5.07]}), 4.9) is None  # 3.5% away
