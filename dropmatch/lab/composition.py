"""A suite's view, composed once from its rows: the figures, the trade-off, the verdict, where relaxation happens,
the power planner and the per-setting summary. The report renders it to one HTML page (`dropmatch.lab.report`), the
Analysis tab to its components (`ui.analysis.content`); neither computes a table of its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from dropmatch.lab.claims import paper_comparison
from dropmatch.lab.relaxations import kinds_table
from dropmatch.tables.power import parse_share
from dropmatch.tables.summary import summary
from dropmatch.tables.tradeoff import matched_table
from dropmatch.tables.verdict import by_category, greedy, judged, scored_against_lossless, shown_rules
from viz.sweep import FIGURES, relevant, tradeoff, tradeoff_measures
from viz.verdict import power_tables, problem_kinds_heatmap, score_curves, verdict_tables

DEFAULT_LOSS = "2/164"  # the field's bar, as the loss a verdict's planner asks about first


@dataclass(frozen=True)
class Composition:
    full: pd.DataFrame  # every row of the suite
    judged: pd.DataFrame  # the whole settings on the problems all of them ran (`verdict.judged`)
    figures: dict[str, go.Figure | None]  # FIGURES name -> figure, None where it has nothing to show
    measures: list[str]  # the trade-off's quality measures (empty without relatives)
    measure: str | None  # the one the trade-off figure is drawn against
    matched: pd.DataFrame  # each relative at DropMatch's tau
    compare: pd.DataFrame  # the paper's claims beside this suite's
    verdict: str  # the verdict's tables, in plain words ("" where nothing is scored beside lossless)
    curves: go.Figure | None  # pass@1 against tau, one curve per rule
    by_kind: go.Figure | None  # each setting against lossless within each problem kind (None: one kind)
    kinds: pd.DataFrame  # where each setting's relaxations fall by token kind (rules as shown)
    power: str  # the power planner at the bar
    summary: pd.DataFrame  # every setting, medians over prompts


def compose(
    df: pd.DataFrame,
    about: Callable[[str], str | None],
    note: str,
    measure: str | None = None,
    anchors: list[dict] | None = None,
) -> Composition:
    """One suite's view from its rows (`about`: a column's definition; `note`: the verdict's note, the bar in {bar};
    `measure`: the trade-off's quality measure, its first where not one of the suite's; `anchors`: a calibration's).
    A suite recorded in parts shows its whole settings in the figures and comparisons; the summary lists every
    setting with its count of prompts."""
    rows = judged(df)
    shown = set(relevant(rows)) if len(rows) else set()
    measures = tradeoff_measures(rows) if "tradeoff" in shown else []
    measure = measure if measure in measures else (measures[0] if measures else None)
    figures = {name: FIGURES[name](rows) if name in shown else None for name in FIGURES}
    figures["tradeoff"] = tradeoff(rows, measure) if measure else None
    scored, table = scored_against_lossless(rows)  # once: the verdict and the planner read it
    by_kind = by_category(rows) if scored else pd.DataFrame()  # once: the verdict's table and its heatmap
    at_t0 = greedy(rows)  # rules read for greedy decoding say so in every table and figure
    verdict, whole = verdict_tables(df, about, note, anchors, table, by_kind) if scored else ("", None)
    return Composition(
        full=df,
        judged=rows,
        figures=figures,
        measures=measures,
        measure=measure,
        matched=matched_table(rows) if measures else pd.DataFrame(),
        compare=paper_comparison(rows) if len(rows) else pd.DataFrame(),
        verdict=verdict,
        curves=score_curves(whole) if verdict else None,
        by_kind=problem_kinds_heatmap(by_kind, at_t0) if verdict and len(by_kind) else None,
        kinds=shown_rules(kinds_table(rows), at_t0) if len(rows) else pd.DataFrame(),
        power=power_tables(table, at_t0, about, parse_share(DEFAULT_LOSS)) if scored else "",
        summary=summary(df) if len(df) else pd.DataFrame(),
    )
