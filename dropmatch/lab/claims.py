"""The paper's claims beside what a sweep measured: one row per claim, the paper's value and the reference
measurement quoted (dropmatch.lab.paper), this sweep's computed per suite from its tidy table.

Every "this sweep" statement is computed here from the table; nothing is quoted. `dropmatch.lab.report` and the
app's Analysis tab render the table.
"""

from __future__ import annotations

import numbers

import pandas as pd

from dropmatch.lab.paper import PAPER, PAPER_COLUMN, REFERENCE_COLUMN, relaxed_share
from dropmatch.lab.suites import WORD_PROBLEMS
from dropmatch.tables.summary import paired, paired_p, pooled, rows_at
from dropmatch.tables.tradeoff import centre, held


def _gain(df: pd.DataFrame, gamma) -> str | None:
    """Pooled tau of lossless and of DropMatch at the centre with this gamma."""
    base, dm = rows_at(df, "lossless", gamma=gamma), rows_at(df, "dropmatch", **{**centre(df), "gamma": gamma})
    if base.empty or dm.empty:
        return None
    a, b = pooled(base), pooled(dm)
    return (
        f"γ {gamma}: {b / a - 1:+.0%} (pooled tau {a:.2f} → {b:.2f}; median per prompt {dm['tau_gain'].median():+.0%})"
    )


def _speedups(df: pd.DataFrame) -> str | None:
    rows = held(df, "gamma")
    med = rows.groupby("gamma")[["speedup", "speedup_cpu"]].median().dropna(how="all")
    text = ", ".join(f"γ {g}: {r.speedup:.2f}x wall, {r.speedup_cpu:.2f}x CPU time" for g, r in med.iterrows())
    load = df["loadavg"].median()
    during = f"; timed under a median 1-minute load of {load:.1f}" if pd.notna(load) else ""
    adjusted = int((rows["speed_basis"] == "adjusted").sum()) if "speed_basis" in rows else 0
    during += f"; {adjusted} of {len(rows)} scaled from another sitting's lossless" if adjusted else ""
    return f"{text} (medians over prompts{during})" if len(med) else None


def _sweep_of(df: pd.DataFrame, factor: str) -> str | None:
    dm = held(df, factor)
    if dm[factor].nunique() < 2:
        return None
    taus = dm.groupby(factor)["tau"].median()
    base = rows_at(df, "lossless", gamma=centre(df)["gamma"])["tau"].median()
    values = " / ".join(f"{v:.2f}" for v in taus)
    names = " / ".join(f"{k:g}" if isinstance(k, numbers.Number) else str(k) for k in taus.index)
    return f"{values} for {factor} {names} (lossless {base:.2f}; medians)"


def _score(df: pd.DataFrame) -> str | None:
    """Mean task score of lossless and DropMatch at the centre, and the paired test on the problems both ran."""
    scored, c = df.dropna(subset=["score"]), centre(df)
    base, dm = rows_at(scored, "lossless", gamma=c["gamma"]), rows_at(scored, "dropmatch", **c)
    if base.empty or dm.empty:
        return None
    pairs, lost, gained = paired(base, dm)  # by problem and seed: a problem's seeds are tested together
    a, b = base["score"].mean(), dm["score"].mean()
    problems = pairs["prompt_id"].nunique()
    runs = f"{problems} problems" + (f" x {len(pairs) // problems} seeds" if len(pairs) > problems else "")
    test = "exact McNemar p" if len(pairs) == problems else "exact p, seeds kept together,"
    return (
        f"pass@1 {a:.1%} → {b:.1%} ({(b - a) * 100:+.1f} points, {runs}; {lost} lost, {gained} gained, "
        f"{test} = {paired_p(pairs['score'], pairs['score_other'], pairs['prompt_id']):.2f})"
    )


def _relaxed_of_rejections(df: pd.DataFrame) -> str | None:
    """Tau of lossless and DropMatch at the centre and the share of exact-match rejections DropMatch relaxes, read
    from the two pooled taus as the paper's Table 6 is read (`paper.relaxed_share`)."""
    c = centre(df)
    base, dm = rows_at(df, "lossless", gamma=c["gamma"]), rows_at(df, "dropmatch", **c)
    if base.empty or dm.empty:
        return None
    a, b = pooled(base), pooled(dm)
    share = relaxed_share(a, b, int(c["gamma"]))
    return f"γ {c['gamma']}: tau {a:.2f} → {b:.2f} ({b / a - 1:+.0%}), {share:.0%} of exact-match rejections relaxed"


def _korean(df: pd.DataFrame) -> str | None:
    ko, c = df[df["category"] == "korean"], centre(df)
    if ko.empty:
        return None
    before, after = pooled(rows_at(ko, "lossless", gamma=c["gamma"])), pooled(rows_at(ko, "dropmatch", **c))
    return f"pooled tau {before:.2f} → {after:.2f}"


def paper_comparison(df: pd.DataFrame) -> pd.DataFrame:
    """One row per claim: the paper, the reference implementation, and this sweep (per suite, computed)."""
    ours = {key: [] for key in PAPER}
    for suite, part in df.groupby("suite"):
        if not centre(part):
            continue
        longest = max(part["gamma"])
        values = {
            "gain5": _gain(part, 5),
            "gain_long": _gain(part, longest) if longest > 5 else None,
            "speedup": _speedups(part),
            "score": _score(part),
            "humaneval": _gain(part, centre(part)["gamma"]) if suite == "humaneval" else None,
            "gsm8k": _relaxed_of_rejections(part) if suite == WORD_PROBLEMS else None,
            "korean": _korean(part),
            "p_drop": _sweep_of(part, "p_drop"),
            "K": _sweep_of(part, "K"),
            "criterion": _sweep_of(part, "criterion"),
        }
        for key, value in values.items():
            if value is not None:
                ours[key].append(f"{suite}: {value}")
    rows = [
        (claim, paper, ref, "; ".join(ours[key]) or "not in this sweep") for key, (claim, paper, ref) in PAPER.items()
    ]
    return pd.DataFrame(rows, columns=["claim", PAPER_COLUMN, REFERENCE_COLUMN, "this sweep"])
