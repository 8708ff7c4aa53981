"""Step-through view of one verification round: draft, K paths, criteria, accepted prefix, correction or bonus.

The rules' rows say in their hover what each rule read at each draft (the registry's explanation,
`viz.rules.statistic`); the decision row names each draft's reason in the registry's word.
"""

from __future__ import annotations

import plotly.graph_objects as go

from dropmatch.config import RELAXED_METHODS
from dropmatch.criteria import LOSSLESS, REASONS
from dropmatch.trace import TokenRecord, Trace
from viz.rules import ENTRIES, statistic
from viz.theme import CELL_MARKS, REASON_COLORS, REASON_LABELS, category_heatmap, message_figure, show_token, style

STAGES = ("draft", "K paths", "criteria", "accepted prefix", "correction / bonus")
STEP_COLORS = {
    "draft": "#e0e7ff",
    "match": "#bbf7d0",
    "other": "#f1f5f9",
    "yes": "#4ade80",
    "no": "#fca5a5",
    **REASON_COLORS,
}
# The marks that make a step's cells read without their colours: a test passed or failed, and each reason's own mark.
STEP_MARKS = {"yes": "✓", "no": "✗", **CELL_MARKS}


def move(trace: Trace, t: int, stage: int, delta: int) -> tuple[int, int]:
    """The (round, stage) `delta` steps away, clamped to the first and last stage of the trace."""
    last = max(len(trace.rounds), 1) - 1
    flat = min(max(t * len(STAGES) + stage + delta, 0), last * len(STAGES) + len(STAGES) - 1)
    return divmod(flat, len(STAGES))


def _round_parts(trace: Trace, t: int) -> tuple[list[TokenRecord], TokenRecord | None]:
    recs = trace.round_records(t)
    return [r for r in recs if r.kind == "draft"], next((r for r in recs if r.kind != "draft"), None)


def _rules(drafts: list[TokenRecord]) -> list[str]:
    names = []
    for rec in drafts:
        for name in rec.verdicts or {}:
            if name not in names:
                names.append(name)
    return names


def _word(reason: str) -> str:
    """A decision in a word: an acceptance reason's (the registry's), else the reason's label (rejected, skipped)."""
    return REASONS[reason].word if reason in REASONS else REASON_LABELS[reason]


def _explained(trace: Trace, name: str, drafts: list[TokenRecord]) -> list[str]:
    """Per draft, what a registry rule read there and how it decided (its explanation); empty for a component."""
    if name not in ENTRIES:
        return [""] * len(drafts)
    knob = trace.config.get("knob") if name == trace.config.get("criterion") else None
    return [statistic(r, name, knob, trace.config.get("K")) for r in drafts]


def _rows(trace: Trace, drafts: list[TokenRecord], extra: TokenRecord | None, stage: int):
    """Row label -> (cells, text) for each stage revealed so far, columns = drafts then the +1 token; and for the
    rules' rows, row label -> what each rule read at each draft (the hover's second line)."""
    n = len(drafts) + 1
    K = int(trace.config.get("K", 0))
    has_paths = any(r.path_tokens for r in drafts)
    rows = {"draft d_j": (["draft"] * len(drafts) + [None], [show_token(r.text, 9) for r in drafts] + [""])}
    for i in range(K if has_paths else 0):
        cells = [
            None if r.path_tokens is None else "match" if r.path_tokens[i] == r.token_id else "other" for r in drafts
        ]
        text = [_path_text(r, i) for r in drafts]
        rows[f"path {i + 1} top-1"] = (cells + [None], text + [""]) if stage >= 1 else ([None] * n, [""] * n)
    chosen, notes = trace.config.get("criterion"), {}
    for name in [LOSSLESS.name, *_rules(drafts)]:
        vals = [r.lossless if name == LOSSLESS.name else (r.verdicts or {}).get(name) for r in drafts]
        cells = [None if v is None else ("yes" if v else "no") for v in vals] + [None]
        text = ["" if v is None else ("✓" if v else "✗") for v in vals] + [""]
        label = "lossless test" if name == LOSSLESS.name else name
        label += " (chosen)" if name == chosen and trace.config.get("method") in RELAXED_METHODS else ""
        rows[label] = (cells, text) if stage >= 2 else ([None] * n, [""] * n)
        if stage >= 2:
            notes[label] = _explained(trace, name, drafts) + [""]
    decision = ([r.reason for r in drafts] + [None], [_word(r.reason) for r in drafts] + [""])
    rows["decision"] = decision if stage >= 3 else ([None] * n, [""] * n)
    emitted = [r.reason if r.emitted else None for r in drafts] + [extra.reason if extra else None]
    texts = [show_token(r.text, 9) if r.emitted else "" for r in drafts] + [show_token(extra.text, 9) if extra else ""]
    rows["emitted"] = (emitted, texts) if stage >= 4 else ([None] * n, [""] * n)
    return rows, notes


def _path_text(rec: TokenRecord, i: int) -> str:
    if rec.path_tokens is None:
        return ""
    tok = rec.path_tokens[i]
    if tok == rec.token_id:
        return show_token(rec.text, 9)
    names = dict(zip(rec.top["ids"], rec.top["texts"])) if rec.top else {}
    return show_token(names.get(tok, f"#{tok}"), 9)


def round_figure(trace: Trace | None, t: int, stage: int = len(STAGES) - 1) -> go.Figure:
    """Rows revealed up to `stage` (later rows stay blank so the layout does not jump)."""
    if trace is None or t >= len(trace.rounds):
        return message_figure("Run a prompt or load a trace to step through its rounds.", "Step through")
    drafts, extra = _round_parts(trace, t)
    rows, notes = _rows(trace, drafts, extra, stage)
    x = [f"{j + 1}" for j in range(len(drafts))] + ["+1"]
    cells = [c for c, _ in rows.values()]
    text = [tx for _, tx in rows.values()]
    hover = [
        [
            f"{label}<br>{tx}" + (f"<br>{note}" if note else "")
            for tx, note in zip(txs, notes.get(label, [""] * len(txs)))
        ]
        for label, (_, txs) in rows.items()
    ]
    fig = go.Figure(category_heatmap(cells, text, hover, x, list(rows), STEP_COLORS, STEP_MARKS))
    fig.update_xaxes(side="top", title_text="draft position (+1 = emitted correction or bonus)", showgrid=False)
    fig.update_yaxes(autorange="reversed", showgrid=False)
    title = f"Round {t + 1} of {len(trace.rounds)} · step {stage + 1}/{len(STAGES)}: {STAGES[stage]}"
    return style(fig, title, 150 + 30 * len(rows), top=96).update_layout(margin={"l": 140}, plot_bgcolor="white")
