"""The names every layer shares (methods, reasons, setting columns) are declared once, in dropmatch.config; the
tables each layer keeps beside them (colours, labels, the registry's reasons) cover exactly those names."""

from __future__ import annotations

from dropmatch import cascades
from dropmatch.config import (
    ACCEPT_REASONS,
    DRAFT_REASONS,
    RELATIVE_REASONS,
    SEMANTIC_REASONS,
    SETTING_COLUMNS,
    SWEEP_METHODS,
)
from dropmatch.criteria import accept_reason
from dropmatch.lab.sweep import COLUMNS
from dropmatch.relatives import RELATIVES
from dropmatch.trace import KINDS
from viz.sweep import COLORS
from viz.theme import OUTPUT_REASONS, REASON_COLORS, REASON_HELP, REASON_LABELS, RELAXED


def test_every_relative_accepts_for_a_declared_reason_and_every_declared_reason_has_a_relative():
    assert {rel.reason for rel in RELATIVES.values()} | {cascades.REASON} == set(RELATIVE_REASONS)


def test_the_lossless_test_comes_first_then_the_paths_then_the_relatives():
    assert accept_reason(True, {"js": True, "typical": True}) == "exact"
    assert accept_reason(False, {"naive": True, "majority": True, "mars": True}) == "majority"
    assert accept_reason(False, {"typical": True, "fuzzy": True}) == "fuzzy"
    assert accept_reason(False, {"rejected": True}) is None  # not a reason anything is accepted for


def test_the_theme_colours_labels_and_explains_every_reason_a_record_can_carry():
    carried = set(DRAFT_REASONS) | set(KINDS) - {"draft"}  # a target-made token's reason is its kind
    for table in (REASON_COLORS, REASON_LABELS, REASON_HELP):
        assert set(table) == carried
    assert set(OUTPUT_REASONS) == carried - {"rejected", "skipped"}
    assert set(RELAXED) == set(ACCEPT_REASONS) - {"exact", "tie"} == {*SEMANTIC_REASONS, *RELATIVE_REASONS}


def test_the_sweep_table_and_its_figures_use_the_declared_methods_and_setting_columns():
    assert set(COLORS) == set(SWEEP_METHODS)
    assert COLUMNS[COLUMNS.index("method") :][: len(SETTING_COLUMNS)] == SETTING_COLUMNS
