"""How many problems a paired pass/fail comparison needs: the power planner.

Two decoders run on the same problems; a problem is discordant when one passes and the other fails. With psi the
share of discordant problems and d the true difference in pass rate (a loss of d), the paired test (McNemar's, in its
normal approximation; Connor 1987) needs

    n = [z(1 - alpha/2) sqrt(psi) + z(power) sqrt(psi - d^2)]^2 / d^2

problems to detect d at that power, and showing equivalence within +-d (two one-sided tests at alpha each, the true
difference 0) needs n = [z(1 - alpha) + z(1 - (1 - power)/2)]^2 psi / d^2. At T > 0 with m samples a problem whose
outcomes correlate by rho within a problem, a problem counts as m / (1 + (m - 1) rho) independent ones (the design
effect), so more samples help only down to n * rho problems: k clusters are worth at most k / rho independent
outcomes however many pairs each holds, and the loss that many detect is the floor more samples (or more problems of
the same templates) cannot go below. The discordance comes from a pilot: a recorded sweep's lost and gained problems
per setting, or typed in.

    python -m dropmatch power --psi 0.183 --loss 0.0122          # problems needed, and the TOST's
    python -m dropmatch power --from assets/verdict                # every setting of a recorded verdict

The normal approximation is a plan, not the exact test: at n = 164 and psi = 30/164 it gives 5.5% power against a
2-problem loss where the exact test has about 4%.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pandas as pd

Z = NormalDist().inv_cdf
PHI = NormalDist().cdf
ALPHA, POWER = 0.05, 0.8  # a two-sided 5% test at 80% power, the field's default plan


def problems_to_detect(psi: float, d: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Problems a paired test at two-sided `alpha` needs to detect a difference d at `power`, given the discordant
    share psi (d^2 < psi: a difference cannot exceed the discordance it comes from)."""
    _check(psi, d)
    return (Z(1 - alpha / 2) * math.sqrt(psi) + Z(power) * math.sqrt(psi - d * d)) ** 2 / (d * d)


def problems_for_equivalence(psi: float, d: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Problems two one-sided tests at `alpha` each need to show the difference within +-d at `power`, when it is 0."""
    _check(psi, d)
    return (Z(1 - alpha) + Z(1 - (1 - power) / 2)) ** 2 * psi / (d * d)


def power_at(n: float, psi: float, d: float, alpha: float = ALPHA) -> float:
    """The power of the paired test at two-sided `alpha` on n problems against a difference d (normal
    approximation): the chance it finds d."""
    _check(psi, d)
    return PHI((d * math.sqrt(n) - Z(1 - alpha / 2) * math.sqrt(psi)) / math.sqrt(psi - d * d))


def detectable(n: float, psi: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest difference n problems detect at `power` (`problems_to_detect` solved for d, by bisection);
    psi's square root when even the largest possible difference is out of reach."""
    lo, hi = 0.0, math.sqrt(psi) * (1 - 1e-12)
    if problems_to_detect(psi, hi, alpha, power) > n:
        return math.sqrt(psi)
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid == 0 or problems_to_detect(psi, mid, alpha, power) > n else (lo, mid)
    return hi


def with_samples(problems: float, samples: int, rho: float) -> float:
    """Problems needed when each gives `samples` outcomes correlated by rho within the problem (the design effect
    1 + (m - 1) rho over m), from `problems` needed with one outcome each."""
    if samples < 1 or not 0 <= rho <= 1:
        raise ValueError(f"need samples >= 1 and 0 <= rho <= 1; got {samples}, {rho}")
    return problems * (1 + (samples - 1) * rho) / samples


def implied_rho(design_effect: float, size: float) -> float:
    """The intra-cluster correlation a design effect implies for clusters of `size` pairs on average: (design_effect
    - 1) / (size - 1); NaN where a cluster holds one pair (or the design effect is unknown)."""
    return (design_effect - 1) / (size - 1) if size > 1 and design_effect == design_effect else float("nan")


def detectable_floor(clusters: float, psi: float, rho: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest difference `clusters` clusters detect at 80% power however many pairs each holds: as a cluster's
    m pairs grow, m / (1 + (m - 1) rho) tends to 1 / rho, so the clusters are worth at most clusters / rho independent
    pairs. NaN where rho is not above 0 (no floor: more pairs keep helping)."""
    return detectable(clusters / rho, psi, alpha, power) if rho > 0 and psi > 0 else float("nan")


def _cluster_sums(d, units) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per cluster: its pairs, the sum of their differences and of their squares."""
    d = np.asarray(d, float)
    g = pd.DataFrame({"d": d, "squared": d**2}).groupby(np.asarray(units))
    return g.size().to_numpy(float), g["d"].sum().to_numpy(), g["squared"].sum().to_numpy()


def _design_effects(size, total, squares, w: np.ndarray) -> np.ndarray:
    """The design effect of the pairs of clusters drawn `w` times each (one row of `w` per draw of the k clusters; a
    cluster drawn twice counts as two): the clustered (ratio-estimator) variance of the mean difference over the
    independent one, from the clusters' sums alone. NaN where the drawn pairs never vary."""
    k, n = w.shape[1], w @ size
    mean = (w @ total) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        independent = (w @ squares - n * mean**2) / (n * (n - 1))
        clustered = k / (k - 1) * (w * (total[None, :] - size[None, :] * mean[:, None]) ** 2).sum(axis=1) / n**2
        return np.where(independent > 0, clustered / independent, np.nan)


def design_effect(d, units) -> float:
    """How much the clustering of paired differences d (one per pair: -1, 0 or 1) inflates the variance of their
    mean, against independent pairs: the clustered (ratio-estimator) variance over the independent one, with
    `units` the cluster of each pair (a problem's samples, a template's problems). 1 for pairs that are their own
    clusters; 1 + (m - 1) rho for clusters of m pairs correlated by rho; NaN where d never varies."""
    size, total, squares = _cluster_sums(d, units)
    if len(size) < 2:
        return float("nan")
    return float(_design_effects(size, total, squares, np.ones((1, len(size))))[0])


def design_effect_interval(d, units, level: float = 0.95, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """The percentile interval of `design_effect` over resampled clusters: each resample draws as many clusters as
    there are, with replacement, and recomputes the design effect from the drawn clusters' pairs. (NaN, NaN) where
    it is NaN itself. With under about 30 clusters the interval is rough."""
    size, total, squares = _cluster_sums(d, units)
    k = len(size)
    if k < 2 or np.isnan(_design_effects(size, total, squares, np.ones((1, k)))[0]):  # one cluster, or d never varies
        return float("nan"), float("nan")
    w = np.random.default_rng(seed).multinomial(k, np.full(k, 1 / k), size=resamples).astype(float)  # draws a cluster
    tail = (1 - level) / 2 * 100
    low, high = np.nanpercentile(_design_effects(size, total, squares, w), [tail, 100 - tail])
    return float(low), float(high)


def intra_cluster_correlation(values, groups) -> float:
    """The intra-class correlation of outcomes within clusters of unequal sizes (a template's problems), by one-way
    analysis of variance: (MSB - MSW) / (MSB + (n0 - 1) MSW), n0 = (N - sum n_i^2 / N) / (k - 1) the clusters'
    effective size (with equal sizes, the balanced estimate (MSB - MSW) / (MSB + (m - 1) MSW)). NaN with under two
    clusters, no cluster of two or no variance."""
    y = pd.Series(np.asarray(values, float))
    g = y.groupby(np.asarray(groups))
    n, means = g.size(), g.mean()
    k, total = len(n), len(y)
    if k < 2 or total <= k:
        return float("nan")
    msb = (n * (means - y.mean()) ** 2).sum() / (k - 1)
    msw = ((y - g.transform("mean")) ** 2).sum() / (total - k)
    n0 = (total - (n**2).sum() / total) / (k - 1)
    denominator = msb + (n0 - 1) * msw
    return float((msb - msw) / denominator) if denominator > 0 else float("nan")


def plan(table: pd.DataFrame, loss: float, alpha: float = ALPHA, power: float = POWER) -> pd.DataFrame:
    """Per setting of a verdict table (verdict.against_lossless: problems, pairs, lost, gained, clusters and the
    clusters' `design_effect`), its discordance, the loss its own problems detect at `power`, the power it has
    against `loss`, and the problems needed to detect `loss` and to show equivalence within it. The discordance is
    per pair (a problem, or a (problem, sample) pair at T > 0); a problem is worth m / design_effect independent
    outcomes (m pairs a problem), and rho is the intra-cluster correlation the design effect implies,
    (design_effect - 1) / (mean cluster size - 1), with its 95% interval where the table has the design effect's
    (`design_effect_low`, `_high`), and the loss no number of pairs a cluster would detect below at that rho
    (`detectable_floor`). A table without a design effect is read as independent pairs."""
    rows = []
    for _, r in table.iterrows():
        pairs = r.get("pairs", r["problems"])
        m = pairs / r["problems"]
        deff = r.get("design_effect", 1.0)
        deff = 1.0 if deff != deff else max(1.0, deff)  # unmeasured, or clusters that cancel: independent pairs
        size = pairs / r.get("clusters", r["problems"])  # pairs a cluster holds, on average
        corr = implied_rho(deff, size)  # the intra-cluster correlation
        ends = [implied_rho(r.get(f"design_effect_{end}", float("nan")), size) for end in ("low", "high")]
        effect = m / deff  # independent outcomes a problem is worth
        n, psi = r["problems"] * effect, (r["lost"] + r["gained"]) / pairs
        ok = psi > loss * loss
        rows.append(
            {
                "rule": r["rule"],
                "knob": r["knob"],
                "problems": r["problems"],
                "samples": m,
                "rho": corr,
                "rho_low": ends[0],
                "rho_high": ends[1],
                "design_effect": deff,
                "lost": r["lost"],
                "gained": r["gained"],
                "discordance": psi,
                "detectable_loss": detectable(n, psi, alpha, power) if psi > 0 else 0.0,
                "detectable_floor": detectable_floor(pairs / size, psi, corr, alpha, power),  # NaN: no floor
                "power_at_loss": power_at(n, psi, loss, alpha) if ok else float("nan"),
                "problems_to_detect": problems_to_detect(psi, loss, alpha, power) / effect if ok else float("nan"),
                "problems_for_equivalence": problems_for_equivalence(psi, loss, alpha, power) / effect if psi else 0.0,
            }
        )
    return pd.DataFrame(rows)


def parse_share(text: str) -> float:
    """A share of problems as typed: a decimal (0.0122) or a count over a total (2/164)."""
    try:
        top, _, bottom = str(text).partition("/")
        value = float(top) / float(bottom) if bottom else float(top)
    except (ValueError, ZeroDivisionError):
        value = float("nan")
    if not 0 < value < 1:
        raise ValueError(f"expected a share between 0 and 1, as 0.0122 or 2/164; got {text!r}")
    return value


def typed_plan(psi: float, loss: float, samples: int = 1, rho: float = 0.0, problems: int | None = None) -> dict:
    """The plan for a discordance typed in (a pilot's): problems to detect `loss` at 80% power (and with `samples` a
    problem at intra-problem correlation rho), problems to show equivalence within it, and at `problems` (each with
    its `samples`) the power, the smallest detectable loss and the floor no number of samples goes below
    (`detectable_floor`, where rho > 0). A word problem's template is a "problem" here, its problems the "samples":
    117 templates of 85 problems at rho 0.1 are `problems=117, samples=85, rho=0.1`."""
    n = problems_to_detect(psi, loss)
    out = {"discordance": psi, "loss": loss, "problems_to_detect": n}
    out["problems_for_equivalence"] = problems_for_equivalence(psi, loss)
    if samples > 1:
        out |= {"samples": samples, "rho": rho, "problems_with_samples": with_samples(n, samples, rho)}
    if problems:
        worth = problems * samples / (1 + (samples - 1) * rho)  # independent outcomes the problems' samples are worth
        out |= {"problems": problems, "power_at_loss": power_at(worth, psi, loss)}
        out["detectable_loss"] = detectable(worth, psi)
        if rho > 0:
            out["detectable_floor"] = detectable_floor(problems, psi, rho)
    return out


def _check(psi: float, d: float) -> None:
    if not 0 < psi <= 1:
        raise ValueError(f"the discordant share must be in (0, 1]; got {psi}")
    if not 0 < d or d * d >= psi:
        raise ValueError(f"the difference must be above 0 and below the discordance's square root ({psi**0.5:.3f})")
