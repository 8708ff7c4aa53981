"""The inspector's second figure: the paths' votes for a DropMatch run; for any other rule, which reads no dropout
paths, the target's p and the draft's q over the target's most likely tokens, the draft token marked."""

from __future__ import annotations

import plotly.graph_objects as go

from dropmatch.criteria import LOSSLESS
from dropmatch.trace import TokenRecord, Trace
from viz.rules import run_rule
from viz.theme import METHOD_COLORS, message_figure, show_token, style
from viz.tokens import evidence_record
from viz.votes import votes_figure

SHOWN = 12  # tokens drawn (the draft token and its correction always among them): they fit a phone's width
TARGET_COLOR, DRAFT_COLOR = "#475569", "#a5b4fc"
EMITTED_COLOR = "#c2410c"  # the correction's mark, as in the heatmap
TITLE = "Target p and draft q, top tokens"
BONUS = "A bonus token: the target's own, with no draft at this position to compare it with."
TARGET_ONLY = "Target-only decoding: no draft to compare with."
UNLINKED = "A correction whose rejected draft is not in this trace."


def _mark(fig: go.Figure, col: int, color: str) -> None:
    fig.add_vrect(x0=col - 0.5, x1=col + 0.5, line={"color": color, "width": 2}, fillcolor="rgba(0,0,0,0)")


def distribution_bars(rec: TokenRecord, emitted: TokenRecord | None = None) -> go.Figure:
    """The target's p and the draft's q over the target's SHOWN most likely tokens of record.top (its union of the
    heads' top-N, in the target's order), the draft token and `emitted` (the correction that replaced it) added
    where beyond them, their columns marked. layout.meta: the token ids shown and the marked columns."""
    top = rec.top
    if not top:
        return message_figure("No top-N distributions were recorded at this position.", TITLE)
    marked = [t for t in (rec.token_id, emitted.token_id if emitted is not None else None) if t in top["ids"]]
    cols = sorted(set(range(min(SHOWN, len(top["ids"])))) | {top["ids"].index(t) for t in marked})
    ids = [top["ids"][c] for c in cols]
    labels = [show_token(top["texts"][c], 10) for c in cols]
    x = list(range(len(cols)))
    fig = go.Figure()
    for name, key, color, what in (
        ("target p", "target", TARGET_COLOR, "the unmasked target's probability"),
        ("draft q", "draft", DRAFT_COLOR, "the draft model's probability"),
    ):
        hover = [
            f"{labels[i]} (id {ids[i]}), #{c + 1} by target p of the recorded tokens<br>{what}: {top[key][c]:.4f}"
            for i, c in enumerate(cols)
        ]
        fig.add_trace(
            go.Bar(
                x=x,
                y=[top[key][c] for c in cols],
                name=name,
                marker_color=color,
                customdata=hover,
                hovertemplate="%{customdata}<extra></extra>",
            )
        )
    meta = {"ids": ids, "draft_column": ids.index(rec.token_id) if rec.token_id in ids else None}
    meta["emitted_column"] = ids.index(emitted.token_id) if emitted is not None and emitted.token_id in ids else None
    ticks = list(labels)  # the marks named in the tick labels: vertical, they never overlap on a phone
    if meta["draft_column"] is not None:
        _mark(fig, meta["draft_column"], METHOD_COLORS["DropMatch"])
        ticks[meta["draft_column"]] += " (draft)"
    if meta["emitted_column"] is not None:
        _mark(fig, meta["emitted_column"], EMITTED_COLOR)
        ticks[meta["emitted_column"]] += f" ({emitted.kind})"
    fig.update_xaxes(tickvals=x, ticktext=ticks, tickangle=-90)
    fig.update_yaxes(
        title_text="probability", range=[0, max(top[k][c] for k in ("target", "draft") for c in cols) * 1.15 or 1.0]
    )
    fig.update_layout(meta=meta, barmode="group", legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0})
    title = f"{TITLE}<br>draft {show_token(rec.text)!r} marked · {len(cols)} of {len(top['ids'])} shown"
    return style(fig, title, 460, top=96)


def rule_inputs_figure(trace: Trace, rec: TokenRecord) -> go.Figure:
    """What the rule that ran read at `rec` (a correction: at the draft it replaced) besides its test: a DropMatch run's
    path votes (exactly `votes_figure`); any other run's target and draft distributions (`distribution_bars`), or,
    where none were recorded, a message that the rule reads no dropout paths."""
    ev = evidence_record(trace, rec)
    if trace.config.get("method") == "dropmatch":
        return votes_figure(ev)
    if rec.kind in ("bonus", "target"):
        return message_figure(BONUS if rec.kind == "bonus" else TARGET_ONLY, TITLE)
    if ev.kind != "draft":
        return message_figure(UNLINKED, TITLE)
    if ev.top:
        return distribution_bars(ev, rec if ev is not rec else None)
    entry, _ = run_rule(trace)
    who = "The lossless test" if entry is LOSSLESS else entry.title
    return message_figure(
        f"{who} reads no dropout paths: only p and q. No top-N distributions were recorded here (a lossless run "
        "records none, a relaxed run only in evidence mode); the test figure shows every number it read.",
        TITLE,
    )
