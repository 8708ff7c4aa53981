"""Acceptance statistics of several runs side by side: per-position rates r_i and the histogram h[j]."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dropmatch.metrics import DEFINITIONS, compute
from dropmatch.trace import Trace
from viz.theme import METHOD_COLORS, message_figure, style


def acceptance_figure(traces: dict[str, Trace], measured: dict[str, dict] | None = None) -> go.Figure:
    """Grouped bars, one colour per run: r_i = share of rounds reaching draft position i, and h[j].

    measured: the runs' metrics already computed, by name (the others are computed here).
    """
    traces = {name: t for name, t in traces.items() if t is not None and t.rounds}
    if not traces:
        return message_figure("No rounds yet.", "Acceptance per position")
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.12,
        subplot_titles=("per-position rate r_i", "histogram h[j] (rounds that accepted j drafts)"),
    )
    for name, trace in traces.items():
        m = (measured or {}).get(name) or compute(trace)
        color = METHOD_COLORS.get(name, "#0ea5e9")
        rates = m["per_position"]
        fig.add_trace(
            go.Bar(
                x=list(range(1, len(rates) + 1)),
                y=rates,
                name=name,
                marker_color=color,
                legendgroup=name,
                hovertemplate=f"{name}<br>r_%{{x}} = %{{y:.2f}}<extra></extra>",
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Bar(
                x=list(range(len(m["histogram"]))),
                y=m["histogram"],
                name=name,
                marker_color=color,
                legendgroup=name,
                showlegend=False,
                hovertemplate=f"{name}<br>h[%{{x}}] = %{{y}}<extra></extra>",
            ),
            row=1,
            col=2,
        )
    fig.update_xaxes(title_text="draft position i", dtick=1, row=1, col=1)
    fig.update_xaxes(title_text="accepted drafts j", dtick=1, row=1, col=2)
    fig.update_yaxes(range=[0, 1.05], title_text="share of rounds", row=1, col=1)
    fig.update_yaxes(title_text="rounds", row=1, col=2)
    fig.update_layout(barmode="group", legend={"orientation": "h", "y": -0.25, "x": 0})
    fig.update_annotations(font_size=13)
    fig = style(fig, "", 330)
    fig.update_layout(meta={"definitions": {k: DEFINITIONS[k] for k in ("per_position", "histogram")}})
    return fig
