"""The verdict's figures and tables: pass@1 against tau, one curve per rule, with the band of the field's bar shaded
around lossless; where each rule's relaxations fall by token kind (rules x token classes); and the paired tables as
the app shows them, headed in plain words.

Pure functions from a sweep's tidy table (or the token-kind table built from it) to plotly figures and HTML; no model.
"""

from __future__ import annotations

import html
import math
import re
import textwrap
from collections.abc import Callable

import pandas as pd
import plotly.graph_objects as go

from dropmatch.tables.power import plan
from dropmatch.tables.tradeoff import setting_points
from dropmatch.tables.verdict import (
    TAU_TOLERANCE,
    against_lossless,
    at_anchors,
    by_category,
    complete,
    greedy,
    headline,
    problems_note,
    rule_pairs,
    shown_rule,
    shown_rules,
    unmatched_rules,
    within_bar_band,
)
from dropmatch.token_kinds import LABELS
from viz.sweep import rule_color
from viz.tables import word_table
from viz.theme import METHOD_COLORS, message_figure, style

HEIGHT = 480
# The verdict tables' columns in plain words; each header's title keeps the column's name (as in the CSV and the
# report) and its definition. WIDE: the columns a phone leaves out (the rest keep a row on one line there).
WORDS = {
    "settings": "settings run",
    "best_tau_non_inferior": "best τ shown within the bar",
    "best_tau_point_within_bar": "best τ, point estimate within the bar",
    "knob_point": "its knob",
    "knob_name": "knob name",
    "tau": "τ",
    "score": "pass@1",
    "score_lossless": "lossless pass@1",
    "score_diff": "pass@1 change",
    "diff_low": "95% interval: low",
    "diff_high": "95% interval: high",
    "mcnemar_p": "p (exact)",
    "holm_p": "p, Holm-corrected",
    "diff_lower": "one-sided 95% lower bound",
    "diff_upper": "one-sided 95% upper bound",
    "non_inferior": "non-inferior at the bar",
    "detectable_loss": "smallest loss detectable (80% power)",
    "design_effect": "design effect",
    "design_effect_low": "design effect: 95% low",
    "design_effect_high": "design effect: 95% high",
    "clusters": "clusters",
    "point_within_bar": "point estimate within the bar",
    "length_ratio": "length ratio λ",
    "capped": "hit the length cap",
    "loop": "loops",
    "relaxed_cost_mean": "nats per relaxed acceptance",
    "rule_a": "rule A",
    "knob_a": "A's knob",
    "tau_a": "A's τ",
    "rule_b": "rule B",
    "knob_b": "B's knob",
    "tau_b": "B's τ",
    "score_a": "A's pass@1",
    "score_b": "B's pass@1",
    "a_only": "solved by A only",
    "b_only": "solved by B only",
    "basis": "how it was read",
    "discordance": "discordant share",
    "power_at_loss": "power against the loss",
    "problems_to_detect": "problems to detect the loss",
    "problems_for_equivalence": "problems to show equivalence",
    "detectable_floor": "detectable loss, however many a cluster",
    "problems_with_samples": "problems, with these samples each",
    "loss": "loss to detect",
    "samples": "samples a problem",
    "rho": "ρ within a cluster",
    "rho_low": "ρ: 95% low",
    "rho_high": "ρ: 95% high",
}
PATTERNS = {  # columns named by a p_drop: "score_at_p0.3"
    "score_at_p": "pass@1 at DropMatch's τ, p_drop {}",
    "tau_at_p": "DropMatch's τ at p_drop {}",
    "basis_p": "how it was read, p_drop {}",
}
WIDE = {"family", "settings", "knob_name", "score_lossless", "problems", "pairs", "length_ratio", "capped", "loop"}
WIDE |= {"ties", "relaxed_cost_mean", "basis", "clusters", "design_effect", "point_within_bar", "knob_point"}
WIDE |= {"diff_low", "diff_high", "diff_upper", "best_tau_point_within_bar", "design_effect_low", "design_effect_high"}
WIDE |= {"rho_low", "rho_high"}
WIDE_PREFIXES = ("tau_at_p", "basis_p")  # DropMatch's tau (the same in every row) and how each score was read


def plain(column: str) -> str:
    """A verdict column's header in plain words (its own name where that is a word already)."""
    found = re.fullmatch(r"(score_at_p|tau_at_p|basis_p)(.+)", column)
    return PATTERNS[found[1]].format(found[2]) if found else WORDS.get(column, column)


CLUSTERED = ["design_effect_low", "design_effect_high", "rho_low", "rho_high", "detectable_floor"]  # clusters of pairs


def _table(df: pd.DataFrame, about: Callable[[str], str | None]) -> str:
    """A verdict table in plain words; the clusters' intervals left out where no pair has a cluster (HumanEval)."""
    df = df.drop(columns=[c for c in CLUSTERED if c in df and df[c].isna().all()])
    wide = {c for c in df.columns if c in WIDE or c.startswith(WIDE_PREFIXES)}
    return word_table(df, about, plain, wide)


def _fold(summary: str, body: str) -> str:
    """A part the page opens where it is wide and leaves folded on a phone (the page's script decides)."""
    return f"<details class=dm-fold open><summary>{html.escape(summary)}</summary>{body}</details>"


def _by_kind(kinds: pd.DataFrame, at_t0: bool, about: Callable[[str], str | None]) -> str:
    """Every setting against lossless within each problem kind, with a line saying which losses survive Holm's
    correction over the whole table (often none: a kind holds a tenth of the problems)."""
    kinds = shown_rules(kinds, at_t0)
    found = kinds[(kinds["holm_p"] < 0.05) & (kinds["score_diff"] < 0)]
    named = ", ".join(f"{r.rule} on {r.category} ({r.score_diff:+.1%})" for r in found.itertuples())
    smallest = kinds.sort_values(["holm_p", "mcnemar_p"]).iloc[0]  # Holm ties at 1: the smallest nominal p
    said = (
        f"Told from zero after Holm over the {len(kinds)} tests: {named}."
        if len(found)
        else f"No setting's loss on any kind is told from zero after Holm over the {len(kinds)} tests (smallest "
        f"Holm p {smallest['holm_p']:.2f}: {smallest['rule']} on {smallest['category']}, "
        f"{smallest['score_diff']:+.1%})."
    )
    note = "Each kind holds a fraction of the problems, so its intervals are wide; a loss that shows overall "
    note += "need not show in any one kind. " + said
    return f"<p class=note>{html.escape(note)}</p>" + _table(kinds, about)


def verdict_tables(
    part: pd.DataFrame,
    about: Callable[[str], str | None],
    note: str,
    anchors: list[dict] | None = None,
    table: pd.DataFrame | None = None,
    kinds: pd.DataFrame | None = None,
) -> tuple[str, pd.DataFrame]:
    """The verdict's tables as the app and the report show them (in plain words, each header's title its column's
    name and definition) and the rows
    they judge (the whole settings); ("", empty) where nothing is scored beside lossless. In view: the note (`note`,
    with the bar in {bar}), the headline and DropMatch at the calibration's anchors; folded on a phone: every setting
    against lossless and rule against rule at DropMatch's taus. `about`: a column's definition; `table`: the whole
    settings' `against_lossless` and `kinds` their `by_category`, where the caller has them already (each resamples
    every setting: seconds)."""
    whole, partial = complete(part)
    table = against_lossless(whole) if table is None else table
    if table.empty:
        return "", whole.iloc[0:0]
    n = whole.loc[whole["method"] == "lossless", "prompt_id"].nunique()
    out = [f"<p class=note>{html.escape(note.format(bar=problems_note(n)))}</p>"]
    if len(partial):
        busy = ", ".join(f"{r.rule} {r.knob:g} ({r.problems} of {r.of})" for r in partial.itertuples())
        out.append(f"<p class=note>Still being recorded, left out here: {html.escape(busy)}.</p>")
    head, at_t0 = headline(whole), greedy(whole)
    out.append(_table(shown_rules(head, at_t0), about))
    at = at_anchors(whole, anchors or [])
    if len(at):
        out.append("<h4>DropMatch at the calibration's anchors</h4>" + _table(at, about))
    out.append(
        _fold(f"Every setting against lossless ({len(table)} settings)", _table(shown_rules(table, at_t0), about))
    )
    kinds = by_category(whole) if kinds is None else kinds
    if len(kinds):
        out.append(_fold(f"By problem kind ({kinds['category'].nunique()} kinds)", _by_kind(kinds, at_t0, about)))
    for column in [c for c in head.columns if c.startswith("tau_at_p")]:
        tau = float(head[column].iloc[0])
        pairs, left = rule_pairs(whole, tau), unmatched_rules(whole, tau)
        label = f"p_drop {column.removeprefix('tau_at_p')}, tau {tau:.2f}"
        summary = (
            f"Rule against rule at DropMatch's tau ({label}; settings within ±{TAU_TOLERANCE:g}): {len(pairs)} pairs"
        )
        body = _table(shown_rules(pairs, at_t0), about) if len(pairs) else "<p class=note>No two rules matched.</p>"
        far, fixed = left[~left["knob_free"]], left[left["knob_free"]]
        if len(far):
            named = ", ".join(f"{r.rule} (nearest tau {r.tau:.2f})" for r in shown_rules(far, at_t0).itertuples())
            body += f"<p class=note>Not matched (no setting within ±{TAU_TOLERANCE:g} of tau {tau:.2f}): "
            body += f"{html.escape(named)}.</p>"
        if len(fixed):
            named = ", ".join(f"{r.rule} (tau {r.tau:.2f})" for r in shown_rules(fixed, at_t0).itertuples())
            body += f"<p class=note>No knob to match, read against lossless above: {html.escape(named)}.</p>"
        out.append(_fold(summary, body))
    return "".join(out), whole


def score_curves(df: pd.DataFrame) -> go.Figure:
    """pass@1 against pooled tau per setting, one curve per rule along its knob, lossless a point; the shaded band
    is the field's bar (pass@1 within 2 of 164 problems of lossless). Hover: the paired test against lossless."""
    title = "pass@1 vs mean acceptance length<br><sup>one curve per rule along its knob; shaded: within 2/164 of "
    title += "lossless</sup>"
    points = setting_points(df.dropna(subset=["score"]))
    if points.empty or not (points["method"] == "lossless").any():
        return message_figure("this sweep has no task score beside a lossless run (HumanEval has one)", title, HEIGHT)
    tests = against_lossless(df).set_index(["rule", "knob"])
    lossless = points[points["method"] == "lossless"].iloc[0]
    seeds = max(1, int(df["seed"].nunique())) if "seed" in df else 1  # a sampled sweep runs each problem per seed

    def ran(cells: float) -> str:
        return f"{cells / seeds:.0f} problems x {seeds} seeds" if seeds > 1 else f"{cells:.0f} problems"

    low, high = within_bar_band(lossless["score"])
    fig = go.Figure()
    fig.add_hrect(y0=low, y1=high, fillcolor=METHOD_COLORS["lossless"], opacity=0.15, line_width=0, layer="below")
    fig.add_scatter(  # the band's legend entry (a shape has none)
        x=[None],
        y=[None],
        mode="markers",
        marker={"symbol": "square", "size": 14, "color": METHOD_COLORS["lossless"], "opacity": 0.3},
        name=f"lossless's pass@1, {problems_note(round(lossless['prompts'] / seeds))}",
    )
    at_t0 = greedy(df)
    for rule, curve in points.groupby("rule", sort=False):
        curve, shown = curve.sort_values("knob"), shown_rule(rule, at_t0)
        hover = []
        for _, p in curve.iterrows():
            text = f"<b>{shown}</b>" + (f" · {p['knob_name']} = {p['knob']:g}" if pd.notna(p["knob"]) else "")
            text += f"<br>tau {p['tau']:.2f} · pass@1 {p['score']:.1%} of {ran(p['prompts'])}"
            key = (rule, p["knob"])
            if key in tests.index:
                t = tests.loc[key]
                text += (
                    f"<br>against lossless: {t['lost']} lost, {t['gained']} gained"
                    + (" (problem, seed) pairs (exact test, seeds kept together:" if seeds > 1 else " (exact McNemar")
                    + f" p {t['mcnemar_p']:.2g})"
                    f"<br>difference {t['score_diff']:+.1%}, 95% paired bootstrap [{t['diff_low']:+.1%}, "
                    f"{t['diff_high']:+.1%}]"
                )
            hover.append(text)
        color = rule_color(rule)
        fig.add_scatter(
            x=curve["tau"],
            y=curve["score"],
            mode="lines+markers+text",
            name=shown,
            text=[f"{k:g}" if pd.notna(k) else "" for k in curve["knob"]],
            textposition="top center",
            textfont={"color": color, "size": 10},
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            line={"color": color, "width": 2},
            marker={"size": 12 if rule == "lossless" else 9, "color": color},
        )
    # a phone fits one legend entry a line under the plot: the figure grows with them, the plot keeps its height
    return style(fig, title, max(HEIGHT, 380 + 20 * len(fig.data)), top=72).update_layout(
        xaxis_title="tau (pooled: sum N / sum T)",
        yaxis_title="pass@1",
        yaxis_tickformat=".1%",
        legend={"orientation": "h", "y": -0.2, "x": 0},
        meta={"band": [low, high]},
    )


PLAN_COLUMNS = ["rule", "knob", "problems", "lost", "gained", "discordance", "design_effect", "rho", "rho_low"]
PLAN_COLUMNS += ["rho_high", "detectable_loss", "detectable_floor", "power_at_loss", "problems_to_detect"]
PLAN_COLUMNS += ["problems_for_equivalence"]


def power_tables(
    table: pd.DataFrame, greedy_: bool, about: Callable[[str], str | None], loss: float, typed: dict | None = None
) -> str:
    """The power planner as the app shows it: for the sweep shown (`table`, its whole settings' `against_lossless`;
    `greedy_`, whether it decoded at T = 0), per setting its discordance, the smallest loss its own problems detect at
    80% power, its power against `loss`, and the problems needed to detect `loss` or to show equivalence within it
    (`dropmatch.tables.power.plan`, clusters through their design effect); `typed`: the plan for a discordance typed
    in (`power.typed_plan`), shown first. Empty where there is nothing to plan."""

    def counted(df: pd.DataFrame) -> pd.DataFrame:  # problems needed: whole problems, rounded up, with separators
        needed = [c for c in df.columns if c.startswith("problems_")]
        return df.assign(**{c: [f"{math.ceil(v):,}" if v == v else "" for v in df[c]] for c in needed})

    out = []
    if typed:
        out.append("<h4>For the discordance typed in</h4>" + _table(counted(pd.DataFrame([typed])), about))
    if len(table):
        planned = counted(shown_rules(plan(table, loss), greedy_)[PLAN_COLUMNS])
        note = (
            f"Against a loss of {loss:.2%} of pass@1 ({loss * 164:.1f} of 164 problems), two-sided 5%, 80% power, "
            "each setting at its own discordance with lossless (normal approximation of the paired test; the exact "
            "test needs a little more)."
        )
        out.append(f"<h4>For the sweep shown</h4><p class=note>{html.escape(note)}</p>" + _table(planned, about))
    return "".join(out)


def kinds_heatmap(kinds: pd.DataFrame) -> go.Figure:
    """Rules x token kinds: the share of each setting's relaxed acceptances in each kind (a row sums to 1), the
    mean cost of that kind's relaxations on hover, and where the table has them, the problems lost that part from
    lossless first at that kind (`dropmatch.lab.relaxations.kinds_table`)."""
    title = "Where each rule relaxes<br><sup>the share of its relaxed acceptances of each token kind</sup>"
    if kinds.empty:
        return message_figure("no relaxed acceptance recorded here (older sweeps did not keep them)", title, HEIGHT)
    names = [c.removeprefix("share ") for c in kinds.columns if c.startswith("share ")]
    rows = [
        f"{r['rule']}"
        + (f" {r['knob']:g}" if pd.notna(r["knob"]) else "")
        + f" · {r['suite']}" * (kinds["suite"].nunique() > 1)
        for _, r in kinds.iterrows()
    ]
    share = kinds[[f"share {k}" for k in names]].to_numpy(float)
    cost = kinds[[f"cost {k}" for k in names]].to_numpy(float)
    lost = kinds.reindex(columns=["lost", *(f"lost at {k}" for k in names)])

    def first(i: int, k: str) -> str:
        n, at = lost["lost"].iloc[i], lost[f"lost at {k}"].iloc[i]
        return f"<br>{at:.0f} of {n:.0f} problems lost part from lossless first here" if n == n and at == at else ""

    hover = [
        [
            f"<b>{row}</b><br>{LABELS.get(k, k)}: {s:.0%} of {n} relaxed acceptances"
            + (f"<br>mean cost {c:.2f} nats (a proxy)" if c == c else "")
            + first(i, k)
            for k, s, c in zip(names, srow, crow)
        ]
        for i, (row, n, srow, crow) in enumerate(zip(rows, kinds["relaxed"], share, cost))
    ]
    fig = go.Figure(
        go.Heatmap(
            z=share,
            x=[LABELS.get(k, k) for k in names],
            y=["<br>".join(textwrap.wrap(row, 22)) for row in rows],  # two short lines on a phone
            text=[[f"{s:.0%}" for s in srow] for srow in share],
            texttemplate="%{text}",
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            colorscale="Purples",
            zmin=0,
            zmax=1,
            showscale=False,  # every cell says its share: the colours only group them
            xgap=1,
            ygap=1,
        )
    )
    return style(fig, title, 260 + 34 * len(rows), top=72).update_layout(
        yaxis={"autorange": "reversed", "automargin": True},
        xaxis={"automargin": True, "tickangle": -90},  # upright: a phone leaves no room across
        margin={"r": 12},
        meta={"rows": rows, "kinds": names},
    )


def problem_kinds_heatmap(kinds: pd.DataFrame, greedy_: bool) -> go.Figure:
    """Problem kinds x settings: each setting's pass@1 change against lossless within each kind, in points (losses
    red, gains blue, on one scale centred at zero), a star where the change survives Holm's correction over the whole
    table; hover: both pass@1s, the paired interval, lost and gained, the exact p and its Holm value
    (`dropmatch.tables.verdict.by_category`, the table it draws). Kinds run down and settings across (their names
    upright), so that nine kinds and half a dozen settings read on a phone."""
    title = "pass@1 change by problem kind<br><sup>points against lossless; * survives Holm over the table</sup>"
    if kinds.empty:
        return message_figure("the problems fall in one kind here (the word problems have nine)", title, HEIGHT)
    kinds = shown_rules(kinds, greedy_)
    kinds = kinds.assign(row=[f"{r} {k:g}" if pd.notna(k) else r for r, k in zip(kinds["rule"], kinds["knob"])])
    settings, names = list(dict.fromkeys(kinds["row"])), sorted(kinds["category"].unique())
    cells = kinds.set_index(["row", "category"])
    tests = len(kinds)

    def at(setting: str, kind: str, column: str) -> float:
        return cells[column].get((setting, kind), float("nan"))

    def hover(setting: str, kind: str) -> str:
        if (setting, kind) not in cells.index:
            return f"<b>{setting}</b> on {kind}: not run"
        c = cells.loc[(setting, kind)]
        clustered = c["clusters"] < c["problems"]  # problems of one template resampled and tested together
        return (
            f"<b>{setting}</b> on {kind}: pass@1 {c['score']:.1%} against lossless's {c['score_lossless']:.1%} "
            f"on {c['problems']:.0f} problems"
            + (f" ({c['clusters']:.0f} templates)" if clustered else "")
            + f"<br>change {c['score_diff'] * 100:+.1f} points, 95% paired bootstrap"
            + (" over templates" if clustered else "")
            + f" [{c['diff_low'] * 100:+.1f}, {c['diff_high'] * 100:+.1f}]"
            f"<br>{c['lost']:.0f} lost, {c['gained']:.0f} gained; exact p {c['mcnemar_p']:.2g}"
            + (" (templates kept together)" if clustered else " (McNemar)")
            + f", Holm over {tests} tests {c['holm_p']:.2g}"
        )

    z = [[at(s, k, "score_diff") * 100 for s in settings] for k in names]
    star = [[bool(at(s, k, "holm_p") < 0.05) for s in settings] for k in names]
    span = max(5.0, max((abs(v) for row in z for v in row if v == v), default=5.0))
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=settings,
            y=names,
            text=[[f"{v:+.0f}" + "*" * s if v == v else "" for v, s in zip(zrow, srow)] for zrow, srow in zip(z, star)],
            texttemplate="%{text}",
            customdata=[[hover(s, k) for s in settings] for k in names],
            hovertemplate="%{customdata}<extra></extra>",
            colorscale="RdBu",
            zmid=0,
            zmin=-span,
            zmax=span,
            showscale=False,  # every cell says its number: the colours only group them
            xgap=1,
            ygap=1,
        )
    )
    return style(fig, title, 280 + 34 * len(names), top=72).update_layout(
        yaxis={"autorange": "reversed", "automargin": True},
        xaxis={"automargin": True, "tickangle": -90, "tickfont": {"size": 11}},  # upright: no room across a phone
        margin={"r": 12},
        meta={"settings": settings, "kinds": names},
    )
