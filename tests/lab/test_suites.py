"""Prompt suites and the HumanEval scorer: loading, validation, stop sequences, isolated scoring with a timeout."""

from __future__ import annotations

import json
import time

import pytest

from dropmatch.lab.suites import (
    DEFAULT_SUITE,
    HUMANEVAL,
    load_suite,
    score_completion,
    suite_name,
    truncate_completion,
)

CATEGORIES = {"writing", "code", "math", "extraction", "translation", "summarization", "qa", "korean"}


def test_mini_spec_bench_covers_every_category():
    items = load_suite(DEFAULT_SUITE)
    assert {i.category for i in items} == CATEGORIES
    assert len({i.id for i in items}) == len(items) and 16 <= len(items) <= 30
    assert all(2 <= sum(i.category == c for i in items) <= 3 for c in CATEGORIES)
    assert any(i.chat for i in items) and any(not i.chat for i in items)
    assert all(i.problem is None for i in items)
    assert suite_name(DEFAULT_SUITE) == "mini_spec_bench"


def test_limit_takes_the_first_items():
    assert [i.id for i in load_suite(DEFAULT_SUITE, limit=3)] == [i.id for i in load_suite(DEFAULT_SUITE)[:3]]


@pytest.mark.parametrize(
    "lines, message",
    [
        (['{"id": "a", "category": "x"}'], "missing prompt"),
        (["not json"], "not valid JSON"),
        (['{"id": "a", "category": "x", "prompt": "p"}'] * 2, "duplicate id"),
        ([], "holds no prompts"),
    ],
)
def test_bad_suite_files_raise(tmp_path, lines, message):
    path = tmp_path / "suite.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_suite(path)


def test_missing_file_and_bad_limit_raise(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        load_suite(tmp_path / "nope.jsonl")
    with pytest.raises(ValueError, match="positive"):
        load_suite(DEFAULT_SUITE, limit=0)


def test_humaneval_is_a_plain_completion_suite():
    items = load_suite(HUMANEVAL)
    assert len(items) == 164 and items[0].id == "HumanEval/0"
    assert not any(i.chat for i in items)
    assert {"prompt", "test", "entry_point", "canonical_solution"} <= set(items[0].problem)
    assert len(load_suite(HUMANEVAL, limit=5)) == 5


@pytest.mark.parametrize(
    "text, expected",
    [
        ("    return 1\n", "    return 1\n"),
        ("    return 1\n\ndef other():\n    pass", "    return 1\n"),
        ("    return 1\nclass A:\n", "    return 1"),
        ("    return 1\nif __name__ == '__main__':\n", "    return 1"),
        ("    return 1\nprint(f(2))", "    return 1"),
        ("    return 1\n# test\n", "    return 1"),
        ("    # inner comment\n    return 1\n", "    # inner comment\n    return 1\n"),
    ],
)
def test_truncate_at_stop_sequences(text, expected):
    assert truncate_completion(text) == expected


@pytest.fixture(scope="module")
def problem0():
    return load_suite(HUMANEVAL, limit=1)[0].problem


def test_canonical_solution_passes(problem0):
    assert score_completion(problem0, problem0["canonical_solution"]) == {"passed": True, "result": "passed"}


def test_wrong_completion_fails_with_the_reason(problem0):
    result = score_completion(problem0, "    return False\n")
    assert result["passed"] is False and result["result"].startswith("failed: AssertionError")


def test_syntax_error_fails(problem0):
    assert score_completion(problem0, "    return (\n")["passed"] is False


def test_endless_completion_is_killed_by_the_timeout(problem0):
    start = time.perf_counter()
    result = score_completion(problem0, "    while True:\n        pass\n", timeout=1.0)
    assert result == {"passed": False, "result": "timed out"}
    assert time.perf_counter() - start < 5.0


def test_processes_left_behind_are_killed(problem0, tmp_path):
    marker = tmp_path / "still-running"
    child = f"import time; time.sleep(2); open({str(marker)!r}, 'w')"
    quiet = "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL"  # detached from the scorer's pipes
    spawn = f"    import subprocess, sys\n    subprocess.Popen([sys.executable, '-c', {child!r}], {quiet})\n"
    spawn += problem0["canonical_solution"]
    assert score_completion(problem0, spawn)["passed"]
    time.sleep(3)
    assert not marker.exists()


def test_scoring_runs_in_a_fresh_isolated_directory(problem0, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    probe = (
        "    import os, sys\n"
        f"    assert os.getcwd() != {str(tmp_path)!r} and {str(tmp_path)!r} not in sys.path\n"
        "    open('leftover.txt', 'w').write('x')\n" + problem0["canonical_solution"]
    )
    assert score_completion(problem0, probe)["passed"]
    assert not (tmp_path / "leftover.txt").exists()
    assert json.dumps(score_completion(problem0, problem0["canonical_solution"]))  # plain, JSON-ready
