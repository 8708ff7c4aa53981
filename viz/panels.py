"""Test figures' one shape: bars (a statistic, with values to compare it with) against the dashed lines they are
tested against, one panel per part of a test, stacked so that each stays readable on a 390 px wide screen. The panels
are data (`dropmatch.rules.base.Panel`): a rule's figure gives them from its numbers, this module draws them."""

from __future__ import annotations

import math
import textwrap

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dropmatch.evidence import shown
from dropmatch.rules.base import Bar, Panel
from viz.theme import ACCEPT_COLOR, REJECT_COLOR, style

REFERENCE = "#94a3b8"  # a bar drawn for comparison, tested against nothing
LINE = "#374151"


def color(bar: Bar) -> str:
    """A bar's colour: green where its part of the test holds, red where not, grey where it is tested against nothing
    (or its verdict is unknown)."""
    return REFERENCE if bar.holds is None else ACCEPT_COLOR if bar.holds else REJECT_COLOR


def _drawn(value: float, top: float) -> float:
    """A bar's height: its value, an infinite one at the axis top, a missing one at 0 (its text says which)."""
    return 0.0 if math.isnan(value) else math.copysign(top, value) if math.isinf(value) else value


def _draw(fig: go.Figure, panel: Panel, row: int) -> None:
    """One panel into row `row`: its bars (values written on them; a ranking's tested bar only), each line dashed
    across them with its label at the right, the y axis from 0 (or the lowest value) to 1.3 times the highest."""
    values = [b.value for b in panel.bars] + [line.value for line in panel.lines]
    finite = [v for v in values if math.isfinite(v)]
    top, low = max([0.0, *finite]) * 1.3 or 1.0, min([0.0, *finite]) * 1.3
    x = list(range(len(panel.bars)))
    crowded = len(x) > 4  # a ranking: only its tested bar is labelled, the hover gives the rest
    bar = go.Bar(
        x=x,
        y=[_drawn(b.value, top) for b in panel.bars],
        marker_color=[color(b) for b in panel.bars],
        text=["" if crowded and b.holds is None else shown(b.value) for b in panel.bars],
        textposition="outside",
        cliponaxis=False,
        customdata=[b.hover for b in panel.bars],
        hovertemplate="%{customdata}<extra></extra>",
        showlegend=False,
        width=0.5 if len(x) < 4 else None,
        name=panel.axis,
    )
    fig.add_trace(bar, row=row, col=1)
    for line in panel.lines:
        xs = [-0.5, *x, len(x) - 0.5]  # a point under every bar, so the hover finds the line anywhere
        dashed = go.Scatter(
            x=xs,
            y=[line.value] * len(xs),
            mode="lines",
            line={"dash": "dash", "color": LINE, "width": 2},
            customdata=[line.hover] * len(xs),
            hovertemplate="%{customdata}<extra></extra>",
            showlegend=False,
            name=line.label,
        )
        fig.add_trace(dashed, row=row, col=1)
        fig.add_annotation(
            x=len(x) - 0.5,
            y=line.value,
            text=line.label if line.label == shown(line.value) else f"{line.label} {shown(line.value)}",
            bgcolor="rgba(255,255,255,0.75)",
            showarrow=False,
            xanchor="right",
            yanchor="bottom",
            font={"color": LINE, "size": 11},
            row=row,
            col=1,
        )
    labels = [b.label for b in panel.bars]
    angle = -90 if crowded else 0  # a ranking's token labels stand vertical, so they never overlap
    fig.update_xaxes(tickvals=x, ticktext=labels, tickangle=angle, range=[-0.6, len(x) - 0.4], row=row, col=1)
    fig.update_yaxes(title_text=panel.axis, range=[low, top], row=row, col=1)


def panels_figure(panels: tuple[Panel, ...], title: list[str], note: str, meta: dict) -> go.Figure:
    """Panels stacked one above the other (`_draw`), the title's lines above, the note below; layout.meta carries
    `meta`. No fixed width: the figure follows its container, down to a phone's 390 px."""
    fig = make_subplots(rows=len(panels), cols=1, vertical_spacing=0.3 / len(panels))
    for row, panel in enumerate(panels, 1):
        _draw(fig, panel, row)
    lines, ranked = textwrap.wrap(note, 52, break_on_hyphens=False), len(panels[-1].bars) > 4
    fig.add_annotation(  # under the last panel's tick labels, taller when they stand vertical
        text="<br>".join(lines),
        x=0,
        y=0,
        xref="paper",
        yref="paper",
        xanchor="left",
        yanchor="top",
        yshift=-90 if ranked else -36,
        showarrow=False,
        align="left",
        font={"size": 11, "color": "#4b5563"},
    )
    fig.update_layout(meta=meta, bargap=0.3, uniformtext={"minsize": 10, "mode": "show"})
    fig = style(fig, "<br>".join(title), 140 + 200 * len(panels) + 15 * len(lines), top=30 + 20 * len(title))
    return fig.update_layout(margin={"b": (104 if ranked else 50) + 15 * len(lines)})
