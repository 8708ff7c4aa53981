"""The scale audit: it re-decodes a logged cell, watches every verdict against the old scale's paths, and finds where
the two part."""

from __future__ import annotations

import pytest

from dropmatch.lab import scale_audit
from dropmatch.lab.suites import DEFAULT_SUITE, load_suite
from dropmatch.lab.sweep import PairRunner, Setting, cell_row

ITEM = load_suite(DEFAULT_SUITE, limit=1)[0]
SETTING = Setting("dropmatch", 3, 5, 0.3, "js+majority")


def logged(pair) -> dict:
    run = {"max_new_tokens": 16, "seed": 0, "dtype": "float32", "target_id": "t", "draft_id": "d"}
    return cell_row("s", ITEM, SETTING, run, PairRunner(pair, 16, score=False)(ITEM, SETTING))


def test_a_cell_the_scale_does_not_change_reproduces_with_no_parting(noisy_pair):
    """float32: the scale in float32 before or after the head product differs by rounding only."""
    row = logged(noisy_pair)
    assert scale_audit.setting_of(row) == SETTING
    line = scale_audit.audit_cell(noisy_pair, ITEM, row)
    assert line["reproduces"] and line["first_parting"] is None and line["cpu_s"] > 0


def test_a_verdict_the_old_paths_would_change_is_found(noisy_pair, monkeypatch):
    """Where the old paths decide otherwise, the audit names the first round it happens in; the decode itself goes
    on with today's verdicts (the output is still the logged one)."""
    row = logged(noisy_pair)
    monkeypatch.setattr(scale_audit, "old_path_logits", lambda h, head, masks, p: head(h[:, None, :] * 0).float())
    line = scale_audit.audit_cell(noisy_pair, ITEM, row)
    assert line["reproduces"] and line["first_parting"] is not None and line["first_parting"]["round"] >= 0


def test_the_exact_interval_of_a_share_has_its_known_values():
    """Clopper-Pearson at 95%: 0 of 10 reaches 0.3085 (1 - 0.025 ** 0.1), 5 of 10 spans 0.187-0.813, 10 of 10 is
    0 of 10 turned over."""
    assert scale_audit.clopper_pearson(0, 10) == (0.0, pytest.approx(1 - 0.025**0.1, abs=1e-9))
    assert scale_audit.clopper_pearson(5, 10) == (pytest.approx(0.18709, abs=1e-5), pytest.approx(0.81291, abs=1e-5))
    assert scale_audit.clopper_pearson(10, 10) == (pytest.approx(0.025**0.1, abs=1e-9), 1.0)


def test_the_summary_counts_each_table_and_all():
    lines = [
        {"key": "a|k1", "first_parting": None, "reasons_only": False, "reproduces": True},
        {"key": "a|k2", "first_parting": {"round": 1}, "reasons_only": False, "reproduces": False},
        {"key": "b|k3", "first_parting": {"round": 2}, "reasons_only": True, "reproduces": True},
    ]
    rows = {r["table"]: r for r in scale_audit.summary(lines)}
    assert (rows["a"]["audited"], rows["a"]["changed"], rows["a"]["not_reproduced"]) == (2, 1, 1)
    assert (rows["b"]["changed"], rows["b"]["reasons_only"]) == (0, 1)
    assert (rows["all"]["audited"], rows["all"]["changed"]) == (3, 1) and rows["all"]["changed_high"] < 1
