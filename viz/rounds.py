"""The accept/reject map of a run: rounds x draft positions (+ the emitted correction or bonus), coloured by reason."""

from __future__ import annotations

import plotly.graph_objects as go

from dropmatch.trace import TokenRecord, Trace
from viz.theme import (
    CELL_MARKS,
    REASON_COLORS,
    REASON_LABELS,
    category_heatmap,
    legend_traces,
    message_figure,
    show_token,
    style,
)

MAP_REASONS = dict(REASON_COLORS)  # every reason, in the theme's order: one discrete scale for every run
TEXT_ROW_LIMIT = 45


def draft_length(trace: Trace) -> int:
    """gamma of the run; 0 for target-only decoding."""
    return 0 if trace.config.get("method") == "target" else int(trace.config.get("gamma", 0))


def column_of(rec: TokenRecord, gamma: int) -> int:
    """Draft positions fill columns 0..gamma-1; the emitted correction / bonus / target token the last."""
    return rec.pos - 1 if rec.kind == "draft" else gamma


def _hover(rec: TokenRecord) -> str:
    parts = [f"round {rec.round + 1}, position {rec.pos}", f"{rec.text!r}", REASON_LABELS.get(rec.reason, rec.reason)]
    if rec.q is not None:
        parts.append(f"q = {rec.q:.3f}")
    if rec.p is not None:
        parts.append(f"p = {rec.p:.3f}")
    return "<br>".join(parts)


def reason_grid(trace: Trace) -> tuple[list[list[str | None]], list[list[str]], list[list[str]], list[int]]:
    """Cells (reason or None), cell text and hover text, rows = rounds, columns = gamma + 1; and the round ids."""
    gamma = draft_length(trace)
    rounds = sorted({r.round for r in trace.rounds} | {r.round for r in trace.records})
    row_of = {t: i for i, t in enumerate(rounds)}
    cells = [[None] * (gamma + 1) for _ in rounds]
    text = [[""] * (gamma + 1) for _ in rounds]
    hover = [[""] * (gamma + 1) for _ in rounds]
    for rec in trace.records:
        i, j = row_of[rec.round], column_of(rec, gamma)
        cells[i][j], text[i][j], hover[i][j] = rec.reason, show_token(rec.text, 8), _hover(rec)
    return cells, text, hover, rounds


def reason_heatmap(trace: Trace | None, title: str) -> go.Figure:
    """One row per verification round; every run shares the same discrete reason colours, and each cell carries its
    reason's mark (CELL_MARKS) beside its token, so the map reads without colour (a long run: the marks alone)."""
    if trace is None or not trace.records:
        return message_figure("No rounds yet.", title)
    cells, text, hover, rounds = reason_grid(trace)
    gamma = draft_length(trace)
    x = [str(j + 1) for j in range(gamma)] + ["+1"]
    y = [f"round {t + 1}" for t in rounds]
    shown = text if len(rounds) <= TEXT_ROW_LIMIT else [[""] * len(row) for row in text]
    fig = go.Figure(category_heatmap(cells, shown, hover, x, y, MAP_REASONS, CELL_MARKS))
    for trace_ in legend_traces(MAP_REASONS, REASON_LABELS, CELL_MARKS):
        fig.add_trace(trace_)
    fig.update_xaxes(side="top", title_text="draft position (+1 = emitted correction or bonus)", showgrid=False)
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_layout(legend={"orientation": "h", "y": -0.02, "yanchor": "top", "x": 0}, plot_bgcolor="white")
    return style(fig, title, min(190 + 24 * len(rounds), 1100), top=96).update_layout(margin={"b": 10})
