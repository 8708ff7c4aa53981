"""The verdict's tables: is a relaxed acceptance worth it? Every rule's task score against lossless and against every
other rule, problem by problem, and the headline (per rule, the fastest setting shown to keep the task score within
the field's bar of lossless, and the fastest whose point estimate does, as a reading only).

Input is a sweep's tidy table with a task score (HumanEval, the word problems; `dropmatch.lab.sweep.load_sweep`).
The field's bar for "quality kept" is pass@1 within 2 of HumanEval's 164 problems of exact decoding: a share, 2/164
= 1.22 points, on any suite (`BAR_PROBLEMS / BAR_OF`). A setting is non-inferior when the one-sided 95% lower bound
of its difference clears the bar, inferior when the one-sided upper bound is below it, and otherwise the data cannot
tell; each bound is the more cautious of the cluster bootstrap's and Newcombe's score interval's. Intervals are
paired bootstrap intervals over clusters (a problem with its seeds; a word problem's template with its problems,
`cluster`); tests are exact sign-flip tests of the clusters' summed differences
(`dropmatch.tables.summary.paired_p`: McNemar's exact test where each problem is its own cluster), Holm-corrected
where a table holds several. Pure pandas and numpy: no model."""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist

import numpy as np
import pandas as pd

from dropmatch.criteria import RULES
from dropmatch.tables.power import design_effect, design_effect_interval, detectable, implied_rho, plan
from dropmatch.tables.summary import paired_p
from dropmatch.tables.tradeoff import (
    at_knob,
    base_rule,
    compared_rows,
    curve_knob,
    family_of,
    knob_of,
    matched_knob,
    rule_name,
    setting_points,
)

BAR_PROBLEMS, BAR_OF = 2, 164  # within 2 of HumanEval's 164 problems of exact decoding: the field's bar
BOOTSTRAP = 10_000  # resamples of the problems for an interval
REFERENCE_P_DROPS = (0.1, 0.3)  # DropMatch's taus at which every rule's pass@1 is read in the headline
TAU_TOLERANCE = 0.1  # two rules are compared at matched tau only when both settings lie within this of it
ONE_SIDED = 0.95  # the level of the lower bound a non-inferiority claim rests on


def bar_share() -> float:
    """The bar as a pass@1 difference: 2 / 164 (1.22 points)."""
    return BAR_PROBLEMS / BAR_OF


def paired_bootstrap(
    base, other, groups=None, resamples: int = BOOTSTRAP, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """The (low, high) percentile interval of mean(other) - mean(base) over problems resampled with replacement
    (the two scores of a problem stay together; with `groups`, the problem of each score, the sampled replicates of
    one problem are drawn together). NaN for no problems."""
    d = np.asarray(other, float) - np.asarray(base, float)
    if d.size == 0:
        return float("nan"), float("nan")
    if groups is not None:  # one value per problem: the mean of its replicates, each weighted by their count
        g = pd.Series(d).groupby(np.asarray(groups))
        d, weight = g.sum().to_numpy(), g.size().to_numpy(float)
    else:
        weight = np.ones_like(d)
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, d.size, size=(resamples, d.size))  # [resamples, problems]
    means = d[pick].sum(axis=1) / weight[pick].sum(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def cluster(prompt_id) -> str:
    """The unit a problem is not independent within: a generated word problem's template (`rates-03#17` ->
    `rates-03`); any other problem is its own."""
    return str(prompt_id).split("#", 1)[0]


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjustment of a table's p-values (the family-wise error rate held at each level): the k-th
    smallest p times (m - k + 1), made non-decreasing, capped at 1; NaN stays NaN."""
    p = np.asarray(pvalues, float)
    out, ok = np.full(p.shape, np.nan), ~np.isnan(p)
    order = np.argsort(p[ok])
    m = ok.sum()
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[ok][order] * (m - np.arange(m))))
    out[np.flatnonzero(ok)[order]] = adjusted
    return out


def _wilson(successes: int, n: int, z: float) -> tuple[float, float]:
    """Wilson's score interval of a proportion at normal quantile z."""
    p = successes / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def paired_score_bounds(both_pass: int, lost: int, gained: int, n: int, z: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval (1998, method 10) of the paired difference in pass rate, other minus base, at
    normal quantile z: Wilson intervals of the two rates, combined with their correlation. Unlike a bootstrap of the
    differences, it leaves room for a loss where none was seen (no problem lost of 48 does not bound the loss at 0)."""
    both_fail = n - both_pass - lost - gained
    p1, p2 = (both_pass + lost) / n, (both_pass + gained) / n  # base, other
    (l1, u1), (l2, u2) = _wilson(both_pass + lost, n, z), _wilson(both_pass + gained, n, z)
    spread = (both_pass + lost) * (gained + both_fail) * (both_pass + gained) * (lost + both_fail)
    phi = (both_pass * both_fail - lost * gained) / math.sqrt(spread) if spread > 0 else 0.0
    d = p2 - p1
    low = d - math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    high = d + math.sqrt(max(0.0, (u2 - p2) ** 2 - 2 * phi * (u2 - p2) * (p1 - l1) + (p1 - l1) ** 2))
    return low, high


def non_inferior(lower: float, upper: float, bar: float) -> str:
    """'yes' when the one-sided lower bound clears the bar (-bar), 'no' when the one-sided upper bound is below it,
    'cannot tell' otherwise."""
    if lower > -bar:
        return "yes"
    return "no" if upper < -bar else "cannot tell"


IN_FLIGHT = 2  # problems a recording may be part-way through (one per worker): a setting this short is still whole


def setting_key(rule: str, knob) -> tuple:
    """A setting as a dictionary key: (rule, knob), with None for a rule without a knob (the tie-only control's knob
    is NaN in a table, and no NaN equals another, so a key holding one finds nothing)."""
    return rule, None if knob is None or knob != knob else knob


def complete(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The scored rows of the settings that ran (nearly) every problem any rule ran, restricted to the problems all
    of them and lossless ran, and one row per setting still in progress (rule, knob, problems run, of how many): a
    recording made in parts is judged on its whole settings, so every tau and pass@1 covers the same problems. A
    setting at most `IN_FLIGHT` problems short counts as whole (the problems being decoded as the table was read)."""
    rows = compared_rows(df.dropna(subset=["score"]))
    rules, knobs = rows.apply(rule_name, axis=1), rows.apply(knob_of, axis=1)
    keys = [setting_key(r, k) for r, k in zip(rules, knobs)]
    sets: dict[tuple, set] = {}
    for key, pid in zip(keys, rows["prompt_id"]):
        sets.setdefault(key, set()).add(pid)
    most = max((len(ids) for (rule, _), ids in sets.items() if rule != "lossless"), default=0)
    whole = {key for key, ids in sets.items() if len(ids) >= most - IN_FLIGHT and most}
    problems = set.intersection(*(sets[key] for key in whole)) if whole else set()
    keep = np.array([key in whole or key[0] == "lossless" for key in keys], bool)
    kept = rows[keep & rows["prompt_id"].isin(problems).to_numpy()]
    partial = [
        {"rule": r, "knob": k, "problems": len(ids), "of": most}
        for (r, k), ids in sets.items()
        if r != "lossless" and (r, k) not in whole
    ]
    return kept, pd.DataFrame(partial, columns=["rule", "knob", "problems", "of"])


def judged(df: pd.DataFrame) -> pd.DataFrame:
    """The rows figures and rule comparisons read: for a scored suite with lossless, the whole settings on the problems
    all of them ran (`complete`); otherwise every row."""
    if not len(df) or not df["score"].notna().any() or not (df["method"] == "lossless").any():
        return df
    whole, _ = complete(df)
    return whole if len(whole) else df


def scores_by_setting(df: pd.DataFrame) -> pd.DataFrame:
    """Problems x settings: the task score (0/1) of every scored setting at the compared gamma, one column per
    (rule, knob) pair (lossless's knob NaN); one row per (problem, seed) where a sampled sweep ran replicates."""
    rows = compared_rows(df.dropna(subset=["score"]))
    rows = rows.assign(rule=rows.apply(rule_name, axis=1), knob=rows.apply(knob_of, axis=1))
    index = ["prompt_id", "seed"] if "seed" in rows and rows["seed"].nunique() > 1 else ["prompt_id"]
    return rows.pivot_table(index=index, columns=["rule", "knob"], values="score", dropna=False)


def _problems(both: pd.DataFrame):
    """The cluster of each row of a paired table (its problem's, `cluster`), for a bootstrap and an exact test that
    keep a cluster together; None where every row is its own cluster (one seed, no templates)."""
    ids = both.index.get_level_values(0)
    units = pd.Index([cluster(i) for i in ids])
    return units if both.index.nlevels > 1 or units.nunique() < len(units) else None


def _column(scores: pd.DataFrame, rule: str, knob) -> pd.Series:
    """One setting's scores; lossless's column has knob NaN, which pandas cannot look up by equality."""
    cols = [c for c in scores.columns if c[0] == rule and (c[1] == knob or (pd.isna(c[1]) and pd.isna(knob)))]
    return scores[cols[0]]


def _discordant(first: pd.Series, second: pd.Series) -> tuple[int, int]:
    """Problems (pairs) the first solves and the second does not, and the reverse."""
    return int(((first == 1) & (second == 0)).sum()), int(((first == 0) & (second == 1)).sum())


def _categories(df: pd.DataFrame, scores: pd.DataFrame) -> np.ndarray:
    """The category (a word problem's kind) of each row of a scores table, by its problem."""
    category = df.drop_duplicates("prompt_id").set_index("prompt_id")["category"]
    return category.reindex(scores.index.get_level_values(0)).to_numpy()


def clusters_checked(df: pd.DataFrame) -> pd.DataFrame:
    """A check on the verdict's clusters where problems share a template: each setting's paired differences from
    lossless grouped by template (the clusters the verdict resamples) and by the problems' category (a word
    problem's kind, shared by a dozen templates), with the design effect (95% interval over resampled clusters) and
    the intra-cluster correlation it implies (as the power planner reads it) at each level. Correlation that lives
    across the templates of a kind would make the template-clustered intervals too narrow; a few kinds give a wide
    interval. Empty where no template holds two problems."""
    scores = scores_by_setting(df)
    if scores.index.nlevels > 1 or "lossless" not in scores.columns.get_level_values(0):
        return pd.DataFrame()
    templates = pd.Index([cluster(i) for i in scores.index])
    if templates.nunique() == len(templates):
        return pd.DataFrame()
    kinds = _categories(df, scores)
    base, out = _column(scores, "lossless", float("nan")), []
    for rule, knob in scores.columns[scores.notna().any().to_numpy()]:  # the pivot holds every rule x knob
        if rule == "lossless":
            continue
        d = _column(scores, rule, knob) - base
        ok = d.notna().to_numpy()
        row = {"rule": rule, "knob": knob, "problems": int(ok.sum())}
        for level, units in (("template", templates[ok]), ("kind", kinds[ok])):
            low, high = design_effect_interval(d[ok], units)
            deff, clusters = design_effect(d[ok], units), len(set(units))
            row |= {
                f"{level}s": clusters,
                f"rho_{level}": implied_rho(deff, ok.sum() / clusters),
                f"design_effect_{level}": deff,
                f"design_effect_{level}_low": low,
                f"design_effect_{level}_high": high,
            }
        out.append(row)
    return pd.DataFrame(out)


def against_lossless(df: pd.DataFrame) -> pd.DataFrame:
    """Every setting against lossless on the problems both ran: pass@1, its difference with the paired bootstrap
    95% interval and one-sided 95% bounds, non-inferiority at the bar (yes / no / cannot tell), problems lost and
    gained, the exact p and its Holm-corrected value over the table, the smallest loss these problems detect at 80%
    power (with the clusters' design effect), and the point estimate's reading against the bar (`point_within_bar`,
    a reading, not a test); tau, lambda, cap-out, loops, ties and the cost proxy beside them (setting_points)."""
    scores, points = scores_by_setting(df), setting_points(df.dropna(subset=["score"]))
    if "lossless" not in scores.columns.get_level_values(0):
        return pd.DataFrame()
    base = _column(scores, "lossless", float("nan"))
    rows = compared_rows(df)
    rows = rows.assign(rule=rows.apply(rule_name, axis=1), knob=rows.apply(knob_of, axis=1))
    summed = rows.groupby(["rule", "knob"], dropna=False)["ties"].sum(min_count=1) if "ties" in rows else {}
    ties = {setting_key(rule, knob): n for (rule, knob), n in summed.items()}
    out = []
    for _, p in points[points["method"] != "lossless"].iterrows():
        mine = _column(scores, p["rule"], p["knob"])
        both = pd.concat([base, mine], axis=1, keys=["base", "mine"]).dropna()
        lost, gained = _discordant(both["base"], both["mine"])
        units = _problems(both)
        low, high = paired_bootstrap(both["base"], both["mine"], units)
        d = both["mine"] - both["base"]
        deff = 1.0 if units is None else design_effect(d, units)
        deff_low, deff_high = (float("nan"),) * 2 if units is None else design_effect_interval(d, units)
        psi = (lost + gained) / len(both)
        deff_ = deff if deff == deff and deff > 1 else 1.0
        # the one-sided bounds: the more cautious of the bootstrap's and the score interval's (its z widened by the
        # clusters' design effect), so a bound never rests on the bootstrap alone where few problems parted
        boot = paired_bootstrap(both["base"], both["mine"], units, level=2 * ONE_SIDED - 1)
        both_pass = int(((both["base"] == 1) & (both["mine"] == 1)).sum())
        z = NormalDist().inv_cdf(ONE_SIDED) * math.sqrt(deff_)
        score = paired_score_bounds(both_pass, lost, gained, len(both), z)
        lower, upper = min(boot[0], score[0]), max(boot[1], score[1])
        out.append(
            {
                "rule": p["rule"],
                "family": family_of(p["rule"]),
                "knob_name": p["knob_name"],
                "knob": p["knob"],
                "problems": both.index.get_level_values(0).nunique(),
                "pairs": len(both),
                "tau": p["tau"],
                "score": both["mine"].mean(),
                "score_lossless": both["base"].mean(),
                "score_diff": both["mine"].mean() - both["base"].mean(),
                "diff_low": low,
                "diff_high": high,
                "diff_lower": lower,
                "diff_upper": upper,
                "non_inferior": non_inferior(lower, upper, bar_share()),
                "lost": lost,
                "gained": gained,
                "mcnemar_p": paired_p(both["base"], both["mine"], units),
                "detectable_loss": detectable(len(both) / deff_, psi) if psi > 0 else 0.0,
                "clusters": len(both) if units is None else units.nunique(),
                "design_effect": deff,
                "design_effect_low": deff_low,
                "design_effect_high": deff_high,
                "point_within_bar": both["mine"].mean() - both["base"].mean() >= -bar_share() - 1e-12,
                "length_ratio": p["length_ratio"],
                "capped": p["capped"],
                "loop": p["loop"],
                "ties": ties.get(setting_key(p["rule"], p["knob"])),
                "relaxed_cost_mean": p["relaxed_cost_mean"],
            }
        )
    table = pd.DataFrame(out)
    if len(table):
        table.insert(table.columns.get_loc("mcnemar_p") + 1, "holm_p", holm(table["mcnemar_p"]))
    return table


def by_category(df: pd.DataFrame) -> pd.DataFrame:
    """Every setting against lossless within each category of problems (a word problem's kind: rates, money...), to
    see whether a rule's loss concentrates somewhere: per (setting, category) the problems and clusters, both pass@1s,
    the difference with its paired bootstrap 95% interval, lost and gained, the exact p (a template's problems flip
    together) and its Holm-corrected value over the whole table (settings x categories). Empty where the problems
    fall in one category (HumanEval) or nothing is scored beside lossless."""
    if "category" not in df:
        return pd.DataFrame()
    scores = scores_by_setting(df)
    if "lossless" not in scores.columns.get_level_values(0):
        return pd.DataFrame()
    kinds = _categories(df, scores)
    if len(set(kinds)) < 2:
        return pd.DataFrame()
    points = setting_points(df.dropna(subset=["score"]))
    base, out = _column(scores, "lossless", float("nan")), []
    for _, p in points[points["method"] != "lossless"].iterrows():
        mine = _column(scores, p["rule"], p["knob"])
        for kind in sorted(set(kinds)):
            inside = kinds == kind
            both = pd.concat([base[inside], mine[inside]], axis=1, keys=["base", "mine"]).dropna()
            if both.empty:
                continue
            units = _problems(both)
            low, high = paired_bootstrap(both["base"], both["mine"], units)
            lost, gained = _discordant(both["base"], both["mine"])
            out.append(
                {
                    "rule": p["rule"],
                    "knob": p["knob"],
                    "category": kind,
                    "problems": both.index.get_level_values(0).nunique(),
                    "clusters": len(both) if units is None else units.nunique(),
                    "score_lossless": both["base"].mean(),
                    "score": both["mine"].mean(),
                    "score_diff": both["mine"].mean() - both["base"].mean(),
                    "diff_low": low,
                    "diff_high": high,
                    "lost": lost,
                    "gained": gained,
                    "mcnemar_p": paired_p(both["base"], both["mine"], units),
                }
            )
    table = pd.DataFrame(out)
    if len(table):
        table["holm_p"] = holm(table["mcnemar_p"])
    return table


def nearest_settings(df: pd.DataFrame, target_tau: float) -> pd.DataFrame:
    """Each rule's measured setting whose pooled tau is nearest `target_tau` (lossless is its one point)."""
    points = setting_points(df.dropna(subset=["score"]))
    if points.empty:
        return points
    gap = (points["tau"] - target_tau).abs()
    return points.loc[gap.groupby(points["rule"]).idxmin()].reset_index(drop=True)


def rule_pairs(df: pd.DataFrame, target_tau: float, tolerance: float = TAU_TOLERANCE) -> pd.DataFrame:
    """Every pair of rules matched at `target_tau`, each at its setting nearest it, where both lie within `tolerance`
    of it: on the problems both ran, how many the first solves and the second does not (a_only) and the reverse
    (b_only), the exact p and its Holm-corrected value over the pairs. Lossless is no rule here (its tau is its
    own). `unmatched_rules` names the rules whose nearest setting is further off."""
    scores, chosen = scores_by_setting(df), nearest_settings(df, target_tau)
    chosen = chosen[chosen["method"] != "lossless"] if len(chosen) else chosen
    matched = chosen[(chosen["tau"] - target_tau).abs() <= tolerance + 1e-12] if len(chosen) else chosen
    out = []
    for (_, a), (_, b) in itertools.combinations(matched.iterrows(), 2):
        both = pd.concat(
            [_column(scores, a["rule"], a["knob"]), _column(scores, b["rule"], b["knob"])], axis=1, keys=["a", "b"]
        ).dropna()
        a_only, b_only = _discordant(both["a"], both["b"])
        out.append(
            {
                "rule_a": a["rule"],
                "knob_a": a["knob"],
                "tau_a": a["tau"],
                "rule_b": b["rule"],
                "knob_b": b["knob"],
                "tau_b": b["tau"],
                "problems": both.index.get_level_values(0).nunique(),
                "pairs": len(both),
                "score_a": both["a"].mean(),
                "score_b": both["b"].mean(),
                "a_only": a_only,
                "b_only": b_only,
                "mcnemar_p": paired_p(both["a"], both["b"], _problems(both)),
            }
        )
    table = pd.DataFrame(out)
    if len(table):
        table["holm_p"] = holm(table["mcnemar_p"])
    return table


def unmatched_rules(df: pd.DataFrame, target_tau: float, tolerance: float = TAU_TOLERANCE) -> pd.DataFrame:
    """The rules left out of `rule_pairs` at `target_tau`: their nearest setting's tau lies beyond `tolerance`.
    `knob_free` marks a rule with no knob (the tie-only control): no setting of it could be moved to that tau, so it
    is read against lossless, not matched."""
    chosen = nearest_settings(df, target_tau)
    if chosen.empty:
        return pd.DataFrame(columns=["rule", "knob", "tau", "knob_free"])
    chosen = chosen[chosen["method"] != "lossless"]
    left = chosen.loc[(chosen["tau"] - target_tau).abs() > tolerance + 1e-12, ["rule", "knob", "tau"]]
    return left.assign(knob_free=left["knob"].isna())


def _score_at_tau(curve: pd.DataFrame, tau: float, rule: str) -> tuple[float, str]:
    """A rule's pass@1 at a given tau: measured there, or interpolated between the two knobs whose taus bracket
    it; NaN with the range reached when no pair brackets it."""
    at = curve[np.isclose(curve["tau"], tau, rtol=0, atol=1e-9)]
    if len(at):
        return float(at["score"].iloc[0]), "measured there"
    knob = curve_knob(rule)
    integer = knob.integer if knob is not None else False
    found = matched_knob(curve, tau, integer)
    if found is None:
        return float("nan"), f"not reached (tau {curve['tau'].min():.2f}-{curve['tau'].max():.2f})"
    return float(at_knob(curve, found[0])["score"]), found[1]


def headline(df: pd.DataFrame, p_drops=REFERENCE_P_DROPS) -> pd.DataFrame:
    """Per rule: the largest measured tau shown non-inferior at the bar (its one-sided 95% lower bound clears it;
    NaN where no setting is shown so), the largest whose point estimate lies within the bar (a reading only: at the
    discordance seen a setting that loses nothing and one that loses more than the bar can both land there), and
    the rule's pass@1 at DropMatch's tau at each reference p_drop (js+majority, K and gamma at the centre)."""
    table = against_lossless(df)
    if table.empty:
        return table
    points = setting_points(df.dropna(subset=["score"]))
    dm = points[points["rule"] == "DropMatch js+majority"]
    taus = {p: dm.loc[np.isclose(dm["knob"], p), "tau"] for p in p_drops}
    taus = {p: float(t.iloc[0]) for p, t in taus.items() if len(t)}
    lossless = points[points["method"] == "lossless"].iloc[0]
    out = [{"rule": "lossless", "family": "", "settings": 1, "best_tau_non_inferior": lossless["tau"]}]
    out[0] |= {"knob": None, "best_tau_point_within_bar": lossless["tau"], "knob_point": None}
    out[0] |= {f"score_at_p{p:g}": lossless["score"] for p in taus} | {"score_lossless": lossless["score"]}
    for rule, rows in table.groupby("rule", sort=False):
        shown, point = rows[rows["non_inferior"] == "yes"], rows[rows["point_within_bar"]]
        best = shown.loc[shown["tau"].idxmax()] if len(shown) else None
        best_point = point.loc[point["tau"].idxmax()] if len(point) else None
        row = {
            "rule": rule,
            "family": rows["family"].iloc[0],
            "settings": len(rows),
            "best_tau_non_inferior": best["tau"] if best is not None else float("nan"),
            "knob": best["knob"] if best is not None else None,
            "best_tau_point_within_bar": best_point["tau"] if best_point is not None else float("nan"),
            "knob_point": best_point["knob"] if best_point is not None else None,
            "score_lossless": rows["score_lossless"].iloc[0],
        }
        curve = points[points["rule"] == rule]
        for p, tau in taus.items():
            row[f"score_at_p{p:g}"], row[f"basis_p{p:g}"] = _score_at_tau(curve, tau, rule)
        out.append(row)
    result = pd.DataFrame(out)
    for p, tau in taus.items():
        result.insert(len(result.columns), f"tau_at_p{p:g}", tau)
    return result


def scored_against_lossless(rows: pd.DataFrame) -> tuple[bool, pd.DataFrame]:
    """Whether a suite's rows carry a task score, and if so its `against_lossless` table (else an empty one): what
    the verdict and the power planner both read."""
    scored = bool(len(rows) and rows["score"].notna().any())
    return scored, against_lossless(rows) if scored else pd.DataFrame()


def greedy(df: pd.DataFrame) -> bool:
    """Whether a sweep's rows decoded at T = 0 (a recording without a temperature column did)."""
    return "temperature" not in df or bool((df["temperature"].fillna(0) == 0).all())


def shown_rule(rule: str, greedy_: bool) -> str:
    """A rule's name as it is shown: one whose T = 0 behaviour is this project's reading of its source (EARS, typical
    acceptance, MARS, lenience) named "(greedy reading)" where it decoded greedily (`Rule.shown_name`)."""
    base = base_rule(rule)
    return rule.replace(base, RULES[base].shown_name(greedy_), 1) if base in RULES else rule


def shown_rules(table: pd.DataFrame, greedy_: bool) -> pd.DataFrame:
    """A table as it is shown: its rules' names as `shown_rule` gives them."""
    out = table.copy()
    for column in ("rule", "rule_a", "rule_b"):
        if column in out:
            out[column] = [shown_rule(r, greedy_) for r in out[column]]
    return out


def _points(share: float) -> str:
    """A share as signed points, one decimal, with a true minus sign: -0.0837 -> "−8.4"."""
    return f"{100 * share:+.1f}".replace("-", "\u2212")


def _two(x: float) -> str:
    """Two decimals with a true minus sign, and no "-0.00"."""
    return f"{x + 0.0:.2f}".replace("-0.00", "0.00").replace("-", "\u2212")


def _holm(p: float) -> str:
    return "Holm <0.001" if p < 0.001 else f"Holm {p:.3f}" if p < 0.01 else f"Holm {p:.2f}"


def markdown(df: pd.DataFrame) -> str:
    """The verdict against lossless as a Markdown table, for a paper or a note: one row per whole setting (`complete`;
    lossless first) with its pooled tau, pass@1, problems lost / gained, the difference in points with its 95%
    interval and Holm's p over the table, the one-sided 95% lower bound with the verdict at the bar, the smallest
    loss its problems detect at 80% power, the intra-cluster correlation of its differences with its 95% interval
    (where problems cluster, as a word problem's template does) and the median speed ratio (CPU time) against
    lossless, marked § where part of it was scaled from another sitting. A setting still being recorded is named
    under the table. ValueError where nothing is scored beside lossless."""
    whole, partial = complete(df)
    table = against_lossless(whole)
    if table.empty:
        raise ValueError("nothing is scored beside lossless: no verdict to write")
    greedy_, rho = greedy(whole), plan(table, bar_share())
    rows = whole.assign(rule=whole.apply(rule_name, axis=1), knob=whole.apply(knob_of, axis=1))
    speed = {}
    for (rule, knob), part in rows.groupby(["rule", "knob"], dropna=False):
        ratio = part["speedup_cpu"].median() if "speedup_cpu" in part else float("nan")
        scaled = "speed_basis" in part and bool((part["speed_basis"] == "adjusted").any())
        speed[setting_key(rule, knob)] = "–" if ratio != ratio else f"{ratio:.2f}" + ("§" if scaled else "")
    points = setting_points(whole)
    base = points[points["method"] == "lossless"].iloc[0]
    head = [
        "setting", "τ", "pass@1", "lost / gained", "difference, points, 95%", "one-sided lower bound: within the bar?",
        "detectable loss", "ρ, 95%", "speed",
    ]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    score = table["score_lossless"].iloc[0]
    lossless = ["lossless", f"{base['tau']:.2f}", f"{score:.1%}", *["–"] * 5, speed[setting_key("lossless", None)]]
    lines.append("| " + " | ".join(lossless) + " |")
    for r, c in zip(table.itertuples(), rho.itertuples()):
        knob = f", {r.knob_name} {r.knob:g}".replace("-", "\u2212") if r.knob == r.knob else ""
        name = shown_rule(r.rule, greedy_) + knob
        ends = "–" if c.rho != c.rho else f"{_two(c.rho)} [{_two(c.rho_low)}, {_two(c.rho_high)}]"
        cells = [
            name,
            f"{r.tau:.2f}",
            f"{r.score:.1%}",
            f"{r.lost} / {r.gained}",
            f"{_points(r.score_diff)} [{_points(r.diff_low)}, {_points(r.diff_high)}], {_holm(r.holm_p)}",
            f"{_points(r.diff_lower)}: {r.non_inferior}",
            f"{100 * r.detectable_loss:.1f}",
            ends,
            speed.get(setting_key(r.rule, r.knob), "–"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    n = whole.loc[whole["method"] == "lossless", "prompt_id"].nunique()
    lines.append("")
    lines.append(
        f"{n} problems; the bar: \u2212{100 * bar_share():.2f} points ({BAR_PROBLEMS} of {BAR_OF}). Holm over the "
        f"{len(table)} settings; intervals and tests by cluster ({table['clusters'].iloc[0]} clusters)."
        + (" §: timed in another sitting than lossless, scaled by lossless's cost per forward in the two (an estimate)."
           if any("§" in v for v in speed.values()) else "")
    )  # fmt: skip
    if len(partial):
        named = (
            shown_rule(r.rule, greedy_) + ("" if r.knob != r.knob else f" {r.knob:g}") for r in partial.itertuples()
        )
        busy = ", ".join(f"{name} ({r.problems} of {r.of})" for name, r in zip(named, partial.itertuples()))
        lines.append(f"Still being recorded, left out: {busy}.")
    return "\n".join(lines) + "\n"


def within_bar_band(score_lossless: float) -> tuple[float, float]:
    """The pass@1 band the bar allows around lossless, clipped to [0, 1]."""
    return max(0.0, score_lossless - bar_share()), min(1.0, score_lossless + bar_share())


def problems_note(n: int) -> str:
    """How the bar reads at n problems: "2 of 164" on all of HumanEval, its share of n otherwise."""
    if n == BAR_OF:
        return f"within {BAR_PROBLEMS} of {BAR_OF} problems"
    return f"within {BAR_PROBLEMS}/{BAR_OF} of the problems ({BAR_PROBLEMS * n / BAR_OF:.2g} of the {n} run)"


def at_anchors(df: pd.DataFrame, anchors: list[dict]) -> pd.DataFrame:
    """DropMatch's pooled tau and pass@1 at each calibration anchor's p_drop (`calibrate`'s picks): measured where the
    verdict ran that p_drop, else interpolated linearly in p_drop between the two measured p_drops around it, p_drop 0
    being lossless (greedy DropMatch at p_drop 0 decodes exactly as lossless); empty beyond the last p_drop run."""
    points = setting_points(df.dropna(subset=["score"]))
    dm = points[points["rule"] == "DropMatch js+majority"][["knob", "tau", "score"]]
    base = points[points["method"] == "lossless"]
    if dm.empty or base.empty:
        return pd.DataFrame()
    curve = pd.concat([pd.DataFrame({"knob": [0.0], "tau": base["tau"].iloc[:1], "score": base["score"].iloc[:1]}), dm])
    curve = curve.drop_duplicates("knob").sort_values("knob")
    knobs = curve["knob"].to_numpy(float)
    out = []
    for a in anchors:
        p = float(a["p_drop"])
        if p > knobs.max():
            tau = score = float("nan")
            basis = f"beyond the largest p_drop run ({knobs.max():g})"
        else:
            tau, score = (float(np.interp(p, knobs, curve[c].to_numpy(float))) for c in ("tau", "score"))
            hit = np.isclose(knobs, p)
            lo, hi = knobs[knobs <= p].max(), knobs[knobs >= p].min()
            basis = "measured there" if hit.any() else f"interpolated between p_drop {lo:g} and {hi:g}"
        out.append({"anchor": a["anchor"], "p_drop": p, "tau": tau, "score": score, "basis": basis})
    return pd.DataFrame(out)
