"""The verdict's tables on handmade score tables with known answers: the paired bootstrap interval, every setting
against lossless, rule against rule at a matched tau, the headline (the largest tau within the field's bar), and
a recording in parts judged on its whole settings only."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from dropmatch import cli
from dropmatch.tables import power, verdict
from dropmatch.tables.summary import mcnemar_p

DM = {"K": 5, "criterion": "js+majority"}


def rows(method, tau, scores, **setting) -> list[dict]:
    """One setting's rows, one per problem with the given 0/1 scores; pooled tau = 60 N over 60 / tau forwards."""
    base = {"method": method, "gamma": 5, "K": None, "p_drop": None, "criterion": None, "knob": None} | setting
    return [
        base
        | {
            "prompt_id": f"HumanEval/{i}",
            "n_tokens": 60,
            "target_forwards": 60 / tau,
            "speedup": 1.0,
            "speedup_cpu": 1.0,
            "score": float(s),
            "equal_share": 1.0,
            "length_ratio": 1.0,
            "loop": 0.0,
            "loop_relaxed": np.nan,
            "capped": 0.0,
            "relaxed_cost_sum": 1.0,
            "relaxed_emitted": 1,
            "mean_logp": -0.2,
            "ties": 0,
        }
        for i, s in enumerate(scores)
    ]


N = 164
BASE = [1] * 120 + [0] * 44  # lossless solves 120 of 164


def flip(scores, lose=0, gain=0):
    """`scores` with the first `lose` solved problems failed and the first `gain` failed problems solved."""
    out, solved, failed = (
        list(scores),
        [i for i, s in enumerate(scores) if s],
        [i for i, s in enumerate(scores) if not s],
    )
    for i in solved[:lose]:
        out[i] = 0
    for i in failed[:gain]:
        out[i] = 1
    return out


@pytest.fixture
def table() -> pd.DataFrame:
    return pd.DataFrame(
        rows("lossless", 4.8, BASE)
        + rows("dropmatch", 5.0, flip(BASE, lose=2), p_drop=0.1, **DM)  # 2 lost: on the bar
        + rows("dropmatch", 5.4, flip(BASE, lose=6, gain=1), p_drop=0.3, **DM)  # 5 net lost: off it
        + rows("relative", 5.2, flip(BASE, lose=1), criterion="typical", knob=0.6)
        + rows("relative", 5.6, flip(BASE, lose=3, gain=1), criterion="typical", knob=0.3)  # 2 net: on it
        + rows("relative", 6.0, flip(BASE, lose=9), criterion="typical", knob=0.1)
        + rows("relative", 4.9, flip(BASE, lose=4), criterion="fuzzy-js", knob=0.1)  # off the bar everywhere
        + rows("relative", 5.3, flip(BASE, lose=8), criterion="fuzzy-js", knob=0.2)
        + rows("relative", 5.15, BASE, criterion="fuzzy-tv", knob=0.25)  # parts from lossless on no problem
    )


def test_paired_bootstrap_interval_has_known_ends():
    same = [1, 0, 1, 1, 0] * 20
    assert verdict.paired_bootstrap(same, same) == (0.0, 0.0)  # no problem differs: no spread
    assert verdict.paired_bootstrap([0] * 50, [1] * 50) == (1.0, 1.0)
    base = [1] * 1000
    other = [0] * 100 + [1] * 900  # difference -0.1, sd of the mean sqrt(0.09 / 1000) = 0.0095
    low, high = verdict.paired_bootstrap(base, other)
    assert low == pytest.approx(-0.1 - 1.96 * 0.0095, abs=0.002) and high == pytest.approx(
        -0.1 + 1.96 * 0.0095, abs=0.002
    )
    assert all(math.isnan(v) for v in verdict.paired_bootstrap([], []))


def test_every_setting_against_lossless(table):
    got = verdict.against_lossless(table).set_index(["rule", "knob"])
    dm = got.loc[("DropMatch js+majority", 0.3)]
    assert (dm["lost"], dm["gained"], dm["problems"]) == (6, 1, N)
    assert dm["mcnemar_p"] == pytest.approx(mcnemar_p(6, 1)) and dm["mcnemar_p"] == pytest.approx(2 * 8 / 128)
    assert dm["score_diff"] == pytest.approx(-5 / N) and dm["diff_low"] < -5 / N < dm["diff_high"] <= 0
    assert dm["tau"] == pytest.approx(5.4) and not dm["point_within_bar"]
    assert got.loc[("DropMatch js+majority", 0.1), "point_within_bar"]  # 2 of 164 lost: exactly on the bar
    assert got.loc[("typical", 0.3), "point_within_bar"] and not got.loc[("typical", 0.1), "point_within_bar"]


def test_non_inferiority_rests_on_the_one_sided_bounds_not_the_point_estimate(table):
    """The bar is -2/164. No problem parted: the lower bound is 0, non-inferior. 9 lost, none gained: d = -9/164,
    sd of the mean sqrt(9/164 - d^2) / sqrt(164) = 1.78 points, one-sided upper bound about -5.5 + 1.645 * 1.78 =
    -2.6 points, below the bar: inferior. 2 lost: the point estimate sits on the bar, its lower bound below it, its
    upper bound (0) above: cannot tell."""
    got = verdict.against_lossless(table).set_index(["rule", "knob"])
    same = got.loc[("fuzzy-tv", 0.25)]  # no problem parted: the score interval still leaves a little room below 0
    assert same["non_inferior"] == "yes" and -verdict.bar_share() < same["diff_lower"] < 0
    assert got.loc[("typical", 0.1), "non_inferior"] == "no"
    on_bar = got.loc[("DropMatch js+majority", 0.1)]
    assert on_bar["point_within_bar"] and on_bar["non_inferior"] == "cannot tell"
    # resampled, the 2 lost problems come back 5 or more times in 5.3% of draws (Poisson 2): the bound is -5/164
    assert on_bar["diff_lower"] == pytest.approx(-5 / N) and on_bar["diff_lower"] < -verdict.bar_share()
    assert on_bar["diff_low"] <= on_bar["diff_lower"]  # the two-sided 95% end lies beyond the one-sided 95% bound
    # 2 discordant of 164: psi 2/164; [1.96 sqrt(psi) + 0.8416 sqrt(psi - d^2)]^2 / d^2 = 164 at d = 0.0240
    assert on_bar["detectable_loss"] == pytest.approx(0.0240, abs=0.0002)
    assert got.loc[("fuzzy-tv", 0.25), "detectable_loss"] == 0  # nothing parts: any loss would show
    assert (got["design_effect"] == 1).all() and (got["clusters"] == N).all()  # HumanEval: a problem is its own


def test_holm_adjusts_a_tables_p_values_step_down():
    """p = 0.01, 0.04, 0.03, NaN over m = 3 tests: 0.01 * 3, then max(0.03, 0.03 * 2) = 0.06, then max(0.06, 0.04)."""
    got = verdict.holm([0.01, 0.04, 0.03, float("nan")])
    assert got[:3] == pytest.approx([0.03, 0.06, 0.06]) and math.isnan(got[3])
    assert verdict.holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])  # capped at 1
    table = verdict.against_lossless(
        pd.DataFrame(rows("lossless", 4.8, BASE) + rows("relative", 5, BASE, criterion="a", knob=1))
    )
    assert "holm_p" in table


def test_word_problems_cluster_by_template_in_the_test_the_interval_and_the_plan():
    """Two templates of 60 problems each. The relaxed rule fails all of template a's first 6 problems (a template
    that moves together) and nothing else: by problem the exact test would give p = 2/64, by template the one
    cluster that parted can only flip as a whole (p = 1); the design effect is the cluster size's worth."""
    ids = [f"a-01#{k}" for k in range(60)] + [f"b-02#{k}" for k in range(60)]
    base = [1] * 120
    mine = [0] * 6 + [1] * 114

    def cells(method, scores, **setting):
        out = rows(method, 5.0, scores, **setting)
        return [r | {"prompt_id": i} for r, i in zip(out, ids)]

    table = pd.DataFrame(cells("lossless", base) + cells("relative", mine, criterion="typical", knob=0.3))
    got = verdict.against_lossless(table).iloc[0]
    assert got["clusters"] == 2 and got["problems"] == 120
    assert got["mcnemar_p"] == pytest.approx(1.0)
    # the clustered variance of the mean difference over the independent one, computed by hand from the centred d
    d = np.array(mine, float) - 1
    c = d - d.mean()
    expected = 2 * (c[:60].sum() ** 2 + c[60:].sum() ** 2) / 120**2 / ((c**2).sum() / (120 * 119))
    assert got["design_effect"] == pytest.approx(expected) and got["design_effect"] > 5
    low, high = got["design_effect_low"], got["design_effect_high"]  # two templates: a wide, rough interval
    assert low - 1e-9 <= got["design_effect"] <= high + 1e-9
    assert (low, high) == power.design_effect_interval(d, [i[:4] for i in ids])
    assert verdict.cluster("a-01#17") == "a-01" and verdict.cluster("HumanEval/17") == "HumanEval/17"


def test_the_clusters_are_checked_one_level_up_by_kind(monkeypatch, capsys):
    """Four templates, two a kind, 30 problems each. The rule loses 10 problems of every template of kind x and none
    of kind y: within a kind its templates move alike, so the correlation by kind matches the one by template and
    the design effects are what the same functions give on the kinds; HumanEval's problems (no template) have none."""
    ids = [f"{t}#{k}" for t in ("x-01", "x-02", "y-01", "y-02") for k in range(30)]
    kind = [i[0] for i in ids]
    mine = ([0] * 10 + [1] * 20) * 2 + [1] * 60

    def cells(method, scores, **setting):
        out = rows(method, 5.0, scores, **setting)
        return [r | {"prompt_id": i, "category": k} for r, i, k in zip(out, ids, kind)]

    table = cells("lossless", [1] * 120) + cells("relative", mine, criterion="typical", knob=0.3)
    table = pd.DataFrame(table + cells("relative", [1] * 120, criterion="fuzzy-js", knob=0.1))
    checked = verdict.clusters_checked(table)
    assert checked[["rule", "knob"]].values.tolist() == [["fuzzy-js", 0.1], ["typical", 0.3]]  # the settings run
    got = checked.iloc[1]
    d = np.array(mine, float) - 1
    assert (got["templates"], got["kinds"], got["problems"]) == (4, 2, 120)
    # rho as the planner reads it from the design effect: (design effect - 1) / (pairs a cluster - 1)
    deff_template = power.design_effect(d, [i[:4] for i in ids])
    assert got["design_effect_template"] == pytest.approx(deff_template)
    assert got["rho_template"] == pytest.approx((deff_template - 1) / (30 - 1))
    assert got["design_effect_kind"] == pytest.approx(power.design_effect(d, kind))
    assert got["rho_kind"] == pytest.approx((got["design_effect_kind"] - 1) / (60 - 1)) and got["rho_kind"] > 0.2
    assert (got["design_effect_kind_low"], got["design_effect_kind_high"]) == power.design_effect_interval(d, kind)
    assert got["design_effect_kind"] > got["design_effect_template"] > 1  # kinds are bigger clusters of alike pairs
    humaneval = rows("lossless", 4.8, BASE) + rows("relative", 5.0, BASE, criterion="typical", knob=0.3)
    assert verdict.clusters_checked(pd.DataFrame(humaneval)).empty
    monkeypatch.setattr(cli.sweep, "load_sweep", lambda source, limit=None: table.assign(suite="word-problems"))
    assert cli.main(["power", "--from", "recorded", "--suite", "word-problems", "--loss", "2/164"]) == 0
    printed = capsys.readouterr().out.split("the clusters checked one level up")[1].splitlines()
    typical = next(line.split() for line in printed if line.lstrip().startswith("typical"))
    assert typical[:6] == [
        "typical",
        "0.3",
        "120",
        "4",
        f"{got['rho_template']:.3f}",
        f"{got['design_effect_template']:.3f}",
    ]


def test_every_setting_is_judged_within_each_kind_of_problem_with_holm_over_the_table():
    """Four templates, two a kind, 30 problems each. The rule loses 10 problems of each template of kind x and none
    of kind y; a second rule loses one problem of kind y. Within kind x the two templates' summed differences (-10,
    -10) are the exact test's clusters: both signs flipped alike, p = 2 / 4. HumanEval's one category gives none."""
    ids = [f"{t}#{k}" for t in ("x-01", "x-02", "y-01", "y-02") for k in range(30)]
    kind = [i[0] for i in ids]

    def cells(method, scores, **setting):
        out = rows(method, 5.0, scores, **setting)
        return [r | {"prompt_id": i, "category": k} for r, i, k in zip(out, ids, kind)]

    lossing = ([0] * 10 + [1] * 20) * 2 + [1] * 60
    one = [1] * 60 + [0] + [1] * 59
    table = cells("lossless", [1] * 120) + cells("relative", lossing, criterion="typical", knob=0.3)
    table = pd.DataFrame(table + cells("relative", one, criterion="fuzzy-js", knob=0.1))
    got = verdict.by_category(table).set_index(["rule", "category"])
    assert len(got) == 4
    x = got.loc[("typical", "x")]
    assert (x["problems"], x["clusters"], x["lost"], x["gained"]) == (60, 2, 20, 0)
    assert (x["score_lossless"], x["score"], x["score_diff"]) == pytest.approx((1.0, 40 / 60, -1 / 3))
    assert x["mcnemar_p"] == pytest.approx(0.5)  # two clusters, not McNemar's 2^-19 over 20 problems
    assert x["diff_low"] == pytest.approx(-1 / 3) and x["diff_high"] == pytest.approx(-1 / 3)  # alike templates
    y = got.loc[("typical", "y")]
    assert (y["lost"], y["gained"], y["score_diff"], y["mcnemar_p"]) == (0, 0, 0.0, 1.0)
    assert got.loc[("fuzzy-js", "y"), "lost"] == 1 and got.loc[("fuzzy-js", "x"), "lost"] == 0
    assert got["holm_p"].tolist() == pytest.approx(list(verdict.holm(got["mcnemar_p"])))
    assert got.loc[("typical", "x"), "holm_p"] == pytest.approx(min(1.0, 0.5 * 4))  # the smallest of four tests
    # each problem its own cluster (no template): the exact McNemar test within a kind
    plain = table.assign(prompt_id=[f"P/{i}" for i in range(120)] * 3)
    x = verdict.by_category(plain).set_index(["rule", "category"]).loc[("typical", "x")]
    assert x["clusters"] == 60 and x["mcnemar_p"] == pytest.approx(mcnemar_p(20, 0))
    humaneval = rows("lossless", 4.8, BASE) + rows("relative", 5.0, BASE, criterion="typical", knob=0.3)
    assert verdict.by_category(pd.DataFrame(humaneval).assign(category="humaneval")).empty
    from viz.verdict import verdict_tables

    shown, _ = verdict_tables(table, lambda _: None, "{bar}")
    fold = re.search(r"<details class=dm-fold open><summary>By problem kind \(2 kinds\).*?</details>", shown, re.S)
    assert fold and "No setting&#x27;s loss on any kind is told from zero after Holm over the 4 tests" in fold[0]
    assert "(smallest Holm p 1.00: typical (greedy reading) on x, -33.3%)" in fold[0]
    assert "By problem kind" not in verdict_tables(pd.DataFrame(humaneval).assign(category="h"), lambda _: None, "")[0]
    from viz.verdict import problem_kinds_heatmap

    fig = problem_kinds_heatmap(verdict.by_category(table), greedy_=True)
    heat, settings = fig.data[0], fig.layout.meta["settings"]
    assert list(heat.y) == ["x", "y"] and sorted(settings) == ["fuzzy-js 0.1", "typical (greedy reading) 0.3"]
    t, f = settings.index("typical (greedy reading) 0.3"), settings.index("fuzzy-js 0.1")
    assert list(heat.x) == settings
    assert heat.z[0][t] == pytest.approx(-100 / 3) and heat.z[1][t] == 0 and heat.z[1][f] == pytest.approx(-100 / 60)
    assert [heat.text[0][t], heat.text[1][t]] == ["-33", "+0"] and heat.zmid == 0 and heat.zmin == -heat.zmax
    assert "20 lost, 0 gained; exact p 0.5" in heat.customdata[0][t] and "Holm over 4 tests 1" in heat.customdata[0][t]
    assert "[-33.3, -33.3]" in heat.customdata[0][t] and "on 60 problems (2 templates)" in heat.customdata[0][t]
    kinds = verdict.by_category(table)
    strong = kinds.assign(holm_p=np.where(kinds["rule"].eq("typical") & kinds["category"].eq("x"), 0.01, 1.0))
    assert problem_kinds_heatmap(strong, greedy_=True).data[0].text[0][t] == "-33*"  # as if it survived Holm
    flat = problem_kinds_heatmap(verdict.by_category(plain), greedy_=True).data[0].customdata  # no templates
    assert all("(McNemar)" in h and "template" not in h for row in flat for h in row)
    assert "one kind" in problem_kinds_heatmap(pd.DataFrame(), greedy_=True).layout.annotations[0].text


def test_headline_takes_the_largest_tau_shown_non_inferior_and_reads_pass_at_dropmatchs_taus(table):
    head = verdict.headline(table).set_index("rule")
    assert head.loc["typical", "best_tau_point_within_bar"] == pytest.approx(5.6)  # not 5.2: 5.6 keeps the bar too
    assert head.loc["typical", "knob_point"] == 0.3
    assert head.loc["DropMatch js+majority", "best_tau_point_within_bar"] == pytest.approx(5.0)
    assert math.isnan(head.loc["fuzzy-js", "best_tau_point_within_bar"])  # never within the bar
    assert head.loc["lossless", "best_tau_point_within_bar"] == pytest.approx(4.8)
    # shown non-inferior: only the setting that parts from lossless nowhere; no other lower bound clears the bar
    assert head.loc["fuzzy-tv", "best_tau_non_inferior"] == pytest.approx(5.15)
    assert all(math.isnan(head.loc[r, "best_tau_non_inferior"]) for r in ("typical", "DropMatch js+majority"))
    # DropMatch's tau at p_drop 0.3 is 5.4: typical's curve there lies between 5.2 (119 solved) and 5.6 (118)
    assert head.loc["typical", "tau_at_p0.3"] == pytest.approx(5.4)
    assert head.loc["typical", "score_at_p0.3"] == pytest.approx((119 + 118) / 2 / N)
    assert head.loc["DropMatch js+majority", "score_at_p0.3"] == pytest.approx(115 / N)
    # at p_drop 0.1 (tau 5.0) fuzzy-js lies between 4.9 (116) and 5.3 (112): a quarter of the way
    assert head.loc["fuzzy-js", "score_at_p0.1"] == pytest.approx((116 - 4 * 0.25) / N)
    assert math.isnan(head.loc["typical", "score_at_p0.1"])  # typical's curve starts at tau 5.2
    assert head.loc["typical", "basis_p0.1"].startswith("not reached")


def test_rule_pairs_only_at_settings_matched_within_the_tolerance(table):
    pairs = verdict.rule_pairs(table, 5.4).set_index(["rule_a", "rule_b"])
    # nearest tau 5.4 within 0.1: DropMatch 0.3 (5.4), fuzzy-js 0.2 (5.3); typical's nearest (5.2 or 5.6) is 0.2 off
    dm_fz = pairs.loc[("DropMatch js+majority", "fuzzy-js")]
    assert (dm_fz["knob_a"], dm_fz["knob_b"]) == (0.3, 0.2)
    # DropMatch 0.3 fails solved problems 0-5 and solves 120; fuzzy-js 0.2 fails 0-7
    assert (dm_fz["a_only"], dm_fz["b_only"]) == (3, 0)
    assert dm_fz["mcnemar_p"] == pytest.approx(mcnemar_p(3, 0)) and dm_fz["holm_p"] == dm_fz["mcnemar_p"]
    assert len(pairs) == 1  # lossless is no rule, typical and fuzzy-tv are not matched
    left = verdict.unmatched_rules(table, 5.4).set_index("rule")
    assert set(left.index) == {"typical", "fuzzy-tv"} and left.loc["fuzzy-tv", "tau"] == pytest.approx(5.15)
    wide = verdict.rule_pairs(table, 5.4, tolerance=0.3)
    assert len(wide) == 6 and (wide["holm_p"] >= wide["mcnemar_p"]).all()  # four rules within 0.3: six tests


def test_a_rule_without_a_knob_is_judged_with_the_rest(table):
    """The tie-only control has no knob (NaN in the table): it is a whole setting like any other, not dropped."""
    control = pd.DataFrame(rows("relative", 4.85, flip(BASE, lose=1, gain=1), criterion="tie-only")).assign(ties=2)
    whole, partial = verdict.complete(pd.concat([table, control]))
    assert (whole["criterion"] == "tie-only").sum() == N and partial.empty
    got = verdict.against_lossless(whole).set_index("rule")
    assert (got.loc["tie-only", "lost"], got.loc["tie-only", "gained"]) == (1, 1)
    assert got.loc["tie-only", "ties"] == 2 * N  # the control's ties are all it accepts: read under its missing knob
    left = verdict.unmatched_rules(whole, 5.4).set_index("rule")  # the control's tau 4.85 is 0.55 off
    assert left["knob_free"].to_dict() == {"tie-only": True, "typical": False, "fuzzy-tv": False}


def test_the_app_names_a_rule_without_a_knob_apart_from_the_rules_not_matched(table):
    """No setting of the tie-only control can be moved to a tau: it is not 'not matched', it has nothing to match."""
    from viz.verdict import verdict_tables

    control = pd.DataFrame(rows("relative", 4.85, flip(BASE, lose=1, gain=1), criterion="tie-only"))
    shown, _ = verdict_tables(pd.concat([table, control]), lambda _: None, "{bar}")
    folds = re.findall(r"<details class=dm-fold.*?</details>", shown, flags=re.S)
    at_dm = [f for f in folds if "Rule against rule" in f]
    assert at_dm and all("No knob to match, read against lossless above: tie-only (tau 4.85)." in f for f in at_dm)
    assert not any(re.search(r"Not matched[^<]*tie-only", f) for f in at_dm)


def test_a_recording_in_parts_is_judged_on_its_whole_settings(table):
    cut = table[~((table["criterion"] == "fuzzy-js") & (table["knob"] == 0.2) & (table["prompt_id"] > "HumanEval/5"))]
    whole, partial = verdict.complete(cut)
    assert partial.to_dict("records") == [
        {"rule": "fuzzy-js", "knob": 0.2, "problems": len(cut) - len(table) + N, "of": N}
    ]
    assert not ((whole["criterion"] == "fuzzy-js") & (whole["knob"] == 0.2)).any()
    assert len(whole) == len(table) - N
    assert verdict.problems_note(N) == "within 2 of 164 problems"
    assert verdict.problems_note(40) == "within 2/164 of the problems (0.49 of the 40 run)"


def test_score_curves_shade_the_bar_around_lossless_and_draw_one_curve_per_rule(table):
    from viz.verdict import score_curves

    fig = score_curves(table)
    low, high = fig.layout.meta["band"]
    assert low == pytest.approx(120 / N - 2 / N) and high == pytest.approx(120 / N + 2 / N)
    shape = fig.layout.shapes[0]
    assert (shape.y0, shape.y1) == (low, high)
    curves = {t.name: t for t in fig.data if t.x[0] is not None}  # at T = 0 typical is this project's reading
    assert set(curves) == {"lossless", "DropMatch js+majority", "typical (greedy reading)", "fuzzy-js", "fuzzy-tv"}
    assert list(curves["typical (greedy reading)"].x) == pytest.approx([6.0, 5.6, 5.2])  # along the knob 0.1, 0.3, 0.6
    assert "typical" in {t.name for t in score_curves(table.assign(temperature=0.7)).data}  # sampled: its own rule
    assert "6 lost, 1 gained" in curves["DropMatch js+majority"].customdata[1]
    empty = score_curves(table.assign(score=np.nan))
    assert "no task score" in empty.layout.annotations[0].text


def test_bootstrap_over_problems_keeps_a_problems_replicates_together():
    # two problems, two seeds each: problem a differs on both seeds, b on neither; the mean difference is 0.5
    base, other, groups = [0, 0, 1, 1], [1, 1, 1, 1], ["a", "a", "b", "b"]
    low, high = verdict.paired_bootstrap(base, other, groups)
    assert (low, high) == (0.0, 1.0)  # resampling problems: {a, a} gives 1, {b, b} gives 0
    assert verdict.paired_bootstrap(base, other, groups, level=0.5) == (0.5, 0.5)


def test_a_sampled_sweep_pairs_each_problem_and_seed_and_tests_by_problem(table):
    sampled = pd.concat([table.assign(seed=0), table.assign(seed=1)])
    got = verdict.against_lossless(sampled).set_index(["rule", "knob"]).loc[("DropMatch js+majority", 0.3)]
    assert (got["problems"], got["pairs"], got["lost"], got["gained"]) == (N, 2 * N, 12, 2)
    # the second seed repeats the first: it adds no evidence, so the test is the one-seed test (not McNemar on 12 / 2)
    assert got["mcnemar_p"] == pytest.approx(mcnemar_p(6, 1)) and got["mcnemar_p"] > 2 * mcnemar_p(12, 2)


def test_score_curves_of_a_sampled_sweep_count_problems_and_seeds_apart(table):
    from viz.verdict import score_curves

    fig = score_curves(pd.concat([table.assign(seed=0), table.assign(seed=1)]))
    curves = {t.name: t for t in fig.data if t.x[0] is not None}
    hover = curves["DropMatch js+majority"].customdata[1]
    assert f"of {N} problems x 2 seeds" in hover and "12 lost, 2 gained (problem, seed) pairs" in hover
    assert f"p {mcnemar_p(6, 1):.2g})" in hover
    assert any(t.name == "lossless's pass@1, within 2 of 164 problems" for t in fig.data)  # 164 problems, not 328


def test_settings_a_problem_or_two_short_are_whole_and_judged_on_the_problems_all_ran(table):
    in_flight = table[
        ~((table["criterion"] == "typical") & (table["knob"] == 0.1) & (table["prompt_id"] == "HumanEval/163"))
    ]
    whole, partial = verdict.complete(in_flight)
    assert partial.empty  # one problem short: still being decoded, not a setting added later
    assert set(whole["prompt_id"]) == {f"HumanEval/{i}" for i in range(N - 1)}  # every setting on the same problems
    assert (whole.groupby(["method", "criterion", "knob", "p_drop"], dropna=False).size() == N - 1).all()


def test_dropmatch_at_the_calibration_anchors(table):
    anchors = [
        {"anchor": "unanimity", "p_drop": 0.0015},
        {"anchor": "effect", "p_drop": 0.1},
        {"anchor": "JS spread, high end", "p_drop": 0.2},
        {"anchor": "far", "p_drop": 0.5},
    ]
    got = verdict.at_anchors(table, anchors).set_index("anchor")
    # lossless at p_drop 0 (tau 4.8, 120 solved), DropMatch 0.1 (5.0, 118) and 0.3 (5.4, 115)
    assert got.loc["unanimity", "tau"] == pytest.approx(4.8 + 0.2 * 0.015)
    assert got.loc["unanimity", "basis"] == "interpolated between p_drop 0 and 0.1"
    assert (got.loc["effect", "tau"], got.loc["effect", "score"]) == (pytest.approx(5.0), pytest.approx(118 / N))
    assert got.loc["effect", "basis"] == "measured there"
    assert got.loc["JS spread, high end", "score"] == pytest.approx((118 + 115) / 2 / N)
    assert math.isnan(got.loc["far", "tau"]) and got.loc["far", "basis"].startswith("beyond")


def test_the_apps_verdict_tables_speak_plain_words_and_keep_each_definition(table):
    from viz.verdict import verdict_tables

    about = {"best_tau_non_inferior": "the largest pooled tau shown within the bar", "diff_low": "low end"}.get
    shown, whole = verdict_tables(table, about, "the bar: {bar}", [{"anchor": "effect", "p_drop": 0.1}])
    assert len(whole) == len(table) and "the bar: within 2 of 164 problems" in shown
    headers = re.findall(r"<th([^>]*)>([^<]*)</th>", shown)
    words = {text for _, text in headers}
    assert {"best τ shown within the bar", "pass@1 change", "95% interval: low", "solved by A only", "τ"} <= words
    assert {"non-inferior at the bar", "one-sided 95% lower bound", "p, Holm-corrected"} <= words
    assert not {"best_tau_non_inferior", "diff_low", "a_only", "score_at_p0.3"} & words  # no code name as a header
    titles = {text: attrs for attrs, text in headers}
    assert (
        'title="best_tau_non_inferior: the largest pooled tau shown within the bar"'
        in titles["best τ shown within the bar"]
    )
    assert 'title="diff_low: low end"' in titles["95% interval: low"]  # the CSV's name and the definition on hover
    assert "dm-wide" in titles["family"] and "dm-wide" not in titles["pass@1"]  # a phone leaves `family` out
    # the headline and the anchors in view, the long tables folded behind their titles (the page opens them when wide)
    assert shown.index("DropMatch at the calibration's anchors") < shown.index("<details class=dm-fold")
    assert shown.count("<details class=dm-fold") == 1 + len([c for c in verdict.headline(table) if "tau_at_p" in c])
    assert 'data-label="pass@1 change"' in shown  # every cell names its column
    alone, judged = verdict_tables(table.query("method != 'lossless'"), about, "{bar}")  # nothing beside lossless
    assert alone == "" and judged.empty


def test_the_score_bounds_leave_room_for_a_loss_no_problem_showed():
    """One problem gained, none lost, of 48: the bootstrap cannot go below 0, the score interval does. At large n with
    equal counts lost and gained the interval is symmetric around 0 and as wide as the normal one."""
    low, high = verdict.paired_score_bounds(21, 0, 1, 48, 1.645)
    assert -0.05 < low < -verdict.bar_share() and 0.02 < high < 0.12
    low, high = verdict.paired_score_bounds(4000, 300, 300, 10_000, 1.96)
    assert low == pytest.approx(-high, abs=1e-9)
    wald = 1.96 * math.sqrt(600 / 10_000) / math.sqrt(10_000)  # sd of a paired difference with 6% discordant
    assert high == pytest.approx(wald, rel=0.05)


def test_non_inferiority_does_not_rest_on_no_loss_seen():
    """48 problems, one gained, none lost: the bootstrap's lower bound is 0, so it alone would say non-inferior; the
    verdict takes the score interval's, below the bar: cannot tell."""
    base = [1] * 22 + [0] * 26
    mine = [1] * 23 + [0] * 25
    table = pd.DataFrame(rows("lossless", 4.8, base) + rows("relative", 5.0, mine, criterion="typical", knob=0.3))
    got = verdict.against_lossless(table).iloc[0]
    assert (got["lost"], got["gained"]) == (0, 1)
    assert got["diff_lower"] < -verdict.bar_share() and got["non_inferior"] == "cannot tell"


def _markdown_rows(text: str) -> dict[str, list[str]]:
    """A Markdown table's body as {setting: its other cells}."""
    body = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| setting")]
    return {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("| ").split(" | ")] for line in body)}


def test_the_verdict_as_markdown_reads_as_its_table(table):
    """One row per setting, lossless first; each cell the verdict table's own number, in points where a share."""
    text = verdict.markdown(table)
    got = _markdown_rows(text)
    assert list(got)[0] == "lossless" and got["lossless"][:2] == ["4.80", f"{120 / N:.1%}"]
    judged_ = verdict.against_lossless(table)
    assert len(got) == len(judged_) + 1
    dm = judged_[(judged_["rule"] == "DropMatch js+majority") & (judged_["knob"] == 0.3)].iloc[0]
    tau, score, discordant, diff, lower, detect, rho, speed = got["DropMatch js+majority, p_drop 0.3"]
    assert (tau, score, discordant) == ("5.40", f"{115 / N:.1%}", "6 / 1")  # 6 lost, 1 gained: 115 of 164
    assert diff.startswith(f"\u2212{500 / N:.1f} [") and diff.endswith(f"Holm {dm['holm_p']:.2f}")  # -5 of 164
    assert lower == f"\u2212{-100 * dm['diff_lower']:.1f}: {dm['non_inferior']}"
    assert detect == f"{100 * dm['detectable_loss']:.1f}" and rho == "\u2013"  # HumanEval: each problem its own
    assert speed == "1.00"
    assert "164 problems; the bar: \u22121.22 points (2 of 164). Holm over the 8 settings" in text


def test_the_verdict_as_markdown_gives_rho_where_problems_cluster_and_names_what_is_still_recorded(table):
    clustered = table.assign(prompt_id=[f"t{int(p.split('/')[1]) % 20}#{p}" for p in table["prompt_id"]])
    cut = clustered[~((clustered["criterion"] == "fuzzy-js") & (clustered["knob"] == 0.2)).to_numpy()
                    | (clustered.groupby(["criterion", "knob"], dropna=False).cumcount() < 100).to_numpy()]  # fmt: skip
    text = verdict.markdown(cut)
    got = _markdown_rows(text)
    assert "fuzzy-js, threshold 0.2" not in got
    assert text.rstrip().endswith("Still being recorded, left out: fuzzy-js 0.2 (100 of 164).")
    planned = power.plan(verdict.against_lossless(verdict.complete(cut)[0]), verdict.bar_share())
    row = planned[(planned["rule"] == "typical") & (planned["knob"] == 0.1)].iloc[0]
    ends = f"{row['rho']:.2f} [{row['rho_low']:.2f}, {row['rho_high']:.2f}]".replace("-", "\u2212")
    assert got["typical (greedy reading), epsilon 0.1"][6] == ends and "(20 clusters)" in text


def test_report_markdown_prints_each_scored_suite_and_writes_no_html(table, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cli.sweep, "load_sweep", lambda source, limit=None: table.assign(suite="humaneval"))
    assert cli.main(["report", "--from", str(tmp_path), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### humaneval\n\n| setting |") and out == f"### humaneval\n\n{verdict.markdown(table)}\n"
    assert not list(tmp_path.iterdir())
    unscored = table.assign(suite="humaneval", score=np.nan)
    monkeypatch.setattr(cli.sweep, "load_sweep", lambda source, limit=None: unscored)
    assert cli.main(["report", "--from", str(tmp_path), "--markdown"]) == 2
    assert "holds no scored suite (HumanEval, word problems): no verdict to write" in capsys.readouterr().err
