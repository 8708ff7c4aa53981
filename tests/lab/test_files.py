"""The lab's files are read and checked where they enter: a malformed sweep manifest, cell log or calibration
file is one ValueError naming the file and the field, wherever it is opened (sweep, report, app)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dropmatch.lab import files
from dropmatch.lab.report import write_report
from dropmatch.lab.sweep import check_manifest, load_sweep

ASSETS = Path(__file__).parents[2] / "assets"
RECORDED = Path(__file__).parents[1] / "data" / "sweep_small"
GOOD_ENTRY = {"run": {"max_new_tokens": 64, "seed": 0}, "design": {"design": "ofat", "methods": ["lossless"]}}


@pytest.mark.parametrize("folder, suites", [("sweep", 2), ("relatives", 2), ("verdict", 1)])
def test_the_recorded_manifests_and_logs_read_back(folder, suites):
    manifest = files.read_manifest(ASSETS / folder)
    assert set(manifest) == {"mini_spec_bench", "humaneval"} if suites == 2 else set(manifest) == {"humaneval"}
    assert manifest == json.loads((ASSETS / folder / files.MANIFEST).read_text(encoding="utf-8"))
    assert len(files.read_cell_rows(ASSETS / folder)) == len(load_sweep(ASSETS / folder))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", r"sweep\.json: not valid JSON"),
        ("[1, 2]", r"sweep\.json: expected an object, got \[1, 2\]"),
        (json.dumps({"s": {"design": None}}), r"sweep\.json: s\.run: missing"),
        (json.dumps({"s": GOOD_ENTRY | {"run": {"max_new_tokens": "64"}}}), r"s\.run\.max_new_tokens: expected an int"),
        (json.dumps({"s": GOOD_ENTRY | {"run": {"max_new_tokens": 8, "sede": 0}}}), r"s\.run: unknown field 'sede'"),
        (
            json.dumps({"s": GOOD_ENTRY | {"design": {"design": "ofat", "methods": ["greedy"]}}}),
            r"s\.design\.methods\[0\]: must be one of lossless, dropmatch, relative, truncation, got 'greedy'",
        ),
        (json.dumps({"s": GOOD_ENTRY | {"design": {"grid": {}}}}), r"s\.design\.design: missing"),
    ],
)
def test_a_malformed_manifest_is_one_clear_error_wherever_it_is_read(tmp_path, text, message):
    shutil.copy(RECORDED / files.CELLS, tmp_path / files.CELLS)
    (tmp_path / files.MANIFEST).write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        files.read_manifest(tmp_path)
    with pytest.raises(ValueError, match=message):  # a sweep that would add to it
        check_manifest(tmp_path, "s", {"max_new_tokens": 64})
    with pytest.raises(ValueError, match=message):  # the report
        write_report(tmp_path)


def test_a_well_formed_manifest_round_trips_and_a_bad_entry_is_never_written(tmp_path):
    files.write_manifest(tmp_path, {"s": GOOD_ENTRY})
    assert files.read_manifest(tmp_path) == {"s": GOOD_ENTRY}
    with pytest.raises(ValueError, match=r"s\.run\.seed: expected an integer"):
        check_manifest(tmp_path / "other", "s", {"max_new_tokens": 64, "seed": 0.5})
    assert not (tmp_path / "other" / files.MANIFEST).exists()


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("[1]", r"cells\.jsonl, line 2: row: expected an object"),
        (json.dumps({"suite": "s", "prompt_id": "p", "method": "lossless", "gamma": 5}), r"line 2: row\.key: missing"),
        (
            json.dumps({"key": "k", "suite": "s", "prompt_id": "p", "method": "greedy", "gamma": 5}),
            r"line 2: row\.method: must be one of lossless, dropmatch, relative",
        ),
        (
            json.dumps({"key": "k", "suite": "s", "prompt_id": "p", "method": "lossless", "gamma": "5"}),
            r"line 2: row\.gamma: expected an integer",
        ),
    ],
)
def test_a_malformed_cell_row_is_an_error_naming_its_line(tmp_path, row, message):
    first = (RECORDED / files.CELLS).read_text(encoding="utf-8").splitlines()[0]
    (tmp_path / files.CELLS).write_text(f"{first}\n{row}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_sweep(tmp_path)


def test_a_row_cut_short_is_skipped_with_a_warning(tmp_path):
    first = (RECORDED / files.CELLS).read_text(encoding="utf-8").splitlines()[0]
    (tmp_path / files.CELLS).write_text(f"{first}\n{first[:40]}", encoding="utf-8")
    with pytest.warns(UserWarning, match="line 2 is incomplete"):
        assert len(files.read_cell_rows(tmp_path)) == 1


@pytest.mark.parametrize("path", sorted((ASSETS / "calibration").glob("*.json")), ids=lambda p: p.stem)
def test_the_recorded_calibrations_read_back(path):
    cal = files.read_calibration(path)
    assert cal == json.loads(path.read_text(encoding="utf-8"), parse_constant=float)
    assert cal["suite"] == path.stem and cal["curve"]


ANCHOR = {"anchor": "effect", "column": "relax_js+majority", "target": 0.25, "p_drop": 0.1, "reached": True}
ANCHOR |= {"value": 0.26, "meaning": "js+majority accepts this share of the drafts exact match rejects"}


def test_a_well_formed_anchor_reads_back(tmp_path):
    path = tmp_path / "humaneval.json"
    path.write_text(json.dumps(_calibration(anchors=[ANCHOR], target_relax=0.25)), encoding="utf-8")
    assert files.read_calibration(path)["anchors"] == [ANCHOR]


def _calibration(**changes) -> dict:
    cal = json.loads((ASSETS / "calibration" / "humaneval.json").read_text(encoding="utf-8"))
    return cal | changes


@pytest.mark.parametrize(
    ("cal", "message"),
    [
        ({k: v for k, v in _calibration().items() if k != "curve"}, r"calibration\.curve: missing"),
        (_calibration(K="5"), r"calibration\.K: expected an integer"),
        (_calibration(chosen=1.5), r"calibration\.chosen: must lie in \[0, 1\], got 1\.5"),
        (_calibration(curve=[{"unanimity": 0.9}]), r"calibration\.curve\[0\]\.p_drop: missing"),
        (
            _calibration(curve=[{"p_drop": 0.1, "unanimity": 2}]),
            r"calibration\.curve\[0\]\.unanimity: must lie in \[0, 1\]",
        ),
        (
            _calibration(curve=[{"p_drop": 0.1, "unanimity": 1, "relax_js": "x"}]),
            r"calibration\.curve\[0\]\.relax_js: expected a number",
        ),
        (_calibration(anchors=[{"anchor": "effect"}]), r"calibration\.anchors\[0\]\.column: expected str"),
        (
            _calibration(anchors=[ANCHOR | {"p_drop": 2.0}]),
            r"calibration\.anchors\[0\]\.p_drop: must lie in \[0, 1\], got 2\.0",
        ),
        (_calibration(anchors=[ANCHOR | {"reached": "yes"}]), r"calibration\.anchors\[0\]\.reached: expected bool"),
        (_calibration(dims={"dim": [0, 1], "flip_rate": [0.1]}), r"calibration\.dims\.mean_abs_h: missing"),
        (
            _calibration(dims={"dim": [0, 1], "flip_rate": [0.1], "mean_abs_h": [1.0, 2.0]}),
            r"calibration\.dims: its columns differ in length \(dim 2, flip_rate 1, mean_abs_h 2\)",
        ),
    ],
)
def test_a_malformed_calibration_is_one_clear_error(tmp_path, cal, message):
    path = tmp_path / "humaneval.json"
    path.write_text(json.dumps(cal), encoding="utf-8")
    with pytest.raises(ValueError, match=message) as err:
        files.read_calibration(path)
    assert str(err.value).startswith(f"{path}: calibration.")  # the file, then the field


def test_a_calibration_that_is_not_json_names_its_file(tmp_path):
    path = tmp_path / "humaneval.json"
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match=r"humaneval\.json: not a text file"):
        files.read_calibration(path)
    path.write_text('{"suite": ', encoding="utf-8")
    with pytest.raises(ValueError, match=r"humaneval\.json: not valid JSON"):
        files.read_calibration(path)


def test_the_analysis_tab_shows_a_malformed_calibration_as_its_message(tmp_path, monkeypatch):
    import gradio as gr

    from ui import analysis

    (tmp_path / "humaneval.json").write_text(json.dumps(_calibration(K="5")), encoding="utf-8")
    monkeypatch.setattr(analysis, "CALIBRATION", tmp_path)
    with pytest.raises(gr.Error, match=r"humaneval\.json: calibration\.K: expected an integer"):
        analysis.calibration_views("sweep/humaneval")
    unanimity, dims = analysis.calibration_views("sweep/mini_spec_bench")  # none recorded there: hidden
    assert not unanimity.visible and not dims.visible
