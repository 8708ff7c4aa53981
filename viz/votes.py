"""Votes at one draft position: each path's top-1, the majority, the draft token's rank and probability per head."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dropmatch.trace import TokenRecord
from viz.inspector import no_paths_message
from viz.theme import METHOD_COLORS, REASON_COLORS, message_figure, show_token, style


def token_names(rec: TokenRecord) -> dict[int, str]:
    """Readable text of every token id the record knows about (from its top-N union)."""
    names = {rec.token_id: show_token(rec.text, 10)}
    if rec.top:
        names.update({i: show_token(t, 10) for i, t in zip(rec.top["ids"], rec.top["texts"])})
    return names


def _vote_bars(rec: TokenRecord, names: dict[int, str]) -> go.Bar:
    tokens = [tok for tok, _ in rec.votes]
    colors = [METHOD_COLORS["DropMatch"] if t == rec.token_id else "#cbd5e1" for t in tokens]
    labels = [("majority · " if t == rec.majority else "") + ("draft" if t == rec.token_id else "") for t in tokens]
    return go.Bar(
        x=[names.get(t, f"#{t}") for t in tokens],
        y=[n for _, n in rec.votes],
        marker_color=colors,
        text=[s.strip(" ·") for s in labels],
        textposition="outside",
        showlegend=False,
        hovertemplate="%{x}: %{y} votes<extra></extra>",
    )


def _draft_bars(rec: TokenRecord, names: dict[int, str]) -> go.Bar:
    K = len(rec.path_p)
    heads = ["target"] + [f"p{i + 1} · {names.get(t, f'#{t}')}" for i, t in enumerate(rec.path_tokens)]
    probs = [rec.p or 0.0] + list(rec.path_p)
    ranks = [rec.target_rank] + list(rec.path_rank)
    hits = [rec.target_argmax == rec.token_id] + [t == rec.token_id for t in rec.path_tokens]
    colors = ["#64748b"] + [REASON_COLORS["exact"] if h else REASON_COLORS["rejected"] for h in hits[1:]]
    return go.Bar(
        x=heads,
        y=probs,
        marker_color=colors,
        text=[f"rank {r}" for r in ranks],
        textposition="outside",
        showlegend=False,
        customdata=[[r, "yes" if h else "no"] for r, h in zip(ranks, hits)],
        hovertemplate="%{x} (path · its top-1)<br>p(draft) = %{y:.4f}<br>rank %{customdata[0]}, top-1: "
        "%{customdata[1]}<extra></extra>",
        width=[0.6] * (K + 1),
    )


def votes_figure(rec: TokenRecord) -> go.Figure:
    """Top: the paths' top-1 votes (draft token and majority marked). Below: p(draft) and its rank per head, each
    path labelled with its own top-1. Stacked, with vertical labels, so nothing overlaps on a phone."""
    if rec.votes is None or rec.path_p is None or rec.path_tokens is None:
        return message_figure(no_paths_message(rec), "Votes of the K paths")
    names = token_names(rec)
    K = len(rec.path_tokens)
    majority = names.get(rec.majority, f"#{rec.majority}") if rec.majority is not None else "none (tie)"
    fig = make_subplots(
        rows=2,
        cols=1,
        vertical_spacing=0.3,
        subplot_titles=(
            f"top-1 votes of {K} paths · majority: {majority}",
            f"draft {show_token(rec.text)!r}: probability and rank per head",
        ),
    )
    fig.add_trace(_vote_bars(rec, names), row=1, col=1)
    fig.add_trace(_draft_bars(rec, names), row=2, col=1)
    fig.update_yaxes(title_text="votes", range=[0, K + 1], dtick=1, row=1, col=1)
    top = max([rec.p or 0.0, *rec.path_p])
    fig.update_yaxes(title_text="p(draft)", range=[0, max(top * 1.3, 0.05)], row=2, col=1)
    fig.update_xaxes(tickangle=-90)
    fig.update_annotations(font_size=13)
    return style(fig, "", 620)
