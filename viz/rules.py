"""Every rule at one drafted position, and a run's rounds recoloured by any rule: from the recorded trace alone.

A draft record of an evidence-mode run carries what every rule reads: the relatives' statistics (p(d), the
target rank, H(p), JS / KL / TV between p and q, the top-2 logit ratio) and DropMatch's path verdicts at the
run's K and p_drop. A relative's verdict is recomputed here at any knob by the same registry function the
decoder ran (`dropmatch.criteria.RULES`); DropMatch's criteria can only be shown at the run's p_drop (their
paths would have to be drawn again). Nothing is re-decoded: after the first position where a rule decides
otherwise than the run did, the run would have continued differently, so later rounds are hypothetical.
"""

from __future__ import annotations

import html

import plotly.graph_objects as go
import torch

from dropmatch.config import NULL_MEANS, RELAXED_METHODS
from dropmatch.criteria import LOSSLESS, RULES, Rule
from dropmatch.trace import TokenRecord, Trace
from viz.rounds import column_of, draft_length
from viz.theme import ACCEPT_COLOR, REJECT_COLOR, category_heatmap, legend_traces, message_figure, show_token, style

CAVEAT = (
    "Computed from the recorded numbers of this run, nothing re-decoded: once a rule decides a position "
    "differently from the run, the text after it would have been different."
)
# The map's cell categories when recoloured by a rule: its decision, compared with what the run decided.
AGREEMENT = {
    "accepts, as the run did": "#86efac",
    "accepts where the run rejected": "#15803d",
    "rejects where the run accepted": "#b91c1c",
    "rejects, as the run did": "#fca5a5",
    "not recorded": "#e5e7eb",
}
# Each agreement's mark, written in its cells and its legend entry: the map reads without its colours.
AGREEMENT_MARKS = {
    "accepts, as the run did": "✓",
    "accepts where the run rejected": "+",
    "rejects where the run accepted": "−",
    "rejects, as the run did": "✗",
    "not recorded": "?",
}


def numbers(rec: TokenRecord) -> dict[str, torch.Tensor] | None:
    """The relatives' inputs at a draft record as one-element tensors: p(d), q(d), max p, the rank and the lossless
    verdict from the record's own fields, the recorded statistics; None where they were not recorded."""
    if rec.kind != "draft" or not rec.rule_stats or rec.p is None or rec.target_rank is None:
        return None
    own = {"p_d": rec.p, "q_d": rec.q, "p_max": rec.p_argmax, "rank": rec.target_rank, "native": rec.lossless}
    values = {**{k: v for k, v in own.items() if v is not None}, **rec.rule_stats}
    return {k: torch.tensor([NULL_MEANS.get(k, float("nan")) if v is None else v]) for k, v in values.items()}


ENTRIES = {LOSSLESS.name: LOSSLESS, **RULES}  # every rule a map can be recoloured by, the lossless test first


def reading(rec: TokenRecord, rule: str, knob: float | None = None, K: int | None = None) -> tuple[bool | None, dict]:
    """A rule's verdict at a draft record (a relative at `knob`, default its own; the lossless test and DropMatch's
    criteria as recorded; None where the record cannot tell), and every number its explain line and figure read:
    the record's (`shown_numbers`) and, for a rule decided here, its verdict's own."""
    entry, n = ENTRIES[rule], shown_numbers(rec, K)
    if entry.decide is None or entry.needs_paths:  # a draw, or paths that would have to be drawn again
        return {LOSSLESS.name: rec.lossless, **(rec.verdicts or {})}.get(rule), n
    found = numbers(rec)
    if found is None or not set(entry.reads) <= set(found):
        return None, n
    accepted, read = entry.reading(found, knob)
    return accepted, n | read


def decide(rec: TokenRecord, rule: str, knob: float | None = None) -> bool | None:
    """A rule's verdict at a draft record (`reading`), or None where the record cannot tell."""
    return reading(rec, rule, knob)[0]


def run_verdict(trace: Trace, rec: TokenRecord) -> bool | None:
    """What the run decided at a draft record; after a round's first rejection (never reached by the prefix rule),
    what the run's own test said there."""
    if rec.reason != "skipped":
        return bool(rec.accepted)
    cfg = trace.config
    if cfg.get("method") not in RELAXED_METHODS or rec.gated:
        return rec.lossless
    own = decide(rec, cfg["criterion"], cfg.get("knob"))
    return None if own is None else RULES[cfg["criterion"]].join(bool(rec.lossless), own, cfg.get("mode"))


def shown_numbers(rec: TokenRecord, K: int | None) -> dict[str, float]:
    """What an explanation reads of a draft record: its target rank, the relatives' statistics where recorded, the
    summary of the paths where recorded, and K."""
    out = {"target_rank": rec.target_rank, "K": K}
    out |= {k: float(v[0]) for k, v in (numbers(rec) or {}).items()}
    if rec.js_draft is not None:
        out |= {"js_draft": rec.js_draft, "threshold": rec.threshold}
    if rec.votes is not None:
        votes = dict((tok, n) for tok, n in rec.votes)
        out |= {"votes_d": votes.get(rec.token_id, 0), "votes_top": max(votes.values(), default=0)}
    return out


def statistic(rec: TokenRecord, rule: str, knob: float | None, K: int | None = None) -> str:
    """What the rule read at this position, as one short line (its own explanation, from its verdict's numbers)."""
    entry = ENTRIES[rule]
    knob = entry.setting(knob)
    verdict, found = reading(rec, rule, knob, K)
    if not set(entry.shows) <= set(found) or (verdict is None and entry.decide is not None and not entry.needs_paths):
        return "paths not computed at this position" if entry.needs_paths else "not recorded at this position"
    return entry.explain(found, knob)


def setting(entry: Rule, knob: float | None, K=None, p_drop=None) -> str:
    """A rule's setting as words: DropMatch's is the paths' K and p_drop, a relative's its one knob ("epsilon 0.09",
    its default where `knob` is None), the lossless test none."""
    if entry.needs_paths:
        return f"K {K}, p_drop {p_drop:g}"
    if entry.knob is not None:
        return entry.knob.said(entry.setting(knob))
    return ""


def run_rule(trace: Trace) -> tuple[Rule, float | None]:
    """The rule a run decided by and the knob it ran at (a relative's default where the config names none; None for
    DropMatch's criteria and the lossless test, which take none)."""
    cfg = trace.config
    if cfg.get("method") not in RELAXED_METHODS:
        return LOSSLESS, None
    entry = RULES[cfg["criterion"]]
    return entry, entry.setting(cfg.get("knob"))


def rule_rows(trace: Trace, rec: TokenRecord, knobs: dict[str, float] | None = None) -> list[dict]:
    """One row per rule at a draft record, the lossless test first: name, label, family, knob, verdict (True / False /
    None) and the statistic read."""
    knobs = dict(knobs or {})
    if trace.config.get("method") == "relative":
        knobs.setdefault(trace.config["criterion"], trace.config.get("knob"))
    K, p_drop = trace.config.get("K"), trace.config.get("p_drop")
    return [
        {
            "rule": entry.name,
            "label": entry.label,
            "family": entry.family,
            "knob": setting(entry, knobs.get(entry.name), K, p_drop),
            "verdict": decide(rec, entry.name, knobs.get(entry.name)),
            "statistic": statistic(rec, entry.name, knobs.get(entry.name), K),
        }
        for entry in ENTRIES.values()
    ]


def rules_html(trace: Trace | None, rec: TokenRecord | None, knobs: dict[str, float] | None = None) -> str:
    """The inspector's rule panel: every rule's verdict at the selected draft position, with what it read."""
    if trace is None or rec is None or rec.kind != "draft":
        return (
            "<p class=dm-note>Click a drafted token (or a correction, for the draft it replaced) to see what "
            "every rule would decide there.</p>"
        )
    run = trace.config.get("criterion") if trace.config.get("method") in RELAXED_METHODS else LOSSLESS.name
    body = []
    for row in rule_rows(trace, rec, knobs):
        v = row["verdict"]
        color, word = (ACCEPT_COLOR, "accept") if v else (REJECT_COLOR, "reject")
        chip = (
            "<span class=dm-no-data>—</span>"
            if v is None
            else f"<span class=dm-chip style='background:{color}'>{word}</span>"
        )
        name = html.escape(row["rule"]) + (" <b>(this run)</b>" if row["rule"] == run else "")
        name += f"<br><small>{html.escape(row['label'])}</small>"
        body.append(
            f"<tr><td>{name}</td><td>{html.escape(row['family'])}</td><td>{html.escape(row['knob'])}</td><td>{chip}</td>"
            f"<td>{html.escape(row['statistic'])}</td></tr>"
        )
    head = "<tr><th>rule</th><th>family</th><th>knob</th><th>verdict</th><th>what it read</th></tr>"
    title = (
        f"<p><b>Every rule at draft {html.escape(show_token(rec.text))}</b> "
        f"(round {rec.round + 1}, position {rec.pos})</p>"
    )
    return (
        f"{title}<div class=scroll><table class='dm-table dm-rules'>{head}{''.join(body)}</table></div>"
        f"<p class=dm-note>{html.escape(CAVEAT)}</p>"
    )


def rule_heatmap(trace: Trace | None, rule: str, knob: float | None, title: str) -> go.Figure:
    """The accept / reject map of a run's rounds, recoloured by what `rule` decides at each drafted position,
    compared with the run's own decision there (`run_verdict`; CAVEAT applies)."""
    if trace is None or not trace.records:
        return message_figure("No rounds yet.", title)
    gamma = draft_length(trace)
    rounds = sorted({r.round for r in trace.records})
    row_of = {t: i for i, t in enumerate(rounds)}
    cells = [[None] * gamma for _ in rounds]
    text, hover = [[""] * gamma for _ in rounds], [[""] * gamma for _ in rounds]
    for rec in trace.records:
        if rec.kind != "draft":
            continue
        i, j = row_of[rec.round], column_of(rec, gamma)
        verdict, ran = decide(rec, rule, knob), run_verdict(trace, rec)
        if verdict is None or ran is None:
            cells[i][j] = "not recorded"
        else:
            cells[i][j] = [
                ["rejects, as the run did", "rejects where the run accepted"],
                ["accepts where the run rejected", "accepts, as the run did"],
            ][verdict][ran]
        text[i][j] = show_token(rec.text, 8)
        hover[i][j] = f"round {rec.round + 1}, position {rec.pos}<br>{rec.text!r}<br>{rule}: {cells[i][j]}"
    fig = go.Figure(
        category_heatmap(
            cells,
            text,
            hover,
            [str(j + 1) for j in range(gamma)],
            [f"round {t + 1}" for t in rounds],
            AGREEMENT,
            AGREEMENT_MARKS,
        )
    )
    for trace_ in legend_traces(AGREEMENT, {}, AGREEMENT_MARKS):
        fig.add_trace(trace_)
    fig.update_xaxes(side="top", title_text="draft position", showgrid=False)
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_layout(legend={"orientation": "h", "y": -0.02, "yanchor": "top", "x": 0}, plot_bgcolor="white")
    return style(fig, title, min(210 + 24 * len(rounds), 1100), top=96).update_layout(margin={"b": 10})
