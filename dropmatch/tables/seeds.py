"""DropMatch's mask seed as a source of noise. At T = 0 a DropMatch run still draws its K dropout masks from a seed,
so one greedy recording is one draw: the same setting under another seed relaxes other tokens and solves other
problems. These tables read several greedy recordings that differ only in that seed (`dropmatch.lab.sweep.
load_mask_seeds`): each seed's pass@1 difference against lossless, how far the seeds spread, and how many problems
change their score from one seed to another, beside the tie-only control's churn against lossless (the floor of a
rule that relaxes nothing but exact ties). The verdict over the seeds pooled, each problem a cluster of its seeds, is
`dropmatch.tables.verdict.against_lossless` on the same table. Pure pandas: no model."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from dropmatch.tables.tradeoff import compared_rows, dropmatch_rows

PER_SEED = ["rule", "p_drop", "seed", "problems", "tau", "score", "score_lossless", "score_diff", "lost", "gained"]
SPREAD = [
    "rule",
    "p_drop",
    "seeds",
    "problems",
    "tau_min",
    "tau_max",
    "diff_mean",
    "diff_min",
    "diff_max",
    "diff_sd",
    "churn_between_seeds",
    "churn_vs_lossless",
    "floor",
]


def _pooled_tau(rows: pd.DataFrame) -> float:
    """Tokens per target forward, pooled over the rows' problems (as the verdict's settings are)."""
    return float(rows["n_tokens"].sum() / rows["target_forwards"].sum())


def _scores(rows: pd.DataFrame) -> pd.Series:
    return rows.drop_duplicates("prompt_id").set_index("prompt_id")["score"]


def tie_floor(df: pd.DataFrame) -> float:
    """Problems whose score the tie-only control changes against lossless (one seed: it draws no mask); NaN where
    the control did not run."""
    rows = compared_rows(df.dropna(subset=["score"]))
    first = rows["seed"].min()
    rows = rows[rows["seed"] == first]
    base, tie = rows[rows["method"] == "lossless"], rows[rows["criterion"] == "tie-only"]
    if base.empty or tie.empty:
        return float("nan")
    both = pd.concat([_scores(base), _scores(tie)], axis=1, keys=["base", "tie"]).dropna()
    return float((both["base"] != both["tie"]).sum())


def _matrices(df: pd.DataFrame):
    """Per DropMatch setting (criterion, p_drop): its rows and its problems x seeds score matrix with lossless's
    column ("base"), on the problems every seed and lossless ran."""
    rows = compared_rows(df.dropna(subset=["score"]))
    base = _scores(rows[rows["method"] == "lossless"].sort_values("seed"))
    for (criterion, p_drop), part in dropmatch_rows(rows).groupby(["criterion", "p_drop"]):
        seeds = sorted(part["seed"].unique())
        scores = pd.concat([_scores(part[part["seed"] == s]) for s in seeds], axis=1, keys=seeds)
        yield criterion, p_drop, part, scores.join(base.rename("base"), how="inner").dropna()


def per_seed(df: pd.DataFrame) -> pd.DataFrame:
    """One row per DropMatch setting and seed, on the problems every seed of the setting and lossless ran: pooled
    tau, pass@1, its difference from lossless, problems lost and gained."""
    out = []
    for criterion, p_drop, part, scores in _matrices(df):
        for s in scores.columns.drop("base"):
            mine = part[(part["seed"] == s) & part["prompt_id"].isin(scores.index)]
            out.append(
                {
                    "rule": f"DropMatch {criterion}",
                    "p_drop": p_drop,
                    "seed": int(s),
                    "problems": len(scores),
                    "tau": _pooled_tau(mine),
                    "score": scores[s].mean(),
                    "score_lossless": scores["base"].mean(),
                    "score_diff": scores[s].mean() - scores["base"].mean(),
                    "lost": int(((scores["base"] == 1) & (scores[s] == 0)).sum()),
                    "gained": int(((scores["base"] == 0) & (scores[s] == 1)).sum()),
                }
            )
    return pd.DataFrame(out, columns=PER_SEED)


def spread(df: pd.DataFrame) -> pd.DataFrame:
    """Per DropMatch setting, across its seeds: tau's range, the pass@1 difference's mean, range and standard
    deviation (ddof 1), the problems whose score differs between two seeds (mean over the pairs of seeds), those
    whose score differs from lossless (mean over the seeds), and the tie-only control's count (`tie_floor`)."""
    seeds_table, floor = per_seed(df), tie_floor(df)
    out = []
    for criterion, p_drop, _, scores in _matrices(df):
        part = seeds_table[(seeds_table["rule"] == f"DropMatch {criterion}") & (seeds_table["p_drop"] == p_drop)]
        pairs = list(itertools.combinations(scores.columns.drop("base"), 2))
        churn = float(np.mean([(scores[a] != scores[b]).sum() for a, b in pairs])) if pairs else float("nan")
        out.append(
            {
                "rule": f"DropMatch {criterion}",
                "p_drop": p_drop,
                "seeds": len(part),
                "problems": len(scores),
                "tau_min": part["tau"].min(),
                "tau_max": part["tau"].max(),
                "diff_mean": part["score_diff"].mean(),
                "diff_min": part["score_diff"].min(),
                "diff_max": part["score_diff"].max(),
                "diff_sd": part["score_diff"].std(ddof=1) if len(part) > 1 else float("nan"),
                "churn_between_seeds": churn,
                "churn_vs_lossless": float((part["lost"] + part["gained"]).mean()),
                "floor": floor,
            }
        )
    return pd.DataFrame(out, columns=SPREAD)
