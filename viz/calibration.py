"""Calibration figures: path unanimity and relax rates against p_drop, and the hidden dimensions that split paths.

Both take the calibration result (`python -m dropmatch calibrate --json`: a dict with `curve`, `dims`, `chosen`,
`target_unanimity`, ...) and return plotly figures; nothing here runs a model.
"""

from __future__ import annotations

import plotly.graph_objects as go

from dropmatch.config import PAPER_UNANIMITY
from dropmatch.criteria import DROPMATCH_CRITERIA
from viz.theme import METHOD_COLORS, message_figure, style

HEIGHT = 420
RELAX_COLORS = {
    "js+majority": "#7c3aed",
    "js": "#a78bfa",
    "majority": "#db2777",
    "majority-strict": "#f9a8d4",
    "naive": "#d97706",
}


ANCHOR_DASH = {"unanimity": "dot", "unanimity (paper's count)": "dashdot", "effect": "solid"}


def unanimity_curve(cal: dict) -> go.Figure:
    """Unanimity (both counts) and each rule's relax rate per p_drop, log x axis, with the target unanimity and
    each anchor's p_drop marked (files before anchors were recorded: the chosen p_drop)."""
    curve = sorted(cal.get("curve") or [], key=lambda r: r["p_drop"])
    title = f"Path unanimity vs p_drop<br><sup>{cal.get('suite', '?')}, K {cal.get('K', '?')}</sup>"
    rows = [r for r in curve if r["p_drop"] > 0]
    if not rows:
        return message_figure("no calibration curve recorded", title, HEIGHT)
    x = [r["p_drop"] for r in rows]
    fig = go.Figure()
    fig.add_scatter(
        x=x,
        y=[r["unanimity"] for r in rows],
        mode="lines+markers",
        name="unanimity (all K top-1 agree)",
        line={"color": "#111827", "width": 3},
        hovertemplate="p_drop %{x:.4g}<br>unanimity %{y:.4f}<extra></extra>",
    )
    if all("unanimity_paper" in r for r in rows):
        fig.add_scatter(
            x=x,
            y=[r["unanimity_paper"] for r in rows],
            mode="lines+markers",
            name="unanimity, the paper's count (all K votes for one token)",
            line={"color": "#6b7280", "width": 2, "dash": "dash"},
            hovertemplate="p_drop %{x:.4g}<br>all K votes for one token at %{y:.2%} of positions<extra></extra>",
        )
    for name in DROPMATCH_CRITERIA:
        key = f"relax_{name}"
        if all(key in r for r in rows):
            fig.add_scatter(
                x=x,
                y=[r[key] for r in rows],
                mode="lines+markers",
                name=f"{name} relaxes",
                line={"color": RELAX_COLORS[name], "width": 1.5, "dash": "dot"},
                hovertemplate=f"p_drop %{{x:.4g}}<br>{name} accepts %{{y:.1%}} of the drafts exact "
                "match rejects<extra></extra>",
            )
    target = cal.get("target_unanimity")
    if target is not None:
        source = " (the paper's 70B head)" if target == PAPER_UNANIMITY else ""
        fig.add_hline(
            y=target,
            line={"dash": "dash", "color": METHOD_COLORS["lossless"]},
            annotation_text=f"target {target:.1%}{source}",
            annotation_position="bottom left",
        )
    for found in cal.get("anchors") or []:
        if found["anchor"] in ANCHOR_DASH and found["p_drop"] > 0:
            fig.add_vline(
                x=found["p_drop"],
                line={"dash": ANCHOR_DASH[found["anchor"]], "color": METHOD_COLORS["DropMatch"]},
                annotation_text=f"{found['anchor']}: {found['p_drop']:.3g}"
                + ("" if found["reached"] else " (closest)"),
                annotation_position="top right",
                annotation_textangle=-90,
            )
    chosen = None if cal.get("anchors") else cal.get("chosen")
    if chosen:
        verdict = "reaches it" if cal.get("reached") else "closest; does not reach it"
        fig.add_vline(
            x=chosen,
            line={"dash": "dot", "color": METHOD_COLORS["DropMatch"]},
            annotation_text=f"p_drop {chosen:.3g} ({verdict})",
            annotation_position="top right",
        )
    fig.update_xaxes(type="log", title_text="p_drop (log scale)")
    fig.update_yaxes(title_text="share of positions", range=[0, 1.02])
    fig.update_layout(legend={"orientation": "h", "y": -0.25, "x": 0})
    # a phone fits one legend entry a line under the plot: the figure grows with them, the plot keeps its height
    return style(fig, title, max(HEIGHT + 40, 380 + 20 * len(fig.data)), top=72)


def dims_figure(cal: dict, label_top: int = 8) -> go.Figure:
    """Each hidden dimension: its mean |h| against how often zeroing it alone moves the argmax."""
    dims = cal.get("dims") or {}
    title = "Which hidden dimensions split the paths"
    if not dims.get("dim"):
        return message_figure("no per-dimension view recorded", title, HEIGHT)
    flip, size, ids = dims["flip_rate"], dims["mean_abs_h"], dims["dim"]
    moving = sum(f > 0 for f in flip)
    fig = go.Figure(
        go.Scatter(
            x=size,
            y=flip,
            mode="markers",
            marker={"size": 6, "color": METHOD_COLORS["DropMatch"], "opacity": 0.6},
            customdata=ids,
            hovertemplate="dim %{customdata}<br>mean |h| %{x:.2f}<br>moves the argmax at %{y:.1%} of "
            "positions<extra></extra>",
            name="dimension",
            showlegend=False,
        )
    )
    top = sorted(range(len(ids)), key=lambda i: -flip[i])[:label_top]
    fig.add_scatter(
        x=[size[i] for i in top],
        y=[flip[i] for i in top],
        mode="text",
        text=[f"{ids[i]}" for i in top],
        textposition="top center",
        showlegend=False,
        hoverinfo="skip",
    )
    fig.update_xaxes(type="log", title_text="mean |h| of the dimension (log scale)")
    n = cal.get("dims_positions")
    fig.update_yaxes(
        title_text=f"argmax moves (share of {f'the first {n} ' if n else ''}positions)", rangemode="tozero"
    )
    said = f"{title}<br><sup>zeroing one alone: {moving} of {len(ids)} move the argmax</sup>"
    return style(fig, said, HEIGHT, top=72)


SIZE_COLORS = {0.1: "#a78bfa", 0.3: "#7c3aed"}


PREDICTION_WIDTH = 0.2  # a 70B prediction is drawn only when its 95% interval is narrower than 20 points of unanimity


def _says_something(fit: dict) -> bool:
    """Whether a fit's 70B prediction is worth drawing: measured, with a 95% interval under PREDICTION_WIDTH."""
    predicted, low, high = (fit.get(k) for k in ("predicted", "low", "high"))
    if predicted is None or predicted != predicted or low is None or high is None:
        return False
    return high - low < PREDICTION_WIDTH


def size_figure(record: dict) -> go.Figure:
    """Unanimity (the paper's count: all K votes on one token) against parameter count, log x axis, one series per
    p_drop, and the paper's 70B point (`python -m dropmatch probe --json`). The fit's prediction at 70B is drawn only
    where its 95% interval says something (`_says_something`); with four small models of two families it does not."""
    models = sorted(record.get("models") or [], key=lambda m: m["params"])
    title = f"Path unanimity vs model size<br><sup>K {record.get('K', '?')}, teacher-forced HumanEval solutions</sup>"
    if not models:
        return message_figure("no model probed", title, HEIGHT)
    paper = record.get("paper") or {}
    fig = go.Figure()
    for p_drop in record.get("p_drops") or []:
        rows = [(m, next(r for r in m["rows"] if r["p_drop"] == p_drop)) for m in models]
        color = SIZE_COLORS.get(p_drop, "#475569")
        fig.add_scatter(
            x=[m["params"] for m, _ in rows],
            y=[r["unanimity_paper"] for _, r in rows],
            mode="lines+markers+text",
            name=f"p_drop {p_drop:g}",
            text=[m["name"] for m, _ in rows],
            textposition="top center",
            textfont={"size": 10},
            line={"color": color},
            customdata=[
                f"<b>{m['name']}</b> ({m['original']}, {m['quantisation']})<br>{m['params'] / 1e6:,.0f}M parameters, "
                f"hidden {m['hidden']}, vocabulary {m['vocab']:,}<br>p_drop {p_drop:g}: all {record.get('K')} votes "
                f"on one token at {r['unanimity_paper']:.1%} of {r['positions']} positions (every path on the "
                f"unmasked top-1: {r['unanimity']:.1%}); mean JS threshold {r['js_threshold']:.4f} nats; median "
                f"top-1 logit margin {r['margin_q50']:.2f}"
                + (
                    f"<br>margin over its dropout noise: median {r['noise_ratio_q50']:.2f}; predicted unanimity "
                    f"{r['predicted_unanimity']:.1%}; the paper's 98.4% predicted at p_drop {r['p_drop_for_paper']:.2g}"
                    if "noise_ratio_q50" in r
                    else ""
                )
                for m, r in rows
            ],
            hovertemplate="%{customdata}<extra></extra>",
        )
        fit = (record.get("prediction") or {}).get(f"{p_drop:g}") or {}
        if _says_something(fit) and paper:
            fig.add_scatter(
                x=[paper["params"]],
                y=[fit["predicted"]],
                mode="markers",
                name=f"fit at 70B, p_drop {p_drop:g} (95% interval)",
                marker={"symbol": "diamond-open", "size": 12, "color": color},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [fit["high"] - fit["predicted"]],
                    "arrayminus": [fit["predicted"] - fit["low"]],
                },
                hovertemplate=(
                    f"fit of logit(unanimity) on log10(parameters) over {fit['models']} models, read at 70B: "
                    f"{fit['predicted']:.1%} [{fit['low']:.1%}, {fit['high']:.1%}]<extra></extra>"
                ),
            )
    if paper:
        fig.add_scatter(
            x=[paper["params"]],
            y=[paper["unanimity_paper"]],
            mode="markers",
            name=f"the paper: Llama-3.1-70B, p_drop {paper['p_drop']:g}",
            marker={"symbol": "star", "size": 16, "color": METHOD_COLORS["lossless"]},
            hovertemplate=f"the paper's Table 2: {paper['unanimity_paper']:.1%} at p_drop {paper['p_drop']:g}"
            "<extra></extra>",
        )
    return style(fig, title, HEIGHT, top=72).update_layout(
        xaxis={"type": "log", "title": "parameters (log scale)"},
        yaxis={"title": "unanimity (all K votes on one token)", "tickformat": ".0%", "range": [0, 1.05]},
        legend={"orientation": "h", "y": -0.25, "x": 0},
    )
