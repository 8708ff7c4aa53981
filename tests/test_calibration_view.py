"""The calibration figures, drawn from the recorded calibrations (no model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dropmatch.config import PAPER_UNANIMITY
from dropmatch.lab.files import read_calibration
from viz.calibration import dims_figure, unanimity_curve

CALIBRATION = Path(__file__).parents[1] / "assets" / "calibration"


@pytest.fixture(params=sorted(CALIBRATION.glob("*.json")), ids=lambda p: p.stem)
def cal(request) -> dict:
    return read_calibration(request.param)


def test_unanimity_curve_marks_the_target_and_the_chosen_p_drop(cal):
    fig = unanimity_curve(cal)
    unanimity = next(t for t in fig.data if t.name.startswith("unanimity"))
    measured = [r for r in sorted(cal["curve"], key=lambda r: r["p_drop"]) if r["p_drop"] > 0]
    assert list(unanimity.y) == [r["unanimity"] for r in measured]
    notes = [a.text for a in fig.layout.annotations]
    assert any("the paper's 70B head" in n for n in notes)
    if cal.get("anchors"):  # each anchor's p_drop is marked with its name (the JS-spread ones only in the table)
        for found in cal["anchors"]:
            if not found["anchor"].startswith("JS"):
                assert any(n.startswith(f"{found['anchor']}: {found['p_drop']:.3g}") for n in notes), found
    else:  # a file recorded before the anchors: the chosen p_drop
        assert any(f"p_drop {cal['chosen']:.3g}" in n for n in notes)
    other = unanimity_curve(cal | {"target_unanimity": 0.9})
    assert cal["target_unanimity"] == PAPER_UNANIMITY
    assert not any("70B" in a.text for a in other.layout.annotations)  # another target is not the paper's


def test_dims_figure_says_how_many_positions_it_read(cal):
    fig = dims_figure(cal)
    assert len(fig.data[0].x) == len(cal["dims"]["dim"])
    assert f"the first {cal['dims_positions']} positions" in fig.layout.yaxis.title.text
    moving = sum(f > 0 for f in cal["dims"]["flip_rate"])
    assert f"{moving} of {len(cal['dims']['dim'])} move the argmax" in fig.layout.title.text
    assert "no per-dimension view" in dims_figure({}).layout.annotations[0].text
