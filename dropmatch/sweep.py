"""Parameter sweeps over a prompt suite: grid parsing, designs, a resumable runner, the tidy table, the CLI.

A sweep runs every (prompt, setting) cell once. Settings come from a design around a centre (the paper's
gamma 5, K 5, p_drop 0.3): `ofat` varies one factor at a time, `grid` takes the full cross product; lossless
runs once per (prompt, gamma) as the baseline. Each finished cell appends one JSON row to `cells.jsonl`, so
an interrupted sweep resumes where it stopped. `load_sweep` turns that log into the tidy table, with
speedup, tau gain and lossiness joined from the lossless row of the same prompt and gamma.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from dropmatch.config import LIMITS, DecodeConfig
from dropmatch.suites import SuiteItem

CELLS, MANIFEST, TABLE = "cells.jsonl", "sweep.json", "table.csv"
FACTORS = ("p_drop", "K", "gamma", "criterion")  # the order OFAT walks them in
CENTRE = {"gamma": 5, "K": 5, "p_drop": 0.3, "criterion": "js+majority"}
METHODS = ("lossless", "dropmatch")
METRICS = ("tau", "acceptance_rate", "relaxed_share", "n_tokens", "target_forwards", "drafted", "accepted_drafts",
           "head_products", "wall_s", "tokens_per_s", "overhead_share")  # fmt: skip
SETTING_COLUMNS = ("method", "gamma", "K", "p_drop", "criterion")
RUN_COLUMNS = ("max_new_tokens", "seed", "dtype", "target_id", "draft_id")
COLUMNS = ("key", "suite", "prompt_id", "category", *SETTING_COLUMNS, *RUN_COLUMNS, *METRICS, "cpu_s",
           "tokens_per_cpu_s", "loadavg", "finish", "score", "score_result", "output_ids", "text")  # fmt: skip
DERIVED = ("tau_lossless", "tau_gain", "speedup", "speedup_cpu", "first_divergence", "equal_share")
Runner = Callable[[SuiteItem, "Setting"], dict]  # one cell: (prompt, setting) -> its metrics row


# ---- grids and designs ------------------------------------------------------------------------
def _criteria() -> tuple[str, ...]:
    from dropmatch.criteria import CRITERIA

    return tuple(CRITERIA)


def _check(factor: str, text: str):
    """One value of a factor, converted and range-checked."""
    if factor in ("criterion", "method"):
        allowed = _criteria() if factor == "criterion" else METHODS
        if text not in allowed:
            raise ValueError(f"{factor} {text!r} is not one of {', '.join(allowed)}")
        return text
    kind = float if factor == "p_drop" else int
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{factor} {text!r} is not {'a number' if kind is float else 'an integer'}") from None
    lo, hi = (0.0, 1.0) if factor == "p_drop" else LIMITS[factor]
    if not (lo <= value < hi if factor == "p_drop" else lo <= value <= hi):
        raise ValueError(f"{factor} {text!r} is outside {f'[{lo}, {hi})' if factor == 'p_drop' else f'[{lo}, {hi}]'}")
    return value


def parse_values(text: str, factor: str) -> list:
    """A comma-separated list of one factor's values ("0,0.1,0.5"), checked, duplicates dropped, order kept."""
    if factor not in (*FACTORS, "method"):
        raise ValueError(f"unknown factor {factor!r}; expected one of {', '.join((*FACTORS, 'method'))}")
    parts = [s.strip() for s in str(text).split(",")]
    if not any(parts) or not all(parts):
        raise ValueError(f"{factor}: expected a comma-separated list of values, got {text!r}")
    return list(dict.fromkeys(_check(factor, s) for s in parts))


def parse_centre(text: str) -> dict:
    """Override centre values: "gamma=8,p_drop=0.2" (the rest stay at the paper's setting)."""
    centre = dict(CENTRE)
    for part in filter(None, (s.strip() for s in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or name.strip() not in FACTORS:
            raise ValueError(f"centre: expected name=value with a name in {', '.join(FACTORS)}, got {part!r}")
        centre[name.strip()] = _check(name.strip(), value.strip())
    return centre


@dataclass(frozen=True)
class Setting:
    """One column of the sweep: lossless needs only gamma; DropMatch adds K, p_drop and the criterion."""

    method: str
    gamma: int
    K: int | None = None
    p_drop: float | None = None
    criterion: str | None = None

    def key(self, suite: str, prompt_id: str) -> str:
        parts = [suite, prompt_id, self.method, f"g{self.gamma}"]
        if self.method == "dropmatch":
            parts += [f"K{self.K}", f"p{self.p_drop:g}", str(self.criterion)]
        return "|".join(parts)

    def config(self, max_new_tokens: int, seed: int = 0) -> DecodeConfig:
        extra = {k: v for k, v in asdict(self).items() if k in FACTORS and v is not None}
        return DecodeConfig(method=self.method, max_new_tokens=max_new_tokens, seed=seed, **extra)


def design_settings(grid: dict, design: str = "ofat", methods=METHODS, centre: dict = CENTRE) -> list[Setting]:
    """Settings of a design: lossless once per gamma first, then the DropMatch points.

    grid maps a factor to its values (a missing factor stays at the centre). `ofat` = the centre plus each
    factor varied alone; `grid` = the full cross product.
    """
    values = {f: list(grid.get(f) or [centre[f]]) for f in FACTORS}
    if design == "grid":
        points = [dict(zip(FACTORS, combo)) for combo in itertools.product(*values.values())]
    elif design == "ofat":
        points = [dict(centre)] + [{**centre, f: v} for f in FACTORS for v in values[f]]
    else:
        raise ValueError(f"design must be 'ofat' or 'grid'; got {design!r}")
    unknown = set(methods) - set(METHODS)
    if unknown or not methods:
        raise ValueError(f"methods must be a non-empty subset of {', '.join(METHODS)}; got {', '.join(methods)}")
    lossless = [Setting("lossless", g) for g in dict.fromkeys(p["gamma"] for p in points)]
    dropmatch = list(dict.fromkeys(Setting("dropmatch", **p) for p in points))
    return (lossless if "lossless" in methods else []) + (dropmatch if "dropmatch" in methods else [])


# ---- the resumable runner -----------------------------------------------------------------------
def read_cells(out_dir: str | Path) -> pd.DataFrame:
    """Rows of the append log; a line cut short by an interruption is skipped with a warning."""
    path = Path(out_dir) / CELLS
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines() if path.exists() else [], 1):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            warnings.warn(f"{path}: line {n} is incomplete (an interrupted write) and is ignored", stacklevel=2)
    return pd.DataFrame(rows).reindex(columns=list(COLUMNS)).drop_duplicates("key", keep="last")


def check_manifest(out_dir: str | Path, suite: str, run: dict, design: dict | None = None) -> None:
    """Record the run-wide settings of each suite in sweep.json; refuse to mix different ones in one directory."""
    path = Path(out_dir) / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    old = manifest.get(suite, {}).get("run")
    if old is not None and old != run:
        diff = ", ".join(f"{k}={old.get(k)!r} here, {run.get(k)!r} asked" for k in run if old.get(k) != run.get(k))
        raise ValueError(f"{out_dir} already holds a {suite} sweep with other settings ({diff}); use another --out")
    manifest[suite] = {"run": run, "design": design or manifest.get(suite, {}).get("design")}
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def pending(out_dir, suite: str, items: list[SuiteItem], settings: list[Setting]) -> list[tuple[SuiteItem, Setting]]:
    """Cells not yet in the log, prompt by prompt (a prompt's baseline runs next to its DropMatch cells)."""
    done = set(read_cells(out_dir)["key"])
    return [(item, s) for item in items for s in settings if s.key(suite, item.id) not in done]


def iter_sweep(items, settings, out_dir, suite: str, run: dict, runner: Runner) -> Iterator[tuple[int, int, dict]]:
    """Run every pending cell with `runner(item, setting) -> metrics row`, appending each row as it finishes.

    Yields (finished cells, all cells, the row just written) after each cell, so a caller can show progress.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo, total = pending(out, suite, items, settings), len(items) * len(settings)
    log = out / CELLS
    if log.exists() and log.stat().st_size and not log.read_bytes().endswith(b"\n"):
        with log.open("a", encoding="utf-8") as fh:  # close a line cut short, so the next row stands alone
            fh.write("\n")
    with log.open("a", encoding="utf-8") as fh:
        for done, (item, setting) in enumerate(todo, total - len(todo) + 1):
            row = {"key": setting.key(suite, item.id), "suite": suite, "prompt_id": item.id, "category": item.category}
            row |= asdict(setting) | run | runner(item, setting)
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            fh.flush()
            yield done, total, row


def run_sweep(items, settings, out_dir, suite: str, run: dict, runner: Runner) -> pd.DataFrame:
    """Run every pending cell (see `iter_sweep`) under a progress bar; return the tidy table."""
    total = len(items) * len(settings)
    with tqdm(total=total, initial=total - len(pending(out_dir, suite, items, settings)), desc=suite,
              unit="cell") as bar:  # fmt: skip
        for _, _, row in iter_sweep(items, settings, out_dir, suite, run, runner):
            bar.set_postfix_str(row["key"], refresh=False)
            bar.update()
    return load_sweep(out_dir)


def make_runner(pair, max_new_tokens: int, seed: int = 0, timeout: float = 10.0) -> Runner:
    """The real cell runner: decode (stopping early at HumanEval's stop sequences), measure, score."""
    from dropmatch.decode import stream
    from dropmatch.metrics import compute
    from dropmatch.suites import score_completion, truncate_completion

    def done(trace, item: SuiteItem) -> bool:
        """A HumanEval function is complete once a stop sequence (a new top-level statement) appears."""
        if item.problem is None:
            return False
        text = pair.tokenizer.decode(trace.token_ids, skip_special_tokens=True)
        return truncate_completion(text) != text

    def run(item: SuiteItem, setting: Setting) -> dict:
        trace, cpu = None, time.process_time()
        for trace in stream(pair, item.prompt, setting.config(max_new_tokens, seed), chat=item.chat):
            if trace.finish is None and done(trace, item):
                break
        cpu = time.process_time() - cpu  # CPU seconds of this process: robust to other jobs on a shared CPU
        m, text = compute(trace), pair.tokenizer.decode(trace.token_ids, skip_special_tokens=True)
        row = {k: m[k] for k in METRICS} | {"cpu_s": cpu, "tokens_per_cpu_s": m["n_tokens"] / cpu if cpu > 0 else None}
        row["loadavg"] = os.getloadavg()[0]  # 1-minute system load: how contended the timings were
        row |= {"finish": trace.finish or "stop", "score": None, "score_result": None}
        if item.problem is not None:
            result = score_completion(item.problem, truncate_completion(text), timeout)
            row |= {"score": float(result["passed"]), "score_result": result["result"]}
        return row | {"output_ids": " ".join(map(str, trace.token_ids)), "text": text}

    return run


# ---- the tidy table -------------------------------------------------------------------------------
def divergence(ids: str, baseline: str) -> tuple[float, float]:
    """First differing position and share of equal tokens (as metrics.compare), from space-joined ids."""
    if not isinstance(ids, str) or not isinstance(baseline, str):
        return float("nan"), float("nan")
    a, b = ids.split(), baseline.split()
    n = min(len(a), len(b))
    first = next((i for i in range(n) if a[i] != b[i]), n if len(a) != len(b) else None)
    return (float("nan") if first is None else float(first)), (sum(x == y for x, y in zip(a, b)) / n if n else 1.0)


def add_comparisons(cells: pd.DataFrame) -> pd.DataFrame:
    """Join each row with the lossless row of the same suite, prompt and gamma: tau gain, speedup, lossiness."""
    on = ["suite", "prompt_id", "gamma"]
    base = cells.loc[cells["method"] == "lossless", [*on, "tau", "tokens_per_s", "tokens_per_cpu_s", "output_ids"]]
    df = cells.merge(base, on=on, how="left", suffixes=("", "_lossless"))
    df["tau_gain"] = df["tau"] / df["tau_lossless"] - 1
    df["speedup"] = df["tokens_per_s"] / df["tokens_per_s_lossless"]
    df["speedup_cpu"] = df["tokens_per_cpu_s"] / df["tokens_per_cpu_s_lossless"]
    pairs = [divergence(a, b) for a, b in zip(df["output_ids"], df["output_ids_lossless"])]
    df["first_divergence"], df["equal_share"] = [p[0] for p in pairs], [p[1] for p in pairs]
    return df[[*COLUMNS, *DERIVED]]


def load_sweep(out_dir: str | Path) -> pd.DataFrame:
    """A recorded sweep directory as the tidy table: one row per prompt x setting (COLUMNS + DERIVED)."""
    if not (Path(out_dir) / CELLS).exists():
        raise ValueError(f"{out_dir} holds no sweep (no {CELLS})")
    return add_comparisons(read_cells(out_dir))


# ---- the command line -----------------------------------------------------------------------------
def _arg(parse: Callable[[str], object]):
    """An argparse `type` from a parser that raises ValueError: bad input -> one-line error, exit code 2."""

    def wrapped(text: str):
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return wrapped


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def add_parsers(subparsers) -> None:
    """Register the `sweep` and `report` subcommands; each sets `func` to a handler returning an exit code."""
    from dropmatch.models import DEFAULT_DRAFT, DEFAULT_TARGET, DTYPES

    p = subparsers.add_parser("sweep", help="run a resumable parameter sweep over a prompt suite",
                              description=__doc__.splitlines()[0])  # fmt: skip
    p.add_argument("--suite", required=True, help="a JSONL suite file (id, category, prompt[, chat]) or 'humaneval'")
    p.add_argument(
        "--p-drop",
        type=_arg(lambda t: parse_values(t, "p_drop")),
        help="dropout rates, e.g. 0,0.1,0.3 (default: the centre)",
    )
    p.add_argument("--k", dest="K", type=_arg(lambda t: parse_values(t, "K")), help="dropout path counts, e.g. 1,3,5,8")
    p.add_argument("--gamma", type=_arg(lambda t: parse_values(t, "gamma")), help="draft lengths, e.g. 3,5,8")
    p.add_argument(
        "--criterion",
        type=_arg(lambda t: parse_values(t, "criterion")),
        help="acceptance criteria, e.g. js+majority,naive",
    )
    p.add_argument(
        "--methods",
        type=_arg(lambda t: parse_values(t, "method")),
        default=list(METHODS),
        help="lossless,dropmatch (default)",
    )
    p.add_argument("--design", choices=("ofat", "grid"), default="ofat",
                   help="ofat: one factor at a time around the centre (default); grid: full cross product")  # fmt: skip
    p.add_argument(
        "--centre", type=_arg(parse_centre), default=dict(CENTRE), help="e.g. gamma=5,K=5,p_drop=0.3 (the default)"
    )
    p.add_argument("--limit", type=_positive, help="only the first N prompts / problems")
    p.add_argument("--max-new-tokens", type=_positive, default=64)
    p.add_argument("--dtype", choices=tuple(DTYPES), default="bfloat16")
    p.add_argument("--target", default=DEFAULT_TARGET)
    p.add_argument("--draft", default=DEFAULT_DRAFT)
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per HumanEval test run")
    p.add_argument("--threads", type=_positive, default=2, help="torch CPU threads (at most the usable CPUs)")
    p.add_argument("--out", required=True, help="sweep directory (created; reruns resume it)")
    p.set_defaults(func=cmd_sweep)
    r = subparsers.add_parser("report", help="turn a sweep directory into one self-contained HTML report")
    r.add_argument("--from", dest="source", required=True, help="a sweep directory")
    r.add_argument("--out", default=None, help="the HTML file (default: DIR/report.html)")
    r.set_defaults(func=cmd_report)


def _environment(args) -> dict:
    """Where the timings come from: library versions, device, threads, niceness, CPU count."""
    import platform

    import torch
    import transformers

    usable = sorted(os.sched_getaffinity(0))
    return {"torch": torch.__version__, "transformers": transformers.__version__, "python": platform.python_version(),
            "device": args.device or ("cuda" if torch.cuda.is_available() else "cpu"),
            "threads": torch.get_num_threads(), "cpus": usable, "nice": os.nice(0)}  # fmt: skip


def cmd_sweep(args) -> int:
    """Validate everything, load the pair only if cells are pending, run them, write table and figures."""
    import torch

    from dropmatch.suites import load_suite, suite_name

    torch.set_num_threads(min(args.threads, len(os.sched_getaffinity(0))))  # never more threads than usable CPUs
    items, suite = load_suite(args.suite, args.limit), suite_name(args.suite)
    grid = {"p_drop": args.p_drop, "K": args.K, "gamma": args.gamma, "criterion": args.criterion}
    settings = design_settings(grid, args.design, args.methods, args.centre)
    for s in settings:
        s.config(args.max_new_tokens, args.seed)  # every DecodeConfig error now, not an hour in
    run = {"max_new_tokens": args.max_new_tokens, "seed": args.seed, "dtype": args.dtype,
           "target_id": args.target, "draft_id": args.draft}  # fmt: skip
    design = {"design": args.design, "centre": args.centre, "grid": grid, "methods": args.methods,
              "environment": _environment(args)}  # fmt: skip
    check_manifest(args.out, suite, run, design)
    todo = pending(args.out, suite, items, settings)
    print(f"{suite}: {len(items)} prompts x {len(settings)} settings, {len(todo)} cells to run -> {args.out}")
    if todo:
        from dropmatch.models import load_pair

        pair = load_pair(args.target, args.draft, args.dtype, args.device)
        make_runner(pair, 8)(items[0], Setting("lossless", 3))  # warm-up, not recorded
        run_sweep(
            items, settings, args.out, suite, run, make_runner(pair, args.max_new_tokens, args.seed, args.timeout)
        )
    from dropmatch.report import summary, write_outputs

    df = write_outputs(args.out)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(summary(df[df["suite"] == suite]).drop(columns=["suite"]).round(3).to_string(index=False))
    return 0


def cmd_report(args) -> int:
    from dropmatch.report import write_report

    path = write_report(args.source, args.out)
    print(f"report written to {path}")
    return 0
