"""The tables behind a sweep's report: one row per setting, the centre per category, and the exact paired tests
(McNemar's, and its form for several seeds per problem) and problem pairing the verdict's task-score tables use
(`dropmatch.tables.verdict`).

Input is a sweep's tidy table (one row per prompt x setting, `dropmatch.lab.sweep.load_sweep`); the trade-off
points and the rows the rules are compared on come from `dropmatch.tables.tradeoff`. Pure pandas: no model, no HTML
(`dropmatch.lab.report` renders these tables).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dropmatch.config import SETTING_COLUMNS, SWEEP_METHODS
from dropmatch.metrics import ANATOMY, pooled_tau, round_anatomy
from dropmatch.tables.tradeoff import centre, dropmatch_rows, family_of, rule_name

# per setting, the median over prompts of each of these (the rest of `summary` pools or averages)
MEDIANS = (
    "tau",
    "acceptance_rate",
    "tokens_per_s",
    "speedup",
    "speedup_cpu",
    "tau_gain",
    "first_divergence",
    "equal_share",
    "loadavg",
)
RATES = ("capped", "loop", "loop_relaxed")  # shares of runs (of looping runs for loop_relaxed)
PER_CATEGORY = ("tau", "speedup", "speedup_cpu", "equal_share")  # medians; the score per category is a mean


def pooled(rows: pd.DataFrame) -> float:
    """Pooled tau of some rows: sum N / sum T."""
    return pooled_tau(rows["n_tokens"], rows["target_forwards"])


def rows_at(df: pd.DataFrame, method: str, **factors) -> pd.DataFrame:
    """The rows of one method with each given factor at its value (DropMatch's without the span gate:
    `tradeoff.dropmatch_rows`)."""
    rows = dropmatch_rows(df) if method == "dropmatch" else df[df["method"] == method]
    for name, value in factors.items():
        rows = rows[rows[name] == value]
    return rows


def _relaxed_cost(rows: pd.DataFrame) -> float:
    """The cost of a relaxed acceptance pooled over every relaxed acceptance in the rows' outputs."""
    n = rows["relaxed_emitted"].sum()
    return rows["relaxed_cost_sum"].sum() / n if n > 0 else float("nan")


def _anatomy(rows: pd.DataFrame) -> pd.DataFrame:
    """Per row, `round_anatomy`'s counts from its reasons (all NaN where a row has none)."""
    counted = [round_anatomy(r) if isinstance(r, str) else dict.fromkeys(ANATOMY, np.nan) for r in rows["reasons"]]
    return pd.DataFrame(counted, index=rows.index, columns=list(ANATOMY))


def _share(a: pd.Series, b: pd.Series) -> pd.Series:
    return (a / b.where(b > 0)).astype(float)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per suite x setting: medians over prompts, pooled tau (sum N / sum T) and the task score; lossless
    first at each gamma, then DropMatch, then the relatives."""
    df = df.reindex(columns=[*df.columns, *(c for c in SETTING_COLUMNS if c not in df.columns)])  # older sweeps
    g = df.groupby(["suite", *SETTING_COLUMNS], dropna=False, sort=False)  # a pair's knob is text: sorted below
    out = g[[*MEDIANS, "length_ratio"]].median()
    out.insert(0, "prompts", g.size())
    out.insert(2, "tau_pooled", g.apply(pooled))
    out["score"] = g["score"].mean()
    for rate in RATES:
        out[rate] = g[rate].mean()
    out["relaxed_cost_mean"] = g.apply(_relaxed_cost)
    out["mean_logp"] = g["mean_logp"].mean()
    if "ties" in df:
        out["ties"] = g["ties"].sum(min_count=1)  # ties accepted, summed over prompts (empty in older sweeps)
    if "reasons" in df:  # how the rounds went, pooled over the setting's outputs (metrics.round_anatomy)
        counts = _anatomy(df).groupby([df[c] for c in ["suite", *SETTING_COLUMNS]], dropna=False, sort=False)
        counts = counts.sum(min_count=1)
        out["disagreement"] = _share(counts["disagreed"], counts["verified"])
        out["relaxed_of_disagreements"] = _share(counts["relaxed"], counts["disagreed"])
        out["follow_on"] = _share(counts["followed"], counts["relaxed"])
        out["disagreement_after_relaxed"] = _share(counts["after_disagreed"], counts["after"])
    if "speed_basis" in df and df["speed_basis"].isin(["adjusted", "no baseline"]).any():  # a part timed apart
        out["speed_adjusted"] = g["speed_basis"].agg(lambda basis: (basis == "adjusted").mean())
    order = ["suite", "gamma", *(c for c in SETTING_COLUMNS if c != "gamma")]
    rank = {method: i for i, method in enumerate(SWEEP_METHODS)}
    out = out.reset_index()
    out.insert(out.columns.get_loc("knob") + 1, "family", out.apply(rule_name, axis=1).map(family_of))

    def sort_key(column: pd.Series) -> pd.Series:
        if column.name == "method":
            return column.map(rank)
        if column.name == "knob" and column.map(lambda k: isinstance(k, str)).any():  # a pair "K/delta": K, delta
            return column.map(lambda k: tuple(map(float, k.split("/"))) if isinstance(k, str) else (k,))
        return column

    out = out.sort_values(order, key=sort_key, ignore_index=True)
    return out.dropna(axis=1, how="all")


def per_category(part: pd.DataFrame) -> pd.DataFrame:
    """Per category for lossless and DropMatch at the centre setting, one column per metric x method: the medians
    of PER_CATEGORY and the task score's mean (the share solved: a median of 0/1 scores says only which side of
    half a category fell)."""
    c = centre(part)
    rows = pd.concat([rows_at(part, "lossless", gamma=c["gamma"]), rows_at(part, "dropmatch", **c)])
    g = rows.groupby(["category", "method"])
    per = pd.concat([g[list(PER_CATEGORY)].median(), g[["score"]].mean()], axis=1).unstack("method")
    per.columns = [f"{m} {v}" for v, m in per.columns]
    return per.reset_index().dropna(axis=1, how="all")


def mcnemar_p(lost: int, gained: int) -> float:
    """Two-sided exact McNemar test: the discordant pairs against Binomial(lost + gained, 1/2)."""
    n = lost + gained
    tail = sum(math.comb(n, i) for i in range(min(lost, gained) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_p(base, other, groups=None) -> float:
    """Two-sided exact p-value of paired 0/1 scores, by problem: under the null each problem's summed difference
    (other - base over its replicates) is as likely negated, so the statistic's law is that of sum(+-|d_i|), got
    exactly by convolution. With one pair per problem (`groups` None) this is the exact McNemar test; with several
    seeds of a problem (`groups`, the problem of each pair) they flip together, since they are not independent
    pairs (McNemar over (problem, seed) pairs would overstate significance)."""
    d = np.asarray(other, float) - np.asarray(base, float)
    if not np.isin(d, (-1.0, 0.0, 1.0)).all():
        raise ValueError("paired_p takes 0/1 scores")
    if groups is not None:
        d = pd.Series(d).groupby(np.asarray(groups)).sum().to_numpy()
    steps = np.abs(d).astype(int)
    law = np.zeros(2 * steps.sum() + 1)  # law[k]: P(statistic = k - steps.sum())
    law[steps.sum()] = 1.0
    for s in steps[steps > 0]:
        law = 0.5 * (np.roll(law, s) + np.roll(law, -s))  # no wrap: the support never reaches the ends
    values = np.arange(law.size) - steps.sum()
    return min(1.0, float(law[np.abs(values) >= abs(d.sum())].sum()))


def paired(base: pd.DataFrame, other: pd.DataFrame) -> tuple[pd.DataFrame, int, int]:
    """The problems both ran (score, score_other), the problems lost (base solves, other does not) and gained; a
    sampled sweep's rows pair by problem and seed, so each seed meets its own."""
    on = ["prompt_id", "seed"] if "seed" in base and "seed" in other else ["prompt_id"]
    pairs = base[[*on, "score"]].merge(other[[*on, "score"]], on=on, suffixes=("", "_other"))
    lost = int(((pairs["score"] == 1) & (pairs["score_other"] == 0)).sum())
    gained = int(((pairs["score"] == 0) & (pairs["score_other"] == 1)).sum())
    return pairs, lost, gained
