"""Parameter sweeps over a prompt suite: grid parsing, designs, a resumable runner, the tidy table.

A sweep runs every (prompt, setting) cell once. Settings come from a design around a centre (the paper's
gamma 5, K 5, p_drop 0.3): `ofat` varies one factor at a time, `grid` takes the full cross product; lossless
runs once per (prompt, gamma) as the baseline; each relative runs at the centre's gamma at every knob value
asked for (`rules`); a sampled sweep (a run-wide temperature > 0) may repeat every setting once per seed. Each
finished cell appends one JSON row to `cells.jsonl` (its metrics, score, output, each emitted token's reason and
where each relaxed acceptance sits), so an interrupted sweep resumes where it stopped, and a directory can be
recorded in parts. `load_sweep` turns that log into the tidy table, with
speedup, tau gain and lossiness joined from the lossless row of the same prompt and gamma.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from dropmatch.config import (
    FACTORS,
    KNOB_METHODS,
    PAPER_SETTING,
    RELAXED_METHODS,
    SETTING_COLUMNS,
    SWEEP_METHODS,
    DecodeConfig,
    check_setting,
    criterion_method,
)
from dropmatch.criteria import CRITERION_KNOBS, DROPMATCH_CRITERIA, RELATIVE_CRITERIA
from dropmatch.decode import Request, stream_many
from dropmatch.lab.files import BASELINES, CELLS, TABLE, read_cell_rows, read_manifest, recorded, write_manifest
from dropmatch.lab.suites import HUMANEVAL, WORD_PROBLEMS, SuiteItem, ends_early, load_suite, score, truncate_completion
from dropmatch.metrics import compute, divergence, emitted_reasons, relaxed_tokens
from dropmatch.tables.summary import summary
from dropmatch.tables.tradeoff import with_centres

METHODS = SWEEP_METHODS  # a sweep's baseline, the method it varies, the relatives and truncation sampling
KNOBLESS = tuple(name for name in RELATIVE_CRITERIA if name not in CRITERION_KNOBS)  # relatives with no knob
QUALITY = ("capped", "loop", "loop_relaxed", "relaxed_cost_mean", "relaxed_cost_sum", "relaxed_emitted", "mean_logp")
METRICS = (
    "tau",
    "acceptance_rate",
    "relaxed_share",
    "ties",
    "n_tokens",
    "target_forwards",
    "drafted",
    "accepted_drafts",
    "head_products",
    "wall_s",
    "tokens_per_s",
    "overhead_share",
    *QUALITY,
)
RUN_COLUMNS = ("max_new_tokens", "seed", "temperature", "dtype", "target_id", "draft_id")
COLUMNS = (
    "key",
    "suite",
    "prompt_id",
    "category",
    *SETTING_COLUMNS,
    *RUN_COLUMNS,
    *METRICS,
    "cpu_s",
    "tokens_per_cpu_s",
    "loadavg",
    "sitting",
    "finish",
    "score",
    "score_result",
    "output_ids",
    "text",
    "reasons",
    "relaxed_tokens",
)
DERIVED = (
    "tau_lossless",
    "tau_gain",
    "speedup",
    "speedup_cpu",
    "speed_basis",
    "first_divergence",
    "equal_share",
    "length_ratio",
)
# Per-token records: the tidy table carries them (first divergences, equal shares), table.csv leaves them in
# cells.jsonl, where each is kept once (on a long sweep they would be over half the file).
TOKEN_COLUMNS = ("output_ids", "reasons")
Runner = Callable[[SuiteItem, "Setting"], dict]  # one cell: (prompt, setting) -> its metrics row


# ---- grids and designs ------------------------------------------------------------------------
def _check(factor: str, text: str):
    """One value of a factor: a criterion or a method by name, a number as its type and in range (check_setting)."""
    if factor in ("criterion", "method"):
        allowed = DROPMATCH_CRITERIA if factor == "criterion" else METHODS
        if text not in allowed:
            raise ValueError(f"{factor} {text!r} is not one of {', '.join(allowed)}")
        return text
    return check_setting(factor, text)


def parse_values(text: str, factor: str) -> list:
    """A comma-separated list of one factor's values ("0,0.1,0.5"), checked, duplicates dropped, order kept."""
    if factor not in (*FACTORS, "method"):
        raise ValueError(f"unknown factor {factor!r}; expected one of {', '.join((*FACTORS, 'method'))}")
    parts = [s.strip() for s in str(text).split(",")]
    if not any(parts) or not all(parts):
        raise ValueError(f"{factor}: expected a comma-separated list of values, got {text!r}")
    return list(dict.fromkeys(_check(factor, s) for s in parts))


def parse_rule(text: str) -> tuple[str, list[float | None]]:
    """A relative (or a truncation of the target) and its knob values: "typical=0.05,0.09,0.2" -> ("typical",
    [0.05, 0.09, 0.2]), "min-p=0.05,0.1", each checked; a rule without a knob by its name alone: "tie-only" ->
    ("tie-only", [None])."""
    name, sep, values = str(text).partition("=")
    name = name.strip()
    if not sep and name in KNOBLESS:
        return name, [None]
    if not sep or name not in CRITERION_KNOBS:
        raise ValueError(
            f"rule: expected NAME=V1,V2,... with NAME one of {', '.join(CRITERION_KNOBS)}, or one of "
            f"{', '.join(KNOBLESS)} alone; got {text!r}"
        )
    parts = [v.strip() for v in values.split(",")]
    knob = CRITERION_KNOBS[name]
    if not all(parts):
        raise ValueError(f"rule {name}: expected a comma-separated list of {knob.name} values, got {values!r}")
    return name, list(dict.fromkeys(knob.check(v) for v in parts))


def parse_centre(text: str) -> dict:
    """Override centre values: "gamma=8,p_drop=0.2" (the rest stay at the paper's setting)."""
    centre = dict(PAPER_SETTING)
    for part in filter(None, (s.strip() for s in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or name.strip() not in FACTORS:
            raise ValueError(f"centre: expected name=value with a name in {', '.join(FACTORS)}, got {part!r}")
        centre[name.strip()] = _check(name.strip(), value.strip())
    return centre


@dataclass(frozen=True)
class Setting:
    """One column of the sweep: lossless needs only gamma; DropMatch adds K, p_drop and the criterion; a
    relative or a truncation of the target adds its criterion and knob (a truncation drafts nothing: its gamma
    only pairs it with its lossless baseline)."""

    method: str
    gamma: int
    K: int | None = None
    p_drop: float | None = None
    criterion: str | None = None
    knob: float | tuple | None = None
    span_gate: bool = False  # the rule relaxes only where the span gate lets it (config.DecodeConfig.span_gate)
    seed: int | None = None  # one of a sweep's --seeds (a sampled replicate); None: the run's seed
    baseline: bool = False  # a lossless cell decoded again for this sitting's speed ratios (baselines.jsonl)

    def key(self, suite: str, prompt_id: str) -> str:
        parts = [suite, prompt_id, self.method, f"g{self.gamma}"]
        if self.method == "dropmatch":
            parts += [f"K{self.K}", f"p{self.p_drop:g}", str(self.criterion)]
        elif self.method in KNOB_METHODS:
            text = None if self.knob is None else CRITERION_KNOBS[self.criterion].text(self.knob)
            parts += [str(self.criterion) if text is None else f"{self.criterion}={text}"]
        parts += ["gated"] if self.span_gate else []
        return "|".join(parts + ([f"s{self.seed}"] if self.seed is not None else []))

    def config(self, max_new_tokens: int, seed: int = 0, temperature: float = 0.0) -> DecodeConfig:
        extra = {
            k: v
            for k, v in asdict(self).items()
            if k in (*FACTORS, "knob", "span_gate") and v is not None and v is not False
        }
        seed = self.seed if self.seed is not None else seed
        return DecodeConfig(
            method=self.method, max_new_tokens=max_new_tokens, seed=seed, temperature=temperature, **extra
        )


def design_settings(
    grid: dict,
    design: str = "ofat",
    methods=METHODS,
    centre: dict = PAPER_SETTING,
    rules: dict | None = None,
    seeds: list[int] | None = None,
    gates: tuple[bool, ...] = (False,),
) -> list[Setting]:
    """Settings of a design: lossless once per gamma first, then the DropMatch points, then the relatives.

    grid maps a factor to its values (a missing factor stays at the centre). `ofat` = the centre plus each
    factor varied alone; `grid` = the full cross product. rules maps a relative (or a truncation of the target)
    to its knob values; each runs at the centre's gamma. seeds (sampling at T > 0) repeats every setting once per
    seed, the seeds of one setting next to each other. gates: each rule's setting once per span gate (False, True),
    the baselines once.
    """
    settings = _design(grid, design, methods, centre, rules)
    settings = [replace(s, span_gate=g) for s in settings for g in (gates if s.method in RELAXED_METHODS else (False,))]
    return [replace(s, seed=seed) for s in settings for seed in seeds] if seeds else settings


def _design(grid: dict, design: str, methods, centre: dict, rules: dict | None) -> list[Setting]:
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
    relatives = [
        Setting(criterion_method(name), centre["gamma"], criterion=name, knob=knob)
        for name, knobs in (rules or {}).items()
        for knob in knobs
        if criterion_method(name) in methods
    ]
    gammas = [p["gamma"] for p in points] + [centre["gamma"]] * bool(relatives)  # every rule needs its baseline
    lossless = [Setting("lossless", g) for g in dict.fromkeys(gammas)]
    dropmatch = list(dict.fromkeys(Setting("dropmatch", **p) for p in points))
    return (lossless if "lossless" in methods else []) + (dropmatch if "dropmatch" in methods else []) + relatives


# ---- the resumable runner -----------------------------------------------------------------------
def read_cells(out_dir: str | Path) -> pd.DataFrame:
    """Rows of the append log, checked (lab.files); a line cut short by an interruption is skipped with a warning."""
    return pd.DataFrame(read_cell_rows(out_dir)).reindex(columns=list(COLUMNS)).drop_duplicates("key", keep="last")


def check_manifest(out_dir: str | Path, suite: str, run: dict, design: dict | None = None) -> None:
    """Record the run-wide settings of each suite in sweep.json; refuse to mix different ones in one directory."""
    manifest = read_manifest(out_dir)
    old = manifest.get(suite, {}).get("run")
    if old is not None and old != run:
        diff = ", ".join(f"{k}={old.get(k)!r} here, {run.get(k)!r} asked" for k in run if old.get(k) != run.get(k))
        raise ValueError(f"{out_dir} already holds a {suite} sweep with other settings ({diff}); use another --out")
    manifest[suite] = {"run": run, "design": merge_designs(manifest.get(suite, {}).get("design"), design)}
    write_manifest(out_dir, manifest)


def merge_designs(old: dict | None, new: dict | None) -> dict | None:
    """The design of a directory recorded in parts: the newest command's, with the methods, grid values and rule
    knobs of the earlier ones kept beside its own, and every sitting's environment (so sweep.json names everything
    the log holds, and the machine each cell was timed on)."""
    if not old or not new:
        return new or old

    def union(a, b) -> list | None:
        values = [tuple(v) if isinstance(v, list) else v for v in (*(a or []), *(b or []))]  # a pair of knobs
        return list(dict.fromkeys(values)) or None

    merged = dict(new)
    merged["methods"] = union(old.get("methods"), new.get("methods"))
    grid_keys = dict.fromkeys([*(old.get("grid") or {}), *(new.get("grid") or {})])
    merged["grid"] = {k: union((old.get("grid") or {}).get(k), (new.get("grid") or {}).get(k)) for k in grid_keys}
    rule_keys = dict.fromkeys([*(old.get("rules") or {}), *(new.get("rules") or {})])
    merged["rules"] = {k: union((old.get("rules") or {}).get(k), (new.get("rules") or {}).get(k)) for k in rule_keys}
    sittings = (old.get("sittings") or {}) | (new.get("sittings") or {})
    return merged | ({"sittings": sittings} if sittings else {})


def pending(out_dir, suite: str, items: list[SuiteItem], settings: list[Setting]) -> list[tuple[SuiteItem, Setting]]:
    """Cells not yet in the log, prompt by prompt (a prompt's baseline runs next to its DropMatch cells)."""
    done = set(read_cells(out_dir)["key"])
    return [(item, s) for item in items for s in settings if s.key(suite, item.id) not in done]


def open_log(out_dir: str | Path) -> Path:
    """The append log of a sweep directory (created), a line cut short by an interruption closed, so the next
    row stands alone."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = out / CELLS
    if log.exists() and log.stat().st_size and not log.read_bytes().endswith(b"\n"):
        with log.open("a", encoding="utf-8") as fh:
            fh.write("\n")
    return log


def cell_row(suite: str, item: SuiteItem, setting: Setting, run: dict, metrics: dict) -> dict:
    """One log row: the cell's key and identity, its setting, the run-wide settings, the runner's metrics, then the
    sitting that decoded it."""
    row = {"key": setting.key(suite, item.id), "suite": suite, "prompt_id": item.id, "category": item.category}
    fields = {k: v for k, v in asdict(setting).items() if k not in ("seed", "baseline")}
    if isinstance(setting.knob, tuple):  # a pair of knobs is logged as the app writes it, "8/0.5"
        fields["knob"] = CRITERION_KNOBS[setting.criterion].text(setting.knob)
    seed = {"seed": setting.seed} if setting.seed is not None else {}  # a replicate's own seed, not the run's
    return row | fields | run | seed | metrics | {"sitting": sitting()}


# ---- sittings: speed ratios side by side ----------------------------------------------------------
# A sweep directory is recorded in parts, and a part may run on another machine or under another load: a cell's
# tokens per second mean something only beside a lossless cell timed in the same sitting. Every row names its
# sitting; where a sweep adds cells whose lossless baseline another sitting timed, it decodes the lossless cell of every
# BASELINE_EVERY-th such problem again, just before that problem's cells (baselines.jsonl, never the cell log), and
# `add_comparisons` scales those cells' speed ratios by what the same problems cost in the two sittings. Spread
# through the command, the re-timed cells see the load its cells saw (a shared machine's speed drifts within a boot:
# here lossless cost 300 to 800 ms of CPU a forward in one boot), and none of them is only a cold start.
BASELINE_EVERY = 4  # one problem in this many, of those whose lossless another sitting timed, is timed again


@functools.cache
def sitting() -> str:
    """The sitting this process records in: one boot of one machine (when it booted, UTC, and its boot id), so the
    commands of one sitting share its clock; where the system names no boot (not Linux), this process (when it
    began and its id). Every cell a sweep records names it."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
        began = next(
            int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line[:6] == "btime "
        )
    except (OSError, StopIteration, ValueError):
        return f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} process {os.getpid()}"
    return f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(began))} boot {boot}"


def sitting_id(name) -> str:
    """What makes two rows' sittings one: the boot id where the name holds one, else the whole name ("" for rows
    from before sittings were named). A virtual machine restored from a snapshot reports its boot time some seconds
    off (here 30 s), so one boot can carry two names."""
    if not isinstance(name, str):
        return ""
    boot = name.partition(" boot ")[2]
    return f"boot {boot}" if boot else name


def with_baselines(out_dir, suite: str, todo) -> list[tuple[SuiteItem, Setting]]:
    """`todo` with this sitting's lossless cells among them: where a problem's pending cells will be compared with a
    lossless cell another sitting recorded (or one recorded before cells named their sitting), and this sitting has
    not timed it yet, every BASELINE_EVERY-th such problem (the first among them) has that lossless cell, at its
    gamma and seed, decoded again just before its own pending cells."""
    if not todo:
        return []
    cells = read_cells(out_dir)
    base = cells[cells["method"] == "lossless"]
    recorded_in = dict(zip(base["key"], base["sitting"].map(sitting_id)))
    now = sitting_id(sitting())
    timed = read_baselines(out_dir)
    timed = set(timed.loc[timed["sitting"].map(sitting_id) == now, "key"]) if len(timed) else set()
    out, seen, needing = [], set(), 0
    for item, s in todo:
        b = Setting("lossless", s.gamma, seed=s.seed, baseline=True)
        key = b.key(suite, item.id)
        if s.method != "lossless" and key not in seen and key not in timed and recorded_in.get(key, now) != now:
            seen.add(key)
            if needing % BASELINE_EVERY == 0:
                out.append((item, b))
            needing += 1
        out.append((item, s))
    return out


def read_baselines(out_dir: str | Path) -> pd.DataFrame:
    """The lossless cells each sitting decoded again (baselines.jsonl), as cell-log rows; empty where none."""
    rows = read_cell_rows(out_dir, BASELINES)
    return pd.DataFrame(rows).reindex(columns=list(COLUMNS)) if rows else pd.DataFrame(columns=list(COLUMNS))


def append_baseline(out_dir: str | Path, row: dict) -> None:
    """Add one re-decoded lossless cell to baselines.jsonl."""
    with (Path(out_dir) / BASELINES).open("a", encoding="utf-8") as fh:
        append_row(fh, row)


def append_row(fh, row: dict) -> None:
    """Write one row as one JSON line and flush it, so an interruption loses at most the cell in progress."""
    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    fh.flush()


def iter_sweep(items, settings, out_dir, suite: str, run: dict, runner: Runner) -> Iterator[tuple[int, int, dict]]:
    """Run every pending cell with `runner(item, setting) -> metrics row` (or, for a runner with `many`, all of them
    through it, several at a time), appending each row as it finishes; where the pending cells' lossless baseline was
    timed in another sitting, some of this sitting's own lossless cells among them (`with_baselines`).

    Yields (finished cells, all cells, the row just written) after each cell, so a caller can show progress.
    """
    todo, total = pending(out_dir, suite, items, settings), len(items) * len(settings)
    cells = with_baselines(out_dir, suite, todo)
    rows = runner.many(cells) if hasattr(runner, "many") else ((i, runner(*cell)) for i, cell in enumerate(cells))
    done = total - len(todo)
    with open_log(out_dir).open("a", encoding="utf-8") as fh:
        for i, metrics in rows:
            item, setting = cells[i]
            row = cell_row(suite, item, setting, run, metrics)
            if setting.baseline:
                append_baseline(out_dir, row)
                continue
            append_row(fh, row)
            done += 1
            yield done, total, row


def run_sweep(items, settings, out_dir, suite: str, run: dict, runner: Runner) -> pd.DataFrame:
    """Run every pending cell (see `iter_sweep`) under a progress bar; return the tidy table."""
    total = len(items) * len(settings)
    with tqdm(
        total=total, initial=total - len(pending(out_dir, suite, items, settings)), desc=suite, unit="cell"
    ) as bar:
        for _, _, row in iter_sweep(items, settings, out_dir, suite, run, runner):
            bar.set_postfix_str(row["key"], refresh=False)
            bar.update()
    return load_sweep(out_dir)


DEFAULT_BATCH = 8  # a new sweep's cells at a time: 2.5x batch 1's cells per CPU hour on a 2-core Xeon (results.md)


class PairRunner:
    """The real cell runner: decode (stopping early at HumanEval's stop sequences; sampled at `temperature` > 0 with
    the setting's seed, else the run's), measure, score (`score_row`; with `score` False the row's score stays empty,
    for the caller to add where the model is not held). Called on one cell it decodes that cell alone; `many` decodes
    a list of cells `batch` at a time (`decode.stream_many`: continuous batching, each cell with its own rule and
    seed) and yields each row as its cell finishes. A cell's CPU seconds are its share of the rounds it was in (each
    round's CPU time split evenly among its sequences)."""

    def __init__(
        self,
        pair,
        max_new_tokens: int,
        seed: int = 0,
        timeout: float = 10.0,
        temperature: float = 0.0,
        score: bool = True,
        batch: int = 1,
    ):
        if batch < 1:
            raise ValueError(f"the batch size must be at least 1; got {batch}")
        self.pair, self.max_new_tokens, self.seed, self.timeout = pair, max_new_tokens, seed, timeout
        self.temperature, self.score, self.batch = temperature, score, batch

    def __call__(self, item: SuiteItem, setting: Setting) -> dict:
        return next(self._rows([(item, setting)], batch=1))[1]

    def many(self, cells: list[tuple[SuiteItem, Setting]]) -> Iterator[tuple[int, dict]]:
        """(index into `cells`, its metrics row) for every cell, in the order they finish."""
        return self._rows(cells, self.batch)

    def _done(self, item: SuiteItem, trace) -> bool:
        """A HumanEval function is complete once a stop sequence (a new top-level statement) appears."""
        if not ends_early(item):
            return False
        text = self.pair.tokenizer.decode(trace.token_ids, skip_special_tokens=True)
        return truncate_completion(text) != text

    def _rows(self, cells, batch: int) -> Iterator[tuple[int, dict]]:
        requests = [
            Request(item.prompt, s.config(self.max_new_tokens, self.seed, self.temperature), item.chat)
            for item, s in cells
        ]
        until = lambda i, trace: self._done(cells[i][0], trace)  # noqa: E731
        for step in stream_many(self.pair, requests, batch, until):
            if step.left:
                yield step.index, self._row(cells[step.index][0], step.trace, step.cpu_s)

    def _row(self, item: SuiteItem, trace, cpu: float) -> dict:
        m, text = compute(trace), self.pair.tokenizer.decode(trace.token_ids, skip_special_tokens=True)
        row = {k: m[k] for k in METRICS} | {"cpu_s": cpu, "tokens_per_cpu_s": m["n_tokens"] / cpu if cpu > 0 else None}
        row["loadavg"] = os.getloadavg()[0]  # 1-minute system load: how contended the timings were
        row |= {"finish": trace.finish or "stop", "score": None, "score_result": None}
        row |= {"output_ids": " ".join(map(str, trace.token_ids)), "text": text}
        row |= {"reasons": emitted_reasons(trace), "relaxed_tokens": relaxed_tokens(trace)}
        return score_row(item, row, self.timeout) if self.score else row


def score_row(item: SuiteItem, row: dict, timeout: float = 10.0) -> dict:
    """A cell's row with its task score (`suites.score`: a HumanEval problem's tests, a word problem's final
    number); the row as it is for an item without a task."""
    if item.problem is None:
        return row
    result = score(item, row["text"], timeout)
    return row | {"score": float(result["passed"]), "score_result": result["result"]}


# ---- the tidy table -------------------------------------------------------------------------------
def ids_divergence(ids: str, baseline: str) -> tuple[float, float]:
    """metrics.divergence on the log's space-joined ids; NaN where a row has no baseline (or never diverges)."""
    if not isinstance(ids, str) or not isinstance(baseline, str):
        return float("nan"), float("nan")
    first, equal = divergence(ids.split(), baseline.split())
    return (float("nan") if first is None else float(first)), equal


def sitting_factors(cells: pd.DataFrame, baselines: pd.DataFrame | None = None) -> pd.DataFrame:
    """What lossless cost per target forward in one sitting against another, per suite: for every pair of sittings
    that timed lossless on the same problems (in the cell log, or decoded again into baselines.jsonl), the median
    over those problems of the ratio of CPU seconds (cpu_factor) and of wall seconds (wall_factor) per target
    forward. Sittings are told apart by `sitting_id`; rows recorded before rows named their sitting share the
    sitting ""."""
    on = ["suite", "prompt_id", "gamma", "seed"]
    parts = [cells[cells["method"] == "lossless"]] + ([baselines] if baselines is not None and len(baselines) else [])
    obs = pd.concat(parts, ignore_index=True)
    obs = obs.assign(
        seed=obs["seed"].fillna(0),
        sitting=obs["sitting"].map(sitting_id),
        cpu=obs["cpu_s"] / obs["target_forwards"],
        wall=obs["wall_s"] / obs["target_forwards"],
    )[[*on, "sitting", "cpu", "wall"]]
    pairs = obs.merge(obs, on=on, suffixes=("", "_lossless"))
    pairs = pairs[pairs["sitting"] != pairs["sitting_lossless"]]
    pairs = pairs.assign(
        cpu_factor=pairs["cpu"] / pairs["cpu_lossless"], wall_factor=pairs["wall"] / pairs["wall_lossless"]
    )
    return pairs.groupby(["suite", "sitting", "sitting_lossless"])[["cpu_factor", "wall_factor"]].median()


def add_comparisons(
    cells: pd.DataFrame, baselines: pd.DataFrame | None = None, factors: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Join each row with the lossless row of the same suite, prompt, gamma and seed: tau gain, speedup, lossiness
    (a sampled replicate is compared with lossless sampled from the same seed). A speed ratio is side by side where
    the two rows share a sitting; across sittings it is scaled by what lossless cost per target forward in the two
    (`sitting_factors`, from the re-timed lossless cells in `baselines`), and left empty where nothing times them
    against each other; `speed_basis` says which. Rows recorded before rows named their sitting are taken as
    recorded. `factors`: the sittings' factors where the caller computed them on more cells than these (a part of a
    recording read as the whole reads it)."""
    cells = cells.assign(seed=cells["seed"].fillna(0))
    baselines = baselines.assign(seed=baselines["seed"].fillna(0)) if baselines is not None and len(baselines) else None
    on = ["suite", "prompt_id", "gamma", "seed"]
    base = cells.loc[
        cells["method"] == "lossless",
        [*on, "tau", "tokens_per_s", "tokens_per_cpu_s", "output_ids", "n_tokens", "sitting"],
    ]
    df = cells.merge(base, on=on, how="left", suffixes=("", "_lossless"))
    df["tau_gain"] = df["tau"] / df["tau_lossless"] - 1
    df["length_ratio"] = df["n_tokens"] / df["n_tokens_lossless"]
    mine, theirs = df["sitting"].map(sitting_id), df["sitting_lossless"].map(sitting_id)
    keys = pd.DataFrame({"suite": df["suite"], "sitting": mine, "sitting_lossless": theirs})
    factors = sitting_factors(cells, baselines) if factors is None else factors
    factors = keys.merge(factors, how="left", on=list(keys.columns))
    same = (mine == theirs).to_numpy()
    cpu = np.where(same, 1.0, factors["cpu_factor"].to_numpy(float))
    wall = np.where(same, 1.0, factors["wall_factor"].to_numpy(float))
    df["speedup"] = df["tokens_per_s"] / df["tokens_per_s_lossless"] * wall
    df["speedup_cpu"] = df["tokens_per_cpu_s"] / df["tokens_per_cpu_s_lossless"] * cpu
    known = [df["tokens_per_s_lossless"].isna().to_numpy(), same & (mine != "").to_numpy(), same, ~np.isnan(cpu)]
    df["speed_basis"] = np.select(known, [None, "side by side", "as recorded", "adjusted"], "no baseline")
    pairs = [ids_divergence(a, b) for a, b in zip(df["output_ids"], df["output_ids_lossless"])]
    df["first_divergence"], df["equal_share"] = [p[0] for p in pairs], [p[1] for p in pairs]
    return with_centres(df[[*COLUMNS, *DERIVED]])


def load_sweep(out_dir: str | Path, limit: int | None = None) -> pd.DataFrame:
    """A recorded sweep directory as the tidy table: one row per prompt x setting (COLUMNS + DERIVED); with `limit`,
    each suite's first `limit` problems only (`first_problems`), their speed ratios scaled across sittings as the whole
    recording scales them (a part's own re-timed cells would give another factor)."""
    if not (Path(out_dir) / CELLS).exists():
        raise ValueError(f"{out_dir} holds no sweep (no {CELLS})")
    cells, baselines = read_cells(out_dir), read_baselines(out_dir)
    if not limit:
        return add_comparisons(cells, baselines)
    return add_comparisons(first_problems(cells, limit), baselines, sitting_factors(cells, baselines))


def first_problems(cells: pd.DataFrame, limit: int) -> pd.DataFrame:
    """The cells of each suite's first `limit` problems in the suite's own order: a part of a recording that goes on
    growing (the word problems' pilot inside the 2,000 part) read as it was judged. Only the suites this project ships
    or generates have an order a sweep knows; a suite file's does not travel with its cells."""
    keep = set()  # load_suite refuses a limit below 1
    for suite in cells["suite"].unique():
        if suite not in (HUMANEVAL, WORD_PROBLEMS):
            raise ValueError(
                f"a limit reads a suite's own order, which a sweep knows for {HUMANEVAL} and {WORD_PROBLEMS}; "
                f"this one also holds {suite!r}, a suite file whose order its cells do not keep"
            )
        keep |= {(suite, item.id) for item in load_suite(suite, limit)}
    return cells[[pair in keep for pair in zip(cells["suite"], cells["prompt_id"])]]


def load_mask_seeds(dirs: list[str | Path], suite: str) -> pd.DataFrame:
    """Greedy recordings of one suite that differ only in DropMatch's mask seed (each its own directory, recorded with
    its own --seed) as one tidy table, a row per (problem, setting, seed). DropMatch's rows keep their seed; a row of
    a method that draws no mask (lossless, a relative) decodes alike under every seed at T = 0, so it is read from the
    first directory that holds it and stands at every seed, where each seed's DropMatch run is paired with it.
    Refuses directories recorded with other run-wide settings (batch, draft, tokens): those part for other reasons."""
    if len(dirs) < 2:
        raise ValueError("give at least two sweep directories, one per mask seed")
    entries = [recorded(d, suite) for d in dirs]
    for d, entry in zip(dirs, entries):
        if entry is None:
            raise ValueError(f"{d} holds no {suite} sweep")
        if entry.run.temperature:
            raise ValueError(f"{d} was sampled (T {entry.run.temperature:g}); mask seeds are compared greedy")
    runs = [{k: v for k, v in asdict(e.run).items() if k != "seed"} for e in entries]
    for d, run in zip(dirs[1:], runs[1:]):
        if run != runs[0]:
            diff = ", ".join(f"{k} {runs[0][k]!r} in {dirs[0]}, {run[k]!r} here" for k in run if run[k] != runs[0][k])
            raise ValueError(f"{d} was recorded with other settings than {dirs[0]} ({diff})")
    seeds = [e.run.seed for e in entries]
    if len(set(seeds)) < len(seeds):
        raise ValueError(f"each directory must hold its own mask seed; got seeds {seeds}")
    cells = [c[c["suite"] == suite] for c in map(read_cells, dirs)]
    masked = pd.concat([c[c["method"] == "dropmatch"] for c in cells], ignore_index=True)
    free = pd.concat([c[c["method"] != "dropmatch"] for c in cells], ignore_index=True).drop_duplicates("key")
    if not (free["method"] == "lossless").any():
        raise ValueError(f"none of {', '.join(map(str, dirs))} holds lossless {suite} cells to pair the seeds with")
    every = pd.concat([free.assign(seed=s) for s in seeds] + [masked], ignore_index=True)
    every["key"] = every["key"] + "|seed" + every["seed"].astype(int).astype(str)
    timed = pd.concat([read_baselines(d) for d in dirs], ignore_index=True)
    timed = timed[timed["suite"] == suite]
    return add_comparisons(every, pd.concat([timed.assign(seed=s) for s in seeds], ignore_index=True))


def seed_free_reruns(dirs: list[str | Path], suite: str) -> pd.DataFrame:
    """Where a later directory of `load_mask_seeds` reran a method that draws no mask (lossless, a relative): per
    directory and method, the cells it shares with the first directory that holds them, how many decoded the same
    tokens and how many kept their task score (None for a suite without one). At T = 0 only the numerics can part
    them (another batch's padding and order at a near-tie): the floor under the churn between seeds."""
    cells = [c[(c["suite"] == suite) & (c["method"] != "dropmatch")] for c in map(read_cells, dirs)]
    out = []
    for i, (d, mine) in enumerate(zip(dirs, cells)):
        earlier = pd.concat(cells[:i]).drop_duplicates("key").set_index("key") if i else None
        if earlier is None or mine.empty:
            continue
        shared = mine[mine["key"].isin(earlier.index)]
        for method, part in shared.groupby("method"):
            then = earlier.loc[part["key"]]
            same = [a == b for a, b in zip(part["output_ids"], then["output_ids"])]
            scored = part["score"].notna().to_numpy() & then["score"].notna().to_numpy()
            kept = int((part["score"].to_numpy() == then["score"].to_numpy())[scored].sum()) if scored.any() else None
            row = {"directory": str(d), "method": method, "cells": len(part), "same_tokens": int(sum(same))}
            out.append(row | {"same_score": kept})
    return pd.DataFrame(out, columns=["directory", "method", "cells", "same_tokens", "same_score"])


def save_table(df: pd.DataFrame, path: str | Path) -> None:
    """The tidy table as table.csv: every column but the per-token records (TOKEN_COLUMNS), which cells.jsonl keeps."""
    df.drop(columns=[c for c in TOKEN_COLUMNS if c in df.columns]).to_csv(path, index=False)


def write_tables(out_dir: str | Path) -> pd.DataFrame:
    """table.csv (the tidy table, `load_sweep`, by `save_table`) and summary.csv (`summary.summary`) in the sweep
    directory; returns the table. No figures: nothing here needs plotly (`dropmatch.lab.report.write_outputs` adds
    them)."""
    out, df = Path(out_dir), load_sweep(out_dir)
    save_table(df, out / TABLE)
    summary(df).to_csv(out / "summary.csv", index=False)
    return df
