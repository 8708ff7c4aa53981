"""The GPU check at its tiny shapes on the CPU, run as the device runs it (a fresh `python -m`): every section
recorded and passed, the equality checks passed with rejections and relaxed accepts to test, every timing a positive
number, and nothing of the app's (plotly, gradio) imported, since the device machine has neither."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from dropmatch.lab import gpucheck

SECTIONS = [name for name, _, _ in gpucheck.SECTIONS]


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpucheck")
    command = [sys.executable, "-m", "dropmatch.lab.gpucheck", "--tiny", "--device", "cpu", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"wrote {out / gpucheck.FILE}" in done.stdout
    return json.loads((out / gpucheck.FILE).read_text(encoding="utf-8"))


def positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_every_section_ran(result):
    sections = result["sections"]
    assert (
        list(sections)
        == SECTIONS
        == [
            *("machine", "equality", "head_bench", "round_split"),
            *("host_syncs", "side_by_side", "lean_draft", "head_share_7b"),
        ]
    )
    assert positive(sections["lean_draft"]["int8_speedup"])
    assert {name: s["status"] for name, s in sections.items()} == dict.fromkeys(SECTIONS, "ok")
    assert all(positive(s["seconds"]) for s in sections.values()) and result["tiny"] is True
    machine = sections["machine"]
    assert machine["torch"] and machine["cpu"] and machine["gpu"] is None and machine["ui_modules_loaded"] == []


def test_the_equality_checks_passed_and_tested_something(result):
    equality = result["sections"]["equality"]
    assert equality["all_passed"] and len(equality["checks"]) == 9
    assert sum("sampled" in c["what"] or "sampling" in c["what"] for c in equality["checks"]) == 4
    for check in equality["checks"]:
        assert check["passed"] and check["first_difference"] is None and check["tokens"] > 0, check
        drafts = "target alone" not in check["what"]
        assert check["lossless_rejections"] > 0 or not drafts, check  # corrections happen: the draft disagrees
    lazy_evidence = equality["checks"][3]
    assert "lazy == evidence" in lazy_evidence["what"] and lazy_evidence["relaxed_accepts"] > 0


def test_the_timings_are_positive_numbers(result):
    sections = result["sections"]
    for section in ("round_split", "side_by_side"):
        runs = sections[section]["runs"]
        assert len(runs) == 4, runs.keys()
        for name, run in runs.items():
            assert positive(run["s_per_token"]) and positive(run["s_per_token_rounds"]), name
            assert positive(run["mean_round_s"]["total"]) and positive(run["mean_round_s"]["target"]), name
            assert run["tokens"] == run["config"]["max_new_tokens"]  # no end tokens: every run reaches its length
            assert (run["mean_round_s"]["paths"] > 0) == (run["config"]["method"] == "dropmatch"), name
    assert all(positive(v) for v in sections["side_by_side"]["both_sides_s_per_token"].values())
    heads = sections["head_bench"]["heads"]
    assert len(heads) == 3 and all(positive(ms) for head in heads.values() for ms in head["ms"].values())
    assert set(heads[gpucheck.PAPER_HEAD]["beside_paper"]) == {"plain", "K=5 naive", "K=5 JS"}
    assert sections["host_syncs"]["note"] == "cuda only"  # on the CPU: null counts
    assert all(count is None for count in sections["host_syncs"]["counts"].values())
    shares = [run["paths_and_criteria_share"] for run in sections["head_share_7b"]["runs"].values()]
    assert shares[0] == 0 and all(0 < share < 1 for share in shares[1:])


def test_first_difference_names_where_two_runs_part():
    assert gpucheck.first_difference([1, 2, 3], [1, 2, 3]) is None
    assert gpucheck.first_difference([1, 2, 3], [1, 5, 3]) == 1
    assert gpucheck.first_difference([1, 2], [1, 2, 3]) == 2


def test_a_budget_too_short_skips_each_section_and_says_so(tmp_path):
    """A section the budget cannot start is recorded as skipped, with the seconds left and needed, and the file is
    still written; --tiny sets no budget of its own, so the test above checks every section however loaded the CPU."""
    result = gpucheck.run(tmp_path, "cpu", tiny=True, budget_s=0.0)
    sections = result["sections"]
    assert list(sections) == SECTIONS and all(s["status"] == "skipped" for s in sections.values())
    assert all(s["reason"].startswith("budget: ") and "needed" in s["reason"] for s in sections.values())
    assert json.loads((tmp_path / gpucheck.FILE).read_text(encoding="utf-8"))["budget_s"] == 0.0
    assert gpucheck.Budget(None).left() == math.inf
