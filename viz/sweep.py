"""Sweep figures: pure functions from the tidy sweep table (dropmatch.sweep.load_sweep) to plotly figures.

Every function takes the table (one row per prompt x setting) and returns a `go.Figure`; none loads a model
or imports a UI. Points are medians over prompts (pooled tau = sum N / sum T where noted). The factors a
figure does not vary are held at the sweep's centre: the most frequent value among the DropMatch rows,
which for a one-factor-at-a-time design is the centre it was built around.
"""

from __future__ import annotations

import math

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from dropmatch.config import FACTORS, SETTING_COLUMNS
from dropmatch.criteria import CRITERION_KNOBS
from dropmatch.metrics import pooled_tau
from dropmatch.tables.tradeoff import MEASURES, base_rule, centre, gated, held, pareto_front, setting_points
from dropmatch.tables.verdict import greedy, shown_rule
from viz.theme import METHOD_COLORS, RULE_COLORS, message_figure, style

HEIGHT = 420
COLORS = {
    "lossless": METHOD_COLORS["lossless"],
    "dropmatch": METHOD_COLORS["DropMatch"],
    "relative": "#0d9488",
    "truncation": "#b45309",
}
KNOBBED = ("relative", "truncation")  # the methods labelled by their criterion and knob
LOSSLESS_LINE = {"line_dash": "dash", "line_color": METHOD_COLORS["lossless"]}


def written_knob(knob) -> str | None:
    """A relative's knob as the labels write it: "0.3", a pair of knobs "8/0.5", None for a rule without one (the
    tie-only control's knob is None or NaN)."""
    if knob is None or (isinstance(knob, float) and math.isnan(knob)):
        return None
    return knob if isinstance(knob, str) else f"{knob:g}"


def label(row) -> str:
    """A short name for a setting: "lossless γ5", "DropMatch γ5 K5 p0.3 js+majority" or "typical γ5 epsilon=0.09"."""
    if row["method"] == "lossless":
        return f"lossless γ{int(row['gamma'])}"
    gate = " gated" if gated(row) else ""
    if row["method"] in KNOBBED:
        written = written_knob(row["knob"])
        if written is None:
            return f"{row['criterion']} γ{int(row['gamma'])}{gate}"
        name = CRITERION_KNOBS[row["criterion"]].name
        return f"{row['criterion']} γ{int(row['gamma'])} {name}={written}{gate}"
    return f"DropMatch γ{int(row['gamma'])} K{int(row['K'])} p{row['p_drop']:g} {row['criterion']}{gate}"


def short_labels(pts: pd.DataFrame) -> pd.Series:
    """Point labels naming only the factors that differ between the plotted DropMatch settings ("p0.5")."""
    dm = pts[pts["method"] == "dropmatch"]
    vary = [f for f in FACTORS if dm[f].nunique() > 1]
    prefix = {"gamma": "γ", "K": "K", "p_drop": "p"}

    def one(row) -> str:
        if row["method"] == "lossless":
            return f"lossless γ{int(row['gamma'])}" if "gamma" in vary else "lossless"
        if row["method"] in KNOBBED:
            written = written_knob(row["knob"])
            return " ".join([row["criterion"]] + [written] * (written is not None) + ["gated"] * gated(row))
        parts = [str(row[f]) if f == "criterion" else f"{prefix[f]}{row[f]:g}" for f in vary]
        return " ".join(parts + ["gated"] * gated(row)) or "DropMatch"

    return pts.apply(one, axis=1) if len(pts) else pd.Series(dtype=str)


def _empty(title: str, why: str) -> go.Figure:
    return message_figure(why, title, HEIGHT)


def _lossless_tau(df: pd.DataFrame, gamma) -> float | None:
    rows = df[(df["method"] == "lossless") & (df["gamma"] == gamma)]
    return float(rows["tau"].median()) if len(rows) else None


def tau_vs_p_drop(df: pd.DataFrame) -> go.Figure:
    """Median tau against p_drop, one line per K, with the lossless tau as a dashed line."""
    title = "Mean acceptance length tau vs p_drop<br><sup>one line per K; dashed: lossless</sup>"
    dm = held(df, "p_drop", "K")
    if dm.empty:
        return _empty(title, "no DropMatch rows in this sweep")
    med = dm.groupby(["K", "p_drop"], as_index=False).agg(tau=("tau", "median"), prompts=("tau", "size"))
    med["K"] = med["K"].astype(int).astype(str)
    fig = px.line(med, x="p_drop", y="tau", color="K", markers=True, hover_data=["prompts"])
    base = _lossless_tau(df, centre(df)["gamma"])
    if base is not None:
        fig.add_hline(y=base, annotation_text=f"lossless {base:.2f}", **LOSSLESS_LINE)
    return style(fig, title, HEIGHT, top=72).update_layout(
        xaxis_title="p_drop", yaxis_title=f"tau (median over prompts), γ = {centre(df)['gamma']}"
    )


def tau_vs_k(df: pd.DataFrame) -> go.Figure:
    """Per-prompt tau against the number of dropout paths K at the centre p_drop (the paper has no K ablation)."""
    title = "Mean acceptance length tau vs K"
    dm = held(df, "K")
    if dm.empty:
        return _empty(title, "no DropMatch rows in this sweep")
    dm = dm.assign(K=dm["K"].astype(int).astype(str))  # categorical: evenly spaced boxes
    order = sorted(dm["K"].unique(), key=int)
    fig = px.box(
        dm,
        x="K",
        y="tau",
        points="all",
        category_orders={"K": order},
        color_discrete_sequence=[COLORS["dropmatch"]],
        hover_data=["prompt_id"],
    )
    med = dm.groupby("K")["tau"].median().reindex(order)
    fig.add_scatter(x=med.index, y=med.values, mode="lines+markers", name="median")
    c = centre(df)
    base = _lossless_tau(df, c["gamma"])
    if base is not None:
        fig.add_hline(y=base, annotation_text=f"lossless {base:.2f}", **LOSSLESS_LINE)
    return style(fig, title, HEIGHT).update_layout(
        xaxis_title="K (dropout paths)", yaxis_title=f"tau, γ {c['gamma']}, p_drop {c['p_drop']:g}"
    )


def speedup_vs_gamma(df: pd.DataFrame) -> go.Figure:
    """Per-prompt speedup over lossless (same prompt and gamma) against gamma, by wall clock and by CPU time.

    CPU time (this process's seconds) is the fairer clock on a CPU shared with other jobs."""
    title = "Speedup over lossless vs draft length γ"
    dm = held(df, "gamma").dropna(subset=["speedup"])
    if dm.empty:
        return _empty(title, "no DropMatch rows with a lossless baseline")
    clocks = {"speedup": "wall clock", "speedup_cpu": "CPU time"}
    long = dm.melt(id_vars=["prompt_id", "gamma", "tau", "tau_gain"], value_vars=list(clocks), var_name="clock")
    long = long.dropna(subset=["value"])
    long = long.assign(clock=long["clock"].map(clocks), gamma=long["gamma"].astype(int).astype(str))
    order = {"gamma": sorted(long["gamma"].unique(), key=int)}
    fig = px.box(
        long,
        x="gamma",
        y="value",
        color="clock",
        points="all",
        category_orders=order,
        hover_data=["prompt_id", "tau", "tau_gain"],
    )
    fig.add_hline(y=1.0, annotation_text="lossless", **LOSSLESS_LINE)
    return style(fig, title, HEIGHT).update_layout(
        xaxis_title="γ (draft tokens per round)", yaxis_title="tokens/s ÷ lossless tokens/s", boxmode="group"
    )


def score_vs_tau(df: pd.DataFrame) -> go.Figure:
    """Task score against pooled tau per setting: the paper's accuracy / acceptance trade-off."""
    title = "Task score vs mean acceptance length<br><sup>the paper's accuracy / acceptance trade-off</sup>"
    scored = df.dropna(subset=["score"])
    if scored.empty:
        return _empty(title, "this sweep has no task score (HumanEval has one)")
    g = scored.groupby(list(SETTING_COLUMNS), dropna=False)
    pts = g["score"].agg(["mean", "size"]).rename(columns={"mean": "score", "size": "problems"})
    pts["tau"] = g.apply(lambda rows: pooled_tau(rows["n_tokens"], rows["target_forwards"]))
    pts = pts.reset_index()
    pts["setting"], pts["short"] = pts.apply(label, axis=1), short_labels(pts)
    fig = px.scatter(
        pts,
        x="tau",
        y="score",
        color="method",
        color_discrete_map=COLORS,
        text="short",
        hover_name="setting",
        hover_data={"problems": True, "short": False},
    )
    fig.update_traces(textposition="top center", marker_size=12)
    pad = max(0.1, 0.2 * (pts["tau"].max() - pts["tau"].min()))  # room for the labels
    fig.update_xaxes(range=[pts["tau"].min() - pad, pts["tau"].max() + pad])
    return style(fig, title, max(HEIGHT, 380 + 20 * len(fig.data)), top=72).update_layout(
        xaxis_title="tau (pooled: sum N / sum T)",
        yaxis_title="task score (pass@1)",
        yaxis_range=[0, 1.05],
        legend={"orientation": "h", "y": -0.2, "x": 0},  # under the plot: a phone keeps the plot's width
    )


def category_bars(df: pd.DataFrame) -> go.Figure:
    """Median tau per prompt category: lossless vs DropMatch at the centre setting."""
    title = "Mean acceptance length per category"
    c = centre(df)
    if not c:
        return _empty(title, "no DropMatch rows in this sweep")
    rows = pd.concat([df[(df["method"] == "lossless") & (df["gamma"] == c["gamma"])], held(df)])
    med = rows.groupby(["category", "method"], as_index=False)["tau"].median()
    fig = px.bar(med, x="category", y="tau", color="method", color_discrete_map=COLORS, barmode="group")
    return style(fig, title, HEIGHT).update_layout(
        yaxis_title=f"tau (median), γ {c['gamma']}, K {c['K']}, p_drop {c['p_drop']:g}"
    )


def varied(row, c: dict) -> str:
    """Which factor a setting moves away from the centre: "lossless", "centre", or the factor's name (span-gated
    DropMatch: "span gate", with any factor it moves)."""
    if row["method"] in ("lossless", *KNOBBED):
        return row["method"] if row["method"] == "lossless" else str(row["criterion"])
    moved = [f for f in FACTORS if f in c and row[f] != c[f]] + ["span gate"] * gated(row)
    return moved[0] if len(moved) == 1 else ("centre" if not moved else "+".join(moved))


def lossiness_vs_tau(df: pd.DataFrame) -> go.Figure:
    """Per setting: pooled tau against the median share of tokens equal to lossless (same prompt and gamma).

    The suite's version of the accuracy / acceptance trade-off: up and right is faster and closer to lossless."""
    title = "Faithfulness vs mean acceptance length<br><sup>per setting: its tokens equal to lossless's</sup>"
    rows = df.dropna(subset=["equal_share"])
    if rows.empty or not (rows["method"] == "dropmatch").any():
        return _empty(title, "no DropMatch rows with a lossless baseline")
    g = rows.groupby(list(SETTING_COLUMNS), dropna=False)
    pts = g["equal_share"].median().rename("equal_share").to_frame()
    pts["first_divergence"] = g["first_divergence"].median()
    pts["tau"] = g.apply(lambda rows: pooled_tau(rows["n_tokens"], rows["target_forwards"]))
    pts["prompts"] = g.size()
    pts = pts.reset_index()
    c = centre(df)
    pts["setting"] = pts.apply(label, axis=1)
    pts["varies"] = pts.apply(lambda r: varied(r, c), axis=1)
    fig = px.scatter(
        pts,
        x="tau",
        y="equal_share",
        color="varies",
        hover_name="setting",
        color_discrete_map={"lossless": COLORS["lossless"], "centre": COLORS["dropmatch"]},
        hover_data={"first_divergence": ":.0f", "prompts": True, "varies": False},
    )
    fig.update_traces(marker_size=11)
    return style(fig, title, max(HEIGHT, 380 + 20 * len(fig.data)), top=72).update_layout(
        xaxis_title="tau (pooled: sum N / sum T)",
        yaxis_title="tokens equal to lossless (median share)",
        yaxis_range=[-0.02, 1.05],
        legend={"orientation": "h", "y": -0.2, "x": 0},  # under the plot: a phone keeps the plot's width
    )


def rule_color(rule: str) -> str:
    return METHOD_COLORS["DropMatch"] if rule.startswith("DropMatch") else RULE_COLORS.get(base_rule(rule), "#475569")


def tradeoff(df: pd.DataFrame, measure: str = "score") -> go.Figure:
    """Pooled tau against one quality measure per setting, one curve per rule (DropMatch over p_drop, each
    relative over its knob, lossless a point); rings mark the Pareto front (no other point is both faster
    and better on the measure)."""
    about = MEASURES[measure]
    title = f"Speed vs {about.label}<br><sup>one curve per rule along its knob; ringed: the Pareto front</sup>"
    pts = setting_points(df).dropna(subset=[measure, "tau"])
    if pts.empty:
        return _empty(title, f"no setting of this sweep has {about.label}")
    pts = pts.assign(front=pareto_front(pts, measure))
    fig, at_t0 = go.Figure(), greedy(df)
    for rule, curve in pts.groupby("rule", sort=False):
        curve, shown = curve.sort_values("knob"), shown_rule(rule, at_t0)
        name = curve["knob_name"].iloc[0]
        text = [f"{k:g}" if pd.notna(k) else "" for k in curve["knob"]]
        hover = [
            f"<b>{shown}</b>" + (f" · {name} = {k:g}" if pd.notna(k) else "") + f"<br>tau {t:.2f} · {about.label} "
            f"{v:.3g}<br>{n:.0f} prompts" + ("<br><b>on the Pareto front</b>" if f else "")
            for k, t, v, n, f in zip(curve["knob"], curve["tau"], curve[measure], curve["prompts"], curve["front"])
        ]
        color = rule_color(rule)
        fig.add_scatter(
            x=curve["tau"],
            y=curve[measure],
            mode="lines+markers+text",
            name=shown,
            text=text,
            textposition="top center",
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            line={"color": color, "width": 2},
            textfont={"color": color, "size": 10},
            marker={
                "size": [14 if f else 9 for f in curve["front"]],
                "color": color,
                "line": {"width": [3 if f else 0 for f in curve["front"]], "color": "#111827"},
            },
        )
    fig.add_scatter(
        x=[None],
        y=[None],
        mode="markers",
        name="Pareto front (ringed)",
        marker={"size": 14, "color": "rgba(0,0,0,0)", "line": {"width": 3, "color": "#111827"}},
    )
    direction = {"higher": "higher is better", "lower": "lower is better", "one": "1 = as long as lossless"}
    # a phone fits one legend entry a line under the plot: the figure grows with them, the plot keeps its height
    return style(fig, title, max(HEIGHT + 60, 380 + 20 * len(fig.data)), top=72).update_layout(
        xaxis_title="tau (pooled: sum N / sum T)",
        yaxis_title=f"{about.label} ({direction[about.better]})",
        legend={"orientation": "h", "y": -0.2, "x": 0},
        meta={"measure": measure, "front": pts["front"].tolist()},
    )


def tradeoff_measures(df: pd.DataFrame) -> list[str]:
    """The quality measures this sweep can plot against tau (a relative or a second DropMatch point to compare)."""
    pts = setting_points(df)
    if pts["rule"].nunique() < 2:
        return []
    return [m for m in MEASURES if pts[m].notna().sum() >= 2]


def relevant(df: pd.DataFrame) -> list[str]:
    """Names of the figures that have something to show for this table: a varied factor, a score, categories."""
    shows = {
        "tau_vs_p_drop": held(df, "p_drop", "K")["p_drop"].nunique() > 1,
        "tau_vs_k": held(df, "K")["K"].nunique() > 1,
        "speedup_vs_gamma": held(df, "gamma")["speedup"].notna().any(),
        "score_vs_tau": df["score"].notna().any(),
        "category_bars": df["category"].nunique() > 1 and not held(df).empty,
        "lossiness_vs_tau": df["equal_share"].notna().any() and (df["method"] == "dropmatch").any(),
        "tradeoff": df["method"].isin(KNOBBED).any() and bool(tradeoff_measures(df)),
    }
    return [name for name in FIGURES if shows[name]]


# The registry the report and the app read their figure choices from.
FIGURES = {
    "tau_vs_p_drop": tau_vs_p_drop,
    "tau_vs_k": tau_vs_k,
    "speedup_vs_gamma": speedup_vs_gamma,
    "score_vs_tau": score_vs_tau,
    "category_bars": category_bars,
    "lossiness_vs_tau": lossiness_vs_tau,
    "tradeoff": lambda df: tradeoff(df, tradeoff_measures(df)[0] if tradeoff_measures(df) else "score"),
}
