"""The power planner on cases with known answers: the verdict issue's own numbers, and handmade tables."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dropmatch.cli import main
from dropmatch.tables import power

PSI, LOSS = 30 / 164, 2 / 164  # DropMatch p_drop 0.3 on HumanEval: 16 lost, 14 gained; a 2-problem loss


def test_the_problems_a_2_of_164_loss_needs_at_dropmatch_0_3s_discordance():
    """By hand: [1.95996 * sqrt(psi) + 0.84162 * sqrt(psi - d^2)]^2 / d^2 = 9,651.8; TOST (1.64485 + 1.28155)^2 psi
    / d^2 = 10,533.5; at p_drop 0.1's discordance (12 of 164) 3,859.3."""
    assert power.problems_to_detect(PSI, LOSS) == pytest.approx(9651.76, abs=0.05)
    assert power.problems_for_equivalence(PSI, LOSS) == pytest.approx(10533.53, abs=0.05)
    assert power.problems_to_detect(12 / 164, LOSS) == pytest.approx(3859.29, abs=0.05)


def test_power_and_the_detectable_loss_are_the_plan_read_backwards():
    assert power.power_at(164, PSI, LOSS) == pytest.approx(0.0553, abs=1e-4)  # the exact test: about 4%
    n = power.problems_to_detect(PSI, LOSS)
    assert power.power_at(n, PSI, LOSS) == pytest.approx(0.8, abs=1e-9)
    d = power.detectable(164, PSI)
    assert power.problems_to_detect(PSI, d) == pytest.approx(164, rel=1e-6) and d == pytest.approx(0.0929, abs=1e-4)
    assert power.detectable(3, 0.01) == pytest.approx(0.1)  # out of reach: the largest possible difference


def test_more_samples_a_problem_help_down_to_n_times_rho():
    n = power.problems_to_detect(PSI, LOSS)
    assert power.with_samples(n, 1, 0.12) == n
    assert power.with_samples(n, 2, 0.12) == pytest.approx(n * 1.12 / 2)
    assert power.with_samples(n, 10**6, 0.12) == pytest.approx(n * 0.12, rel=1e-5)  # about 1,160: the floor
    with pytest.raises(ValueError):
        power.with_samples(n, 2, 1.5)


@pytest.mark.parametrize("psi, d", [(0, 0.01), (0.01, 0.1), (0.2, 0), (1.5, 0.1)])
def test_impossible_plans_are_refused(psi, d):
    with pytest.raises(ValueError):
        power.problems_to_detect(psi, d)


def test_a_verdict_tables_plan_per_setting():
    table = pd.DataFrame(
        [
            {"rule": "a", "knob": 0.1, "problems": 164, "lost": 16, "gained": 14},
            {"rule": "b", "knob": 0.2, "problems": 100, "lost": 0, "gained": 0},
        ]
    )
    out = power.plan(table, LOSS).set_index("rule")
    assert out.loc["a", "discordance"] == pytest.approx(PSI)
    assert out.loc["a", "problems_to_detect"] == pytest.approx(9651.76, abs=0.05)
    assert out.loc["b", "detectable_loss"] == 0 and math.isnan(out.loc["b", "problems_to_detect"])


def test_the_command_line_plans_and_refuses_a_bad_share(capsys):
    assert main(["power", "--psi", "30/164", "--loss", "2/164", "--problems", "164"]) == 0
    out = capsys.readouterr().out
    assert "problems to detect the loss: 9,652" in out and "power 5.5%" in out
    with pytest.raises(SystemExit) as bad:
        main(["power", "--psi", "30/0", "--loss", "2/164"])
    assert bad.value.code == 2 and "a share between 0 and 1" in capsys.readouterr().err
    assert main(["power", "--loss", "2/164"]) == 2  # neither a discordance nor a sweep
    assert "give the discordance (--psi) or a recorded sweep (--from)" in capsys.readouterr().err


def test_the_plan_of_the_recorded_verdict_reads_each_settings_discordance(capsys):
    """assets/verdict: DropMatch at p_drop 0.3 lost 16 problems and gained 14 of 164, the numbers above."""
    assert main(["power", "--from", "assets/verdict", "--loss", "2/164"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    row = next(line for line in lines if "js+majority  0.30" in line).split()
    shift = len(row) - len(header)  # the rule's name is several words
    assert [row[header.index(c) + shift] for c in ("lost", "gained")] == ["16", "14"] and "9651.7639" in row
    assert main(["power", "--from", "assets/verdict", "--loss", "2/164", "--limit", "100"]) == 0  # a growing part
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines[1 : lines.index(next(x for x in lines if x.startswith("loss ")))]]
    assert rows and all(r[len(r) - len(header) + header.index("problems")] == "100" for r in rows)
    assert main(["power", "--psi", "0.1", "--loss", "2/164", "--limit", "100"]) == 2
    assert "--limit reads the first problems of a recorded sweep" in capsys.readouterr().err


def test_the_intra_cluster_correlation_of_handmade_tables():
    """Two samples a problem: samples that always agree within a problem correlate fully; samples that always split,
    -1; two samples whose problems agree by chance only, near 0."""

    def rho(rows):
        return power.intra_cluster_correlation(
            [v for row in rows for v in row], [i for i, row in enumerate(rows) for _ in row]
        )

    assert rho([[1, 1], [0, 0], [1, 1], [0, 0]]) == pytest.approx(1.0)
    assert rho([[1, 0], [0, 1], [1, 0], [0, 1]]) == pytest.approx(-1.0)
    # MSB = 2 * 0.5 / 3 = 1/3, MSW = 2 / 8 = 1/4: rho = (1/3 - 1/4) / (1/3 + 1/4) = 1/7
    assert rho([[1, 1], [0, 0], [1, 0], [0, 1]]) == pytest.approx(1 / 7)
    assert math.isnan(rho([[1], [0]]))


def test_the_intra_cluster_correlation_of_unequal_clusters():
    """A template of three problems that all pass beside one of two that split, worked by hand below."""
    y, g = [1, 1, 1, 1, 0], ["a", "a", "a", "b", "b"]
    # means a 1, b 0.5, all 0.8; MSB = (3 * 0.04 + 2 * 0.09) / 1 = 0.3; MSW = (0.25 + 0.25) / 3 = 1/6;
    # n0 = (5 - 13 / 5) / 1 = 2.4; rho = (0.3 - 1/6) / (0.3 + 1.4 / 6)
    assert power.intra_cluster_correlation(y, g) == pytest.approx((0.3 - 1 / 6) / (0.3 + 1.4 / 6))
    assert math.isnan(power.intra_cluster_correlation([1, 0], ["a", "b"]))  # no cluster of two


def test_samples_a_problem_enter_the_plan_through_the_design_effect():
    """82 problems, two seeds each, rho 0.12: each problem is worth 2 / 1.12 outcomes; the discordance is per pair."""
    table = pd.DataFrame([{"rule": "a", "knob": 0.3, "problems": 82, "pairs": 164, "lost": 16, "gained": 14}])
    out = power.plan(table.assign(clusters=82, design_effect=1.12), LOSS).iloc[0]  # design effect 1 + (2 - 1) 0.12
    assert out["samples"] == 2 and out["rho"] == pytest.approx(0.12) and out["discordance"] == pytest.approx(PSI)
    assert out["problems_to_detect"] == pytest.approx(9651.76 * 1.12 / 2, abs=0.05)
    alone = power.plan(table.assign(pairs=82, lost=8, gained=7), LOSS).iloc[0]  # no design effect: independent
    assert alone["samples"] == 1 and alone["problems_to_detect"] == pytest.approx(9651.76, abs=0.05)


def test_the_recorded_t07_track_measures_its_intra_problem_correlation(capsys):
    """assets/verdict_t07: two seeds a problem; DropMatch 0.3's differences from lossless correlate by about 0.12."""
    assert main(["power", "--from", "assets/verdict_t07", "--loss", "2/82"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "js+majority   0.3" in line)
    assert row.split()[3:5] == ["82", "2.0"] and float(row.split()[5]) == pytest.approx(0.12, abs=0.005)


def test_a_typed_plan_at_given_problems_counts_their_samples(capsys):
    """117 templates of 85 problems each at rho 0.1 are worth 117 * 85 / 9.4 = 1,058 independent problems: the
    power and the detectable loss are read there, not at 117 (the samples were once left out of both)."""
    got = power.typed_plan(0.10, LOSS, samples=85, rho=0.1, problems=117)
    worth = 117 * 85 / (1 + 84 * 0.1)
    assert got["detectable_loss"] == pytest.approx(power.detectable(worth, 0.10))
    assert got["power_at_loss"] == pytest.approx(power.power_at(worth, 0.10, LOSS))
    assert 0.02 < got["detectable_loss"] < 0.03  # about 2.7 points: 10,000 problems of 117 templates miss 1.2
    typed = ["--psi", "0.1", "--loss", "2/164", "--problems", "117", "--samples", "85", "--rho", "0.1"]
    assert main(["power", *typed]) == 0
    said = f"at 117 problems of 85 samples each: power {got['power_at_loss']:.1%}, smallest detectable loss"
    printed = capsys.readouterr().out
    assert (
        said in printed
        and f"smallest detectable loss {got['detectable_floor']:.4f} (they are worth at most 1,170" in printed
    )
    alone = power.typed_plan(0.10, LOSS, problems=117)  # one sample a problem: as before
    assert alone["detectable_loss"] == pytest.approx(power.detectable(117, 0.10))


def test_the_floor_more_samples_of_the_same_clusters_cannot_go_below():
    """117 templates at rho 0.1 are worth at most 1,170 independent problems: the loss those detect is where the
    detectable loss tends as each template holds more problems, and it is no floor without a correlation."""
    floor = power.detectable_floor(117, 0.10, 0.1)
    assert floor == pytest.approx(power.detectable(1170, 0.10))
    many = power.typed_plan(0.10, LOSS, samples=10**7, rho=0.1, problems=117)
    assert many["detectable_floor"] == pytest.approx(floor)
    assert many["detectable_loss"] == pytest.approx(floor, rel=1e-4)
    some = power.typed_plan(0.10, LOSS, samples=85, rho=0.1, problems=117)
    assert some["detectable_floor"] == pytest.approx(floor) and floor < some["detectable_loss"]
    assert "detectable_floor" not in power.typed_plan(0.10, LOSS, samples=85, rho=0.0, problems=117)
    assert math.isnan(power.detectable_floor(117, 0.10, 0.0)) and math.isnan(power.detectable_floor(117, 0.10, -0.02))
    table = pd.DataFrame([{"rule": "a", "knob": 0.1, "problems": 1170, "lost": 70, "gained": 47, "clusters": 117}])
    got = power.plan(table.assign(design_effect=1 + 9 * 0.1), LOSS).iloc[0]  # 10 problems a template, rho 0.1
    assert got["rho"] == pytest.approx(0.1) and got["detectable_floor"] == pytest.approx(power.detectable(1170, 0.1))
    assert math.isnan(power.plan(table.assign(clusters=1170), LOSS).iloc[0]["detectable_floor"])  # independent


def test_the_design_effects_interval_over_resampled_clusters():
    """Clusters all alike (each of 40 holds one loss among 5 pairs): every resample is the sample, so the interval is
    the point. Clusters that move together (20 that lose all 5 pairs, 20 that lose none) and pairs that are their
    own clusters: the interval holds the point and stays near 5, and is 1 exactly."""
    units = [g for g in range(40) for _ in range(5)]
    alike = [-1, 0, 0, 0, 0] * 40
    point = power.design_effect(alike, units)
    assert power.design_effect_interval(alike, units) == pytest.approx((point, point))
    together = [-1] * 100 + [0] * 100
    low, high = power.design_effect_interval(together, units)
    point = power.design_effect(together, units)  # 5 * 40 / 39 (the clusters' small-sample factor)
    assert low - 1e-9 <= point <= high + 1e-9 and 4.5 < low and high < 5.2
    alone = [-1, 0] * 100  # pairs that are their own clusters: 1 in every resample
    assert power.design_effect_interval(alone, list(range(200))) == pytest.approx((1, 1))
    mixed = [-1, -1, 0, 0] * 10 + [-1, 0, 0, 0] * 20 + [0, 0, 1, 0] * 10  # 40 clusters of 4, some alike inside
    units = [g for g in range(40) for _ in range(4)]
    low, high = power.design_effect_interval(mixed, units)
    assert low < power.design_effect(mixed, units) < high
    assert power.design_effect_interval(mixed, units, seed=1) != (low, high)  # a seed's own resamples
    assert all(math.isnan(e) for e in power.design_effect_interval([0] * 10, list(range(10))))  # nothing varies


def test_the_plan_carries_rho_and_its_interval_from_the_design_effects():
    """Clusters of 4 pairs with a design effect of 1.3 [1.06, 1.9]: rho 0.1 [0.02, 0.3]."""
    table = pd.DataFrame([{"rule": "a", "knob": 0.3, "problems": 400, "lost": 30, "gained": 10}])
    measured = table.assign(clusters=100, design_effect=1.3, design_effect_low=1.06, design_effect_high=1.9)
    row = power.plan(measured, LOSS).iloc[0]
    assert (row["rho"], row["rho_low"], row["rho_high"]) == pytest.approx((0.1, 0.02, 0.3))
    assert math.isnan(power.plan(table, LOSS).iloc[0]["rho_high"])  # no interval given: none made up
