"""The tables behind a sweep's report, on handmade tables whose answers are known: per setting (medians, pooled
tau, pooled relaxed cost, lossless first at each gamma), per category at the centre, and the paired task scores."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dropmatch.metrics import round_anatomy
from dropmatch.tables.summary import mcnemar_p, paired_p, per_category, summary
from dropmatch.tables.tradeoff import held, infer_centre, setting_points
from dropmatch.tables.verdict import against_lossless

MEDIANS = ("acceptance_rate", "tokens_per_s", "speedup", "speedup_cpu", "tau_gain", "first_divergence", "loadavg")


def cells(method, gamma, taus, n_tokens, cost=(0.0, 0.0), emitted=(0, 0), **setting) -> list[dict]:
    """One row per prompt (p0 in category a, p1 in b) of one setting; tau = N / T for each prompt."""
    base = {"suite": "s", "method": method, "gamma": gamma, "K": None, "p_drop": None, "criterion": None, "knob": None}
    return [
        base
        | setting
        | {m: 1.0 for m in MEDIANS}
        | {
            "prompt_id": f"p{i}",
            "category": "ab"[i],
            "tau": tau,
            "n_tokens": n,
            "target_forwards": n / tau,
            "equal_share": 1.0 if method == "lossless" else 0.5,
            "length_ratio": 1.0,
            "score": None,
            "capped": float(i == 0),
            "loop": 0.0,
            "loop_relaxed": None,
            "relaxed_cost_sum": c,
            "relaxed_emitted": e,
            "mean_logp": -1.0 - i,
        }
        for i, (tau, n, c, e) in enumerate(zip(taus, n_tokens, cost, emitted))
    ]


CENTRE = {"K": 5, "p_drop": 0.3, "criterion": "js+majority"}


@pytest.fixture
def table() -> pd.DataFrame:
    dm = CENTRE
    return pd.DataFrame(
        cells("relative", 5, (3.0, 3.0), (30, 30), criterion="typical", knob=0.09)
        + cells("lossless", 8, (2.5, 2.5), (10, 10))
        + cells("dropmatch", 5, (4.0, 6.0), (20, 60), cost=(1.0, 6.0), emitted=(1, 2), **dm)
        + cells("lossless", 5, (2.0, 5.0), (10, 50))
    )


def test_summary_has_one_row_per_setting_lossless_first_at_each_gamma(table):
    out = summary(table)
    assert list(zip(out["gamma"], out["method"])) == [
        (5, "lossless"),
        (5, "dropmatch"),
        (5, "relative"),
        (8, "lossless"),
    ]
    assert list(out["prompts"]) == [2, 2, 2, 2]
    assert "score" not in out and "loop_relaxed" not in out  # no setting has a value: the column goes
    assert list(out.columns[:10]) == [
        *("suite", "method", "gamma", "K", "p_drop", "criterion", "knob", "family"),
        *("prompts", "tau"),
    ]
    assert list(out["family"]) == ["", "reads the dropout paths", "reads the target only", ""]


def test_summary_takes_medians_and_pools_tau_and_the_relaxed_cost(table):
    out = summary(table).set_index(["gamma", "method"])
    lossless, dm = out.loc[(5, "lossless")], out.loc[(5, "dropmatch")]
    assert lossless["tau"] == 3.5 and lossless["tau_pooled"] == 60 / 15  # median of 2 and 5; sum N / sum T
    assert dm["tau"] == 5.0 and dm["tau_pooled"] == pytest.approx(80 / (5 + 10))
    assert dm["relaxed_cost_mean"] == pytest.approx(7 / 3)  # pooled over acceptances, not the mean of 1 and 3
    assert math.isnan(lossless["relaxed_cost_mean"])  # nothing relaxed
    assert dm["capped"] == 0.5 and dm["equal_share"] == 0.5 and dm["mean_logp"] == -1.5


def test_round_anatomy_counts_an_outputs_rounds_from_its_reasons():
    """Three rounds: a relaxed acceptance at position 1 followed by an exact one and a rejection; five exact drafts
    and the bonus; a round the output's end cut after a relaxed and an exact token."""
    got = round_anatomy("exact js exact correction exact exact exact exact exact bonus js exact")
    assert got == {"verified": 11, "disagreed": 3, "relaxed": 2, "followed": 2, "after": 2, "after_disagreed": 0}
    # two relaxed in a row, then a rejection: the first buys the second, each is followed by a disagreement
    got = round_anatomy("mars tie correction")
    assert got == {"verified": 3, "disagreed": 3, "relaxed": 2, "followed": 1, "after": 2, "after_disagreed": 2}
    assert set(round_anatomy("target target").values()) == {0}  # plain decoding verifies no draft


def test_summary_pools_how_the_rounds_went(table):
    """Lossless disagrees at 2 of 10 verified positions; DropMatch's two outputs: 3 disagreements of 11, 2 accepted,
    each followed by one accepted draft, neither followed by a disagreement."""
    reasons = {
        "lossless": ["exact correction exact exact exact exact exact bonus", "exact exact correction"],
        "dropmatch": ["exact js exact correction exact exact exact exact exact bonus", "js exact"],
        "relative": [None, None],  # an older sweep's rows: no reasons
    }
    five = table[table["gamma"] == 5]
    five = five.assign(reasons=[r for m in ("relative", "dropmatch", "lossless") for r in reasons[m]])
    out = summary(five).set_index("method")
    assert out.loc["lossless", "disagreement"] == pytest.approx(2 / 10)
    assert out.loc["lossless", "relaxed_of_disagreements"] == 0 and math.isnan(out.loc["lossless", "follow_on"])
    dm = out.loc["dropmatch"]
    assert (dm["disagreement"], dm["relaxed_of_disagreements"]) == pytest.approx((3 / 11, 2 / 3))
    assert (dm["follow_on"], dm["disagreement_after_relaxed"]) == (1.0, 0.0)
    assert math.isnan(out.loc["relative", "disagreement"])
    assert "disagreement" not in summary(table)  # no reasons at all: no column


def test_per_category_sets_lossless_beside_dropmatch_at_the_centre(table):
    out = per_category(table).set_index("category")
    assert out.loc["a", "lossless tau"] == 2.0 and out.loc["b", "lossless tau"] == 5.0  # gamma 5, not 8
    assert out.loc["a", "dropmatch tau"] == 4.0 and out.loc["b", "dropmatch tau"] == 6.0
    assert "relative tau" not in out and "lossless score" not in out


def test_per_category_gives_the_share_solved_not_the_median_score(table):
    """Category a: lossless solves 2 of 3 prompts, DropMatch 1 of 3: a median would read 1 and 0."""
    extra = [
        row | {"prompt_id": f"q{k}", "category": "a"}
        for k in range(2)
        for row in cells("lossless", 5, (2.0,), (10,)) + cells("dropmatch", 5, (4.0,), (20,), **CENTRE)
    ]
    scored = pd.concat([table, pd.DataFrame(extra)], ignore_index=True)
    solved = {("lossless", "p0"): 1, ("lossless", "q0"): 1, ("dropmatch", "q1"): 1}
    scored["score"] = [float(solved.get((m, p), 0)) for m, p in zip(scored["method"], scored["prompt_id"])]
    out = per_category(scored).set_index("category")
    assert out.loc["a", "lossless score"] == pytest.approx(2 / 3)
    assert out.loc["a", "dropmatch score"] == pytest.approx(1 / 3)
    assert out.loc["a", "lossless tau"] == 2.0  # the rest stay medians


def test_span_gated_dropmatch_neither_sets_the_centre_nor_stands_at_it(table):
    """Span-gated DropMatch is a rule of its own: six gated rows at p_drop 0.5 would outvote the two plain rows at
    0.3 for the centre, and gated rows at 0.3 (tau 9) would move the centre's medians."""
    dm = {"K": 5, "criterion": "js+majority", "span_gate": True}
    gated = [row for _ in range(3) for row in cells("dropmatch", 5, (9.0, 9.0), (90, 90), p_drop=0.5, **dm)]
    gated += cells("dropmatch", 5, (9.0, 9.0), (90, 90), p_drop=0.3, **dm)
    both = pd.concat([table.assign(span_gate=False), pd.DataFrame(gated)], ignore_index=True)
    assert infer_centre(both)["p_drop"] == 0.3
    assert not held(both)["span_gate"].any() and len(held(both)) == 2
    out = per_category(both).set_index("category")
    assert out.loc["a", "dropmatch tau"] == 4.0 and out.loc["b", "dropmatch tau"] == 6.0  # the plain rows alone
    assert {"DropMatch js+majority", "DropMatch js+majority (span-gated)"} <= set(setting_points(both)["rule"])


@pytest.mark.parametrize("lost, gained, p", [(0, 0, 1.0), (6, 2, 0.2890625), (2, 6, 0.2890625), (10, 0, 2 / 1024)])
def test_mcnemar_exact(lost, gained, p):
    assert mcnemar_p(lost, gained) == pytest.approx(p)


@pytest.mark.parametrize("lost, gained", [(0, 0), (6, 2), (2, 6), (10, 0), (12, 2), (9, 23)])
def test_the_paired_test_on_one_pair_per_problem_is_exact_mcnemar(lost, gained):
    base = [1] * lost + [0] * gained + [1, 0, 1]  # three concordant problems, which change nothing
    other = [0] * lost + [1] * gained + [1, 0, 1]
    assert paired_p(base, other) == pytest.approx(mcnemar_p(lost, gained))


@pytest.mark.parametrize(
    "diffs, p",
    [
        ([2, 2, 2], 2 / 8),  # three problems gained on both seeds: only the all-same signs reach |6|
        ([2, 1, -1], 6 / 8),  # sum 2; of the 8 sign patterns of (2, 1, 1) only the two that sum to 0 fall short
        ([1, 0, -1, 0], 1.0),
        ([2, 2, 2, 2, 2, 1], 2 / 64),  # |sum| 11 is reached only with all signs alike; the next value is 9
    ],
)
def test_the_paired_test_keeps_a_problems_seeds_together(diffs, p):
    base, other, groups = [], [], []
    for problem, d in enumerate(diffs):  # two seeds a problem; d = other - base summed over them
        pairs = {2: [(0, 1), (0, 1)], 1: [(0, 1), (1, 1)], 0: [(1, 1), (0, 0)], -1: [(1, 0), (0, 0)]}[d]
        base += [b for b, _ in pairs]
        other += [o for _, o in pairs]
        groups += [problem, problem]
    assert paired_p(base, other, groups) == pytest.approx(p)
    # taking the (problem, seed) pairs as independent would overstate significance wherever a problem moved twice
    if 2 in diffs:
        lost, gained = sum(b > o for b, o in zip(base, other)), sum(o > b for b, o in zip(base, other))
        assert mcnemar_p(lost, gained) < p


def test_the_paired_test_refuses_scores_that_are_not_0_or_1():
    with pytest.raises(ValueError, match="0/1 scores"):
        paired_p([0.5, 1], [1, 1])


def test_against_lossless_counts_lost_and_gained_problems_per_setting():
    def rows(method, scores, **setting):
        return [
            {
                "method": method,
                "gamma": 5,
                "K": None,
                "p_drop": None,
                "criterion": None,
                "knob": None,
                "prompt_id": f"HumanEval/{i}",
                "score": s,
                "n_tokens": 10,
                "target_forwards": 4,
                "speedup": 1.0,
                "speedup_cpu": 1.0,
                "equal_share": 1.0,
                "length_ratio": 1.0,
                "loop": 0,
                "loop_relaxed": None,
                "capped": 0,
                "relaxed_cost_sum": 0.0,
                "relaxed_emitted": 0,
                "mean_logp": -1.0,
            }
            | setting
            for i, s in enumerate(scores)
        ]

    df = pd.DataFrame(
        rows("lossless", [1, 1, 0, 0])
        + rows("relative", [0, 1, 1, 1], criterion="top-k", knob=3)
        + rows("dropmatch", [1, 1, 0, 0], K=5, p_drop=0.3, criterion="js+majority")
        + rows("dropmatch", [0, 0, 0, 0], K=8, p_drop=0.3, criterion="js+majority")
    )
    paired = against_lossless(df).set_index("rule")  # DropMatch at the compared K (the paper's 5) only
    assert len(paired) == 2
    assert paired.loc["DropMatch js+majority", "problems"] == 4
    assert paired.loc["top-k", ["lost", "gained", "problems"]].tolist() == [1, 2, 4]
    assert paired.loc["top-k", "mcnemar_p"] == pytest.approx(mcnemar_p(1, 2)) == 1.0
    assert paired.loc["DropMatch js+majority", ["lost", "gained"]].tolist() == [0, 0]
    assert paired.loc["top-k", "score"] == 0.75 and paired.loc["top-k", "score_lossless"] == 0.5
