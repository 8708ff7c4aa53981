"""Figures of DropMatch Explorer: pure functions from a trace (or one of its records) to plotly figures and tables."""

from viz.acceptance import acceptance_figure
from viz.distributions import distribution_bars, rule_inputs_figure
from viz.explain import glossary, how_it_works
from viz.inspector import distribution_heatmap, js_figure
from viz.rounds import reason_heatmap
from viz.rule_test import rule_test_figure
from viz.rules import rule_heatmap, rules_html
from viz.steps import STAGES, move, round_figure
from viz.story import round_story
from viz.tables import metrics_frame
from viz.theme import REASON_COLORS, legend_html, message_figure, text_color_map
from viz.tokens import caption, evidence_record, first_divergence, replaced_draft, span_hovers, spans, token_kind
from viz.votes import votes_figure

__all__ = [
    "REASON_COLORS",
    "STAGES",
    "acceptance_figure",
    "caption",
    "distribution_bars",
    "distribution_heatmap",
    "evidence_record",
    "first_divergence",
    "glossary",
    "how_it_works",
    "js_figure",
    "legend_html",
    "message_figure",
    "metrics_frame",
    "move",
    "reason_heatmap",
    "replaced_draft",
    "round_figure",
    "round_story",
    "rule_heatmap",
    "rule_inputs_figure",
    "rule_test_figure",
    "rules_html",
    "span_hovers",
    "spans",
    "text_color_map",
    "token_kind",
    "votes_figure",
]
