"""Speed against quality across acceptance rules: per-setting points, the Pareto front, the matched-tau table.

Input is a sweep's tidy table (one row per prompt x setting, `dropmatch.lab.sweep.load_sweep`). A *rule* is
one curve: lossless (a point), each DropMatch criterion over p_drop (its knob) at the centre's gamma and K,
and each relative over its own knob at the same gamma; truncation sampling of the target alone (top-k, min-p)
over its knob, the quality reference (tau 1: it drafts nothing). Every point pools or aggregates its prompts as
`MEASURES` says; the Pareto front and the matched-tau comparison read those points. Pure pandas: no model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dropmatch.config import FACTORS, KNOB_METHODS, PAPER_SETTING, TRUNCATION_KNOBS
from dropmatch.criteria import CRITERION_KNOBS, RULES
from dropmatch.metrics import pooled_tau

CENTRES = "centres"  # the key of a loaded sweep's attrs under which each suite's centre is kept


@dataclass(frozen=True)
class Measure:
    """A quality measure per setting: how prompts are combined, and which way is better."""

    label: str
    better: str  # "higher", "lower", or "one" (closest to 1)
    about: str


MEASURES = {
    "score": Measure("task score (pass@1)", "higher", "mean task score over problems"),
    "equal_share": Measure("tokens equal to lossless", "higher", "median share of tokens equal to lossless"),
    "length_ratio": Measure("length ratio λ", "one", "median N / N lossless on the same prompt"),
    "loop": Measure(
        "runs with a repetition loop",
        "lower",
        "share of runs with a loop (a span repeated >= 3 times covering >= 15 tokens)",
    ),
    "loop_relaxed": Measure(
        "loops holding a relaxed acceptance", "lower", "share of looping runs whose loop holds a relaxed acceptance"
    ),
    "capped": Measure("runs that hit the length limit", "lower", "share of runs that hit max_new_tokens"),
    "relaxed_cost_mean": Measure(
        "cost of a relaxed acceptance (nats)",
        "lower",
        "log p(target top-1) - log p(d) under the unmasked target, pooled over every relaxed acceptance",
    ),
    "mean_logp": Measure(
        "target log-prob of the text (nats)",
        "higher",
        "mean over runs of the mean log p of emitted tokens under the unmasked target",
    ),
}
# the knob each curve runs along: p_drop for DropMatch, a rule's own (the second part of a pair, at a fixed first)
KNOB_NAMES = {"dropmatch": "p_drop", **{name: k.position.name for name, k in CRITERION_KNOBS.items()}}


def base_rule(rule: str) -> str:
    """The registry's (or a truncation's) name of a curve (`rule_name`): "relaxed-top-k K8 (span-gated)" ->
    "relaxed-top-k"."""
    return rule.removeprefix("DropMatch ").split(" ", 1)[0]


def gated(row) -> bool:
    """Whether a sweep row's rule ran behind the span gate (rows recorded before the gate existed did not; a column
    that mixes them with gated rows may hold the flag as 1.0), as `ungated` reads a whole table."""
    value = row.get("span_gate")
    return bool(pd.notna(value) and value)


def ungated(df: pd.DataFrame) -> pd.Series:
    """Per row, whether it ran without the span gate: `gated`, negated, for a whole table."""
    return ~df["span_gate"].eq(True) if "span_gate" in df else pd.Series(True, index=df.index)


def dropmatch_rows(df: pd.DataFrame) -> pd.DataFrame:
    """DropMatch's rows as a setting of its factors: span-gated DropMatch is a rule of its own (its own curve,
    `rule_name`), so it neither sets the centre nor stands at it."""
    return df[(df["method"] == "dropmatch") & ungated(df)]


def curve_knob(rule: str):
    """The knob a curve runs along (`Knob.position`), or None for lossless and a rule without a knob."""
    knob = CRITERION_KNOBS.get(base_rule(rule))
    return None if knob is None else knob.position


def centre(df: pd.DataFrame) -> dict:
    """The held value of each DropMatch factor of a suite's rows (`infer_centre`). A loaded sweep carries each
    suite's centre, computed once when it was read (`with_centres`); a frame of one suite derived from it (a suite's
    part, a subset of rows, the rows every setting ran) reads it there, so its figures and tables hold the same
    setting whatever rows they kept. Any other frame (handmade, or several suites) computes it from its rows."""
    known = df.attrs.get(CENTRES)
    if known is not None and "suite" in df:
        suites = df["suite"].unique()
        if len(suites) == 1 and suites[0] in known:
            return dict(known[suites[0]])
    return infer_centre(df)


def infer_centre(df: pd.DataFrame) -> dict:
    """The held value of each DropMatch factor: its most frequent value among DropMatch rows; on a tie (a sweep
    that ran each value equally often) the paper's setting when it is one of them, else the smallest. {} where no
    DropMatch row ran (span-gated DropMatch is another rule)."""
    dm = dropmatch_rows(df)
    if dm.empty:
        return {}
    modes = {f: list(dm[f].mode()) for f in FACTORS}
    return {f: PAPER_SETTING[f] if PAPER_SETTING[f] in modes[f] else modes[f][0] for f in FACTORS}


def with_centres(df: pd.DataFrame) -> pd.DataFrame:
    """The sweep's table with each suite's centre computed once and kept with it (pandas carries `attrs` to the
    frames derived from it), for `centre` to read."""
    df.attrs[CENTRES] = {suite: infer_centre(part) for suite, part in df.groupby("suite", sort=False)}
    return df


def held(df: pd.DataFrame, *vary: str) -> pd.DataFrame:
    """DropMatch rows (not span-gated) with every factor but `vary` at the centre."""
    c, dm = centre(df), dropmatch_rows(df)
    for f in FACTORS:
        if f not in vary and f in c:
            dm = dm[dm[f] == c[f]]
    return dm


def compared_at(df: pd.DataFrame) -> dict:
    """The gamma (and K) the rules are compared at: DropMatch's centre, else the commonest gamma."""
    c = centre(df)
    return {"gamma": c["gamma"], "K": c["K"]} if c else {"gamma": df["gamma"].mode().iloc[0], "K": None}


def compared_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows the rules are compared on: every method at the compared gamma, DropMatch at the compared K only."""
    c = compared_at(df)
    return df[(df["gamma"] == c["gamma"]) & ((df["method"] != "dropmatch") | (df["K"] == c["K"]))]


def rule_name(row) -> str:
    """The curve a setting belongs to: "lossless", "DropMatch js+majority", or the relative's (the truncation's)
    name."""
    gate = " (span-gated)" if gated(row) else ""
    if row["method"] == "dropmatch":
        return f"DropMatch {row['criterion']}{gate}"
    if row["method"] not in KNOB_METHODS:
        return row["method"]
    knob = row.get("knob")  # a pair is written "K/delta": one curve per first part, along the second
    return (f"{row['criterion']} K{knob.split('/')[0]}" if isinstance(knob, str) else row["criterion"]) + gate


TRUNCATION_FAMILY = "the target alone (no draft)"


def family_of(rule: str) -> str:
    """A curve's family (criteria.FAMILIES) from its name (`rule_name`): a rule's own, the target alone for a
    truncation, empty for lossless."""
    if rule in TRUNCATION_KNOBS:
        return TRUNCATION_FAMILY
    entry = RULES.get(base_rule(rule))
    return entry.family if entry else ""


def knob_of(row) -> float:
    """A setting's position on its curve: p_drop for DropMatch, the knob for a relative or a truncation, NaN for
    lossless."""
    if row["method"] == "dropmatch":
        return row["p_drop"]
    if row["method"] not in KNOB_METHODS or row["knob"] is None:
        return float("nan")
    return float(row["knob"].split("/")[-1]) if isinstance(row["knob"], str) else row["knob"]


def _aggregate(rows: pd.DataFrame) -> pd.Series:
    """One setting's point from its prompts' rows."""
    cost_n = rows["relaxed_emitted"].sum()
    return pd.Series(
        {
            "prompts": len(rows),
            "tau": pooled_tau(rows["n_tokens"], rows["target_forwards"]),
            "speedup": rows["speedup"].median(),
            "speedup_cpu": rows["speedup_cpu"].median(),
            "score": rows["score"].mean(),
            "equal_share": rows["equal_share"].median(),
            "length_ratio": rows["length_ratio"].median(),
            "loop": rows["loop"].mean(),
            "loop_relaxed": rows["loop_relaxed"].mean(),
            "capped": rows["capped"].mean(),
            "relaxed_cost_mean": rows["relaxed_cost_sum"].sum() / cost_n if cost_n > 0 else float("nan"),
            "mean_logp": rows["mean_logp"].mean(),
        }
    )


def setting_points(df: pd.DataFrame) -> pd.DataFrame:
    """One row per setting at the compared gamma (and K for DropMatch): its rule, knob, pooled tau and quality."""
    if df.empty:
        return pd.DataFrame(columns=["rule", "method", "criterion", "knob_name", "knob", "tau", *MEASURES])
    rows = compared_rows(df)
    rows = rows.assign(rule=rows.apply(rule_name, axis=1), knob_value=rows.apply(knob_of, axis=1))
    keys = ["rule", "method", "criterion", "knob_value"]
    points = rows.groupby(keys, dropna=False, sort=False).apply(_aggregate, include_groups=False).reset_index()
    points = points.rename(columns={"knob_value": "knob"})
    names = zip(points["method"], points["criterion"])
    points["knob_name"] = [KNOB_NAMES.get(m if m == "dropmatch" else cr, "") for m, cr in names]
    return points.sort_values(["method", "rule", "knob"], ignore_index=True)


def _goodness(values: pd.Series, better: str) -> pd.Series:
    """Larger is better, whatever the measure's direction."""
    if better == "one":
        return -np.log(values).abs()
    return values if better == "higher" else -values


def pareto_front(points: pd.DataFrame, measure: str) -> pd.Series:
    """True for the points no other point beats on both tau (higher) and the measure (MEASURES' direction)."""
    good = _goodness(points[measure], MEASURES[measure].better)
    tau = points["tau"]
    front = []
    for i in points.index:
        if pd.isna(good[i]) or pd.isna(tau[i]):
            front.append(False)
            continue
        beaten = (tau >= tau[i]) & (good >= good[i]) & ((tau > tau[i]) | (good > good[i]))
        front.append(not bool(beaten.fillna(False).any()))
    return pd.Series(front, index=points.index)


def matched_knob(curve: pd.DataFrame, target_tau: float, integer: bool = False) -> tuple[float, str] | None:
    """The knob at which a rule's tau reaches `target_tau`: linear interpolation between the two measured knobs
    whose taus bracket it (the nearest measured knob for an integer knob), with how it was found; None when
    no measured pair brackets it."""
    pts = curve.dropna(subset=["knob", "tau"]).sort_values("knob")
    knobs, taus = pts["knob"].to_numpy(float), pts["tau"].to_numpy(float)
    for i in range(len(pts) - 1):
        (k0, k1), (t0, t1) = knobs[i : i + 2], taus[i : i + 2]
        if min(t0, t1) <= target_tau <= max(t0, t1) and t0 != t1:
            if integer:
                k = k0 if abs(t0 - target_tau) <= abs(t1 - target_tau) else k1
                return float(k), f"the measured {k:g} (tau {t0 if k == k0 else t1:.2f}) is nearest"
            k = k0 + (target_tau - t0) * (k1 - k0) / (t1 - t0)
            return float(k), f"interpolated between {k0:g} (tau {t0:.2f}) and {k1:g} (tau {t1:.2f})"
    near = pts[np.isclose(taus, target_tau, rtol=0.01)]
    if len(near):  # no pair brackets it, but a knob lands within 1%: name that knob and its own tau
        k, t = float(near["knob"].iloc[0]), float(near["tau"].iloc[0])
        return k, "measured there" if t == target_tau else f"measured at {k:g} (tau {t:.2f}, within 1%)"
    return None


SHOWN = ["tau", "speedup", "speedup_cpu", *MEASURES]  # what the matched-tau table gives at each rule's knob


def at_knob(curve: pd.DataFrame, knob: float) -> pd.Series:
    """The curve's values at `knob`: the measured point when there is one, else linear interpolation."""
    pts = curve.sort_values("knob").set_index("knob")
    if any(math.isclose(knob, k, rel_tol=1e-9, abs_tol=1e-12) for k in pts.index):
        return pts.loc[min(pts.index, key=lambda k: abs(k - knob)), SHOWN]
    return pd.Series({c: float(np.interp(knob, pts.index.to_numpy(float), pts[c].to_numpy(float))) for c in SHOWN})


def matched_table(df: pd.DataFrame, reference: dict | None = None) -> pd.DataFrame:
    """Each rule at the knob where its tau equals DropMatch's at the reference setting (the paper's: K 5,
    p_drop 0.3, js+majority, at the compared gamma), and its quality there; lossless and the reference first.

    A rule with one knob in this table (a task suite that ran the knob matched elsewhere) is shown at it.
    """
    ref = {**PAPER_SETTING, **(reference or {})}
    points = setting_points(df)
    dm = points[(points["rule"] == f"DropMatch {ref['criterion']}") & np.isclose(points["knob"], ref["p_drop"])]
    if dm.empty:
        return pd.DataFrame()
    target = float(dm["tau"].iloc[0])
    rows = []
    for _, p in points[points["method"] == "lossless"].iterrows():
        rows.append({"rule": "lossless", "knob_name": "", "knob": None, "basis": "baseline", **p[SHOWN]})
    rows.append(
        {
            "rule": dm["rule"].iloc[0],
            "knob_name": "p_drop",
            "knob": ref["p_drop"],
            "basis": "the reference",
            **dm.iloc[0][SHOWN],
        }
    )
    for _, p in points[points["method"] == "truncation"].iterrows():  # no draft, no speed: the quality reference
        basis = "the target alone, truncation-sampled (tau 1)"
        rows.append({"rule": p["rule"], "knob_name": p["knob_name"], "knob": p["knob"], "basis": basis, **p[SHOWN]})
    for rule, curve in points[points["method"] == "relative"].groupby("rule", sort=False):
        knob = curve_knob(rule)
        if knob is None:  # a rule without a knob (the tie-only control): its one point
            rows.append({"rule": rule, "knob_name": "", "knob": None, "basis": "no knob", **curve.iloc[0][SHOWN]})
            continue
        if len(curve) == 1:
            found = (float(curve["knob"].iloc[0]), "the only knob run here")
        else:
            found = matched_knob(curve, target, knob.integer)
        if found is None:
            span = f"tau {curve['tau'].min():.2f}-{curve['tau'].max():.2f}"
            rows.append({"rule": rule, "knob_name": knob.name, "knob": None, "basis": f"not reached ({span})"})
            continue
        rows.append(
            {"rule": rule, "knob_name": knob.name, "knob": found[0], "basis": found[1], **at_knob(curve, found[0])}
        )
    out = pd.DataFrame(rows)
    out.insert(1, "family", out["rule"].map(family_of))
    out.insert(4, "tau_target", target)
    return out.dropna(axis=1, how="all")
