"""Token inspector figures: the top-N probability heatmap over heads and the JS test of one draft position."""

from __future__ import annotations

import plotly.graph_objects as go

from dropmatch.trace import TokenRecord
from viz.theme import (
    ACCEPT_COLOR,
    METHOD_COLORS,
    PROB_SCALE,
    REASON_COLORS,
    REJECT_COLOR,
    message_figure,
    show_token,
    style,
)

MAX_COLUMNS = 16


def no_paths_message(rec: TokenRecord) -> str:
    """Why a record carries no path evidence."""
    if rec.kind == "bonus":
        return "No dropout paths: a bonus token follows the last draft, nothing was verified here."
    if rec.kind == "target":
        return "No dropout paths: target-only decoding."
    return "No dropout paths at this position (a lossless run, or a lazy run where exact match decided)."


def head_rows(top: dict) -> tuple[list[str], list[list[float]]]:
    """Row names and probabilities, top to bottom: path 1..K, centroid, unmasked target, draft."""
    K = len(top["paths"])
    names = [f"path {i + 1}" for i in range(K)] + ["centroid", "target (unmasked)", "draft q"]
    return names, [*top["paths"], top["centroid"], top["target"], top["draft"]]


def _mark_column(fig: go.Figure, col: int, rows: int, label: str, color: str) -> None:
    fig.add_shape(
        type="rect",
        x0=col - 0.5,
        x1=col + 0.5,
        y0=-0.5,
        y1=rows - 0.5,
        line={"color": color, "width": 3},
        fillcolor="rgba(0,0,0,0)",
    )
    fig.add_annotation(
        x=col,
        y=-0.5,
        yshift=6,
        text=f"<b>{label}</b>",
        showarrow=False,
        yanchor="bottom",
        font={"color": color, "size": 12},
    )


def shown_columns(top: dict, keep: list[int], limit: int = MAX_COLUMNS) -> list[int]:
    """Indices into top["ids"]: the `limit` tokens most probable under any head, always with `keep`, in top order."""
    _, rows = head_rows(top)
    score = [max(row[c] for row in rows) for c in range(len(top["ids"]))]
    chosen = {top["ids"].index(t) for t in keep if t in top["ids"]}
    for c in sorted(range(len(score)), key=lambda c: -score[c]):
        if len(chosen) >= limit:
            break
        chosen.add(c)
    return sorted(chosen)


def distribution_heatmap(rec: TokenRecord, emitted: TokenRecord | None = None, read: bool = True) -> go.Figure:
    """Probability of the top tokens under each of the K paths, the centroid, the target and the draft.

    rec: the draft record holding the evidence; emitted: the correction that replaced it, if any
    (its column is marked too); read: whether the run's rule read the paths (a relative's evidence run records them
    for the inspector, but decides without them, and the title says so). Columns are record.top's tokens, at most
    MAX_COLUMNS of them (the most probable under any head). layout.meta holds the token ids shown and the marked
    column indices.
    """
    if not rec.top:
        return message_figure(no_paths_message(rec), "Top-N probabilities per head")
    keep = [rec.token_id] + ([emitted.token_id] if emitted is not None else [])
    cols = shown_columns(rec.top, keep)
    names, all_rows = head_rows(rec.top)
    rows = [[row[c] for c in cols] for row in all_rows]
    ids = [rec.top["ids"][c] for c in cols]
    labels = [show_token(rec.top["texts"][c], 10) for c in cols]
    text = [[f"{v:.2f}" if v >= 0.01 else "" for v in row] for row in rows]
    hover = [
        [f"{name}<br>{labels[c]} (id {ids[c]})<br>p = {v:.4f}" for c, v in enumerate(row)]
        for name, row in zip(names, rows)
    ]
    fig = go.Figure(
        go.Heatmap(
            z=rows,
            x=list(range(len(cols))),
            y=names,
            text=text,
            texttemplate="%{text}",
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            colorscale=PROB_SCALE,
            zmin=0,
            zmax=1,
            xgap=1,
            ygap=1,
            colorbar={"title": {"text": "prob."}, "thickness": 12},
            textfont={"size": 11},
        )
    )
    draft_col = ids.index(rec.token_id) if rec.token_id in ids else None
    meta = {"ids": ids, "draft_column": draft_col, "emitted_column": None}
    if meta["draft_column"] is not None:
        _mark_column(fig, meta["draft_column"], len(names), "draft", METHOD_COLORS["DropMatch"])
    if emitted is not None and emitted.token_id in ids:
        meta["emitted_column"] = ids.index(emitted.token_id)
        _mark_column(fig, meta["emitted_column"], len(names), emitted.kind, "#c2410c")
    # vertical labels: they never overlap, however narrow the screen (the panel scrolls sideways on a phone)
    fig.update_xaxes(tickvals=list(range(len(cols))), ticktext=labels, tickangle=-90, side="bottom")
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(meta=meta)
    title = f"Top tokens under each head · draft {show_token(rec.text)!r} · {len(cols)} of {len(rec.top['ids'])} shown"
    if not read:
        title += "<br><sup>the dropout paths are DropMatch's evidence: this run's rule did not read them</sup>"
    return style(fig, title, 150 + 26 * len(names), top=56 if read else 72)


def js_figure(rec: TokenRecord) -> go.Figure:
    """JS(p_i || centroid) per path as bars, the threshold max_i as a line, JS(q || centroid) as a marker."""
    if rec.js_paths is None or rec.js_draft is None:
        return message_figure(no_paths_message(rec), "JS test (nats)")
    K = len(rec.js_paths)
    threshold = rec.threshold if rec.threshold is not None else max(rec.js_paths)
    inside = rec.js_draft <= threshold
    names = [f"p{i + 1}" for i in range(K)]  # short labels: they fit side by side on a phone
    fig = go.Figure(
        go.Bar(
            x=names,
            y=rec.js_paths,
            name="JS(p_i ‖ centroid), path i",
            marker_color=REASON_COLORS["js"],
            hovertemplate="path %{x}: %{y:.4f} nats<extra></extra>",
        )
    )
    color = ACCEPT_COLOR if inside else REJECT_COLOR
    fig.add_trace(
        go.Scatter(
            x=["q"],
            y=[rec.js_draft],
            mode="markers+text",
            name="JS(q ‖ centroid), the draft",
            marker={"symbol": "diamond", "size": 18, "color": color, "line": {"width": 1, "color": "#111827"}},
            text=["accept" if inside else "reject"],
            textposition="top center",
            textfont={"color": color},
            hovertemplate="JS(q ‖ centroid) = %{y:.4f} nats<extra></extra>",
        )
    )
    fig.add_hline(
        y=threshold,
        line={"dash": "dash", "color": "#374151", "width": 2},
        annotation_text=f"threshold max_i = {threshold:.3f}",
        annotation_position="top left",
    )
    top = max([*rec.js_paths, rec.js_draft, threshold]) * 1.3 or 0.01
    fig.update_yaxes(title_text="JS divergence (nats, ln)", range=[0, top])
    fig.update_xaxes(tickangle=0)
    fig.update_layout(showlegend=True, legend={"orientation": "h", "y": -0.18, "x": 0})
    verdict = "≤" if inside else ">"
    title = f"JS test: JS(q‖c) = {rec.js_draft:.3f} {verdict} {threshold:.3f} → {'accept' if inside else 'reject'}"
    return style(fig, title, 340)
