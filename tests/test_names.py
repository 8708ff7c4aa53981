"""The names every layer shares (methods, setting columns) are declared once, in dropmatch.config, and every
acceptance reason once, by the rule that gives it (dropmatch.criteria collects them); the tables each layer keeps
beside them (colours, labels, marks) cover exactly those names."""

from __future__ import annotations

from dropmatch.config import SETTING_COLUMNS, SWEEP_METHODS
from dropmatch.criteria import (
    ACCEPT_REASONS,
    DRAFT_REASONS,
    REASONS,
    RELATIVE_REASONS,
    RULES,
    SEMANTIC_REASONS,
    accept_reason,
)
from dropmatch.lab.sweep import COLUMNS
from dropmatch.trace import KINDS
from viz.sweep import COLORS
from viz.theme import CELL_MARKS, OUTPUT_REASONS, REASON_COLORS, REASON_HELP, REASON_LABELS, RELAXED, RULE_COLORS


def test_every_reason_is_some_rules_and_every_rule_accepts_for_its_own_reasons():
    given = {reason.name for rule in RULES.values() for reason in rule.reasons}
    assert set(ACCEPT_REASONS) == given | {"exact", "tie"}
    for name, rule in RULES.items():  # a reason's object is the registry's, whichever rule lists it
        assert all(REASONS[reason.name] is reason for reason in rule.reasons), name


def test_the_lossless_test_comes_first_then_a_tie_then_a_rules_reasons_in_its_order():
    assert accept_reason(True, {"js": True, "typical": True}) == "exact"
    assert accept_reason(False, {"tie": True, "js": True}) == "tie"
    assert accept_reason(False, {"naive": True, "majority": True, "js": True}) == "js"  # Algorithm 1: JS, else votes
    assert accept_reason(False, {"rejected": True}) is None  # not a reason anything is accepted for


def test_every_reason_and_every_rule_has_a_colour_and_distinct_marks():
    assert set(RULE_COLORS) >= set(RULES)
    marks = [m for m in CELL_MARKS.values()]
    assert len(marks) == len(set(marks)), "two reasons share a mark: the maps would not tell them apart"


def test_the_theme_colours_labels_and_explains_every_reason_a_record_can_carry():
    carried = set(DRAFT_REASONS) | set(KINDS) - {"draft"}  # a target-made token's reason is its kind
    for table in (REASON_COLORS, REASON_LABELS, REASON_HELP):
        assert set(table) == carried
    assert set(OUTPUT_REASONS) == carried - {"rejected", "skipped"}
    assert set(RELAXED) == set(ACCEPT_REASONS) - {"exact", "tie"} == {*SEMANTIC_REASONS, *RELATIVE_REASONS}


def test_the_sweep_table_and_its_figures_use_the_declared_methods_and_setting_columns():
    assert set(COLORS) == set(SWEEP_METHODS)
    assert COLUMNS[COLUMNS.index("method") :][: len(SETTING_COLUMNS)] == SETTING_COLUMNS
