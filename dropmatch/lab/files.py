"""The lab's files, each read and checked here, where it enters: a sweep's manifest (sweep.json), the rows of its
cell log (cells.jsonl) and of its re-timed lossless cells (baselines.jsonl), and a calibration result (`python -m
dropmatch calibrate --json`).

The dataclasses below are the schemas: what each file holds, field by field. A malformed file is one ValueError
that names the file and the field (the app shows it as it is, the command line prints it), so nothing past these
readers meets a bad file. The readers return plain dicts, as the report, the figures and the app read them.
"""

from __future__ import annotations

import json
import math
import typing
import warnings
from dataclasses import dataclass
from pathlib import Path

from dropmatch.config import SWEEP_METHODS
from dropmatch.schema import check_fields, check_value

CELLS, MANIFEST, TABLE = "cells.jsonl", "sweep.json", "table.csv"
BASELINES = "baselines.jsonl"  # lossless cells decoded again in a later sitting, for its speed ratios


@dataclass(frozen=True)
class Run:
    """A suite's run-wide settings, shared by every cell (sweep.json: suite -> "run")."""

    max_new_tokens: int
    seed: int = 0
    dtype: str | None = None
    target_id: str | None = None
    draft_id: str | None = None
    draft_quant: str | None = None  # only when the draft is not as loaded
    draft_vocab: int | None = None
    temperature: float | None = None  # only when sampled (T > 0)
    batch: int | None = None  # cells decoded at a time, only when not 1 (a bf16 batch can part from batch 1)
    suite_version: int | None = None  # a generated suite's version (word problems): another version, another suite


@dataclass(frozen=True)
class Design:
    """How a suite's settings were chosen, and where its timings come from (sweep.json: suite -> "design")."""

    design: str
    centre: dict | None = None
    grid: dict[str, list | None] | None = None
    methods: list[str] | None = None
    rules: dict[str, list] | None = None  # a rule's knob values: numbers, [K, delta] pairs, or null (no knob)
    span_gate: str | None = None  # "on" or "both" where the rules ran behind the span gate
    environment: dict | None = None  # the latest sitting's
    sittings: dict[str, dict] | None = None  # every sitting's environment, by the id its cells carry


@dataclass(frozen=True)
class SuiteEntry:
    """One suite of a sweep directory (sweep.json maps each suite's name to one)."""

    run: dict
    design: dict | None = None


@dataclass(frozen=True)
class Cell:
    """What identifies a row of the cell log; its other fields are the runner's metrics (lab.sweep.COLUMNS)."""

    key: str
    suite: str
    prompt_id: str
    method: str
    gamma: int


@dataclass(frozen=True)
class Calibration:
    """A calibration result: the curve per p_drop, the picks (`chosen`: the unanimity anchor's; `anchors`: every
    anchor's, as `calibrate.pick` writes them), and the per-dimension view."""

    suite: str
    K: int
    target_unanimity: float
    chosen: float
    reached: bool
    positions: int
    curve: list[dict]  # one row per p_drop: p_drop, unanimity, js_threshold, relax_<criterion>, ...
    dims: dict[str, list[float]]  # dim, flip_rate, mean_abs_h: one value per hidden dimension
    source: str | None = None
    settings: dict | None = None
    environment: dict | None = None
    dims_positions: int | None = None
    target_relax: float | None = None
    anchors: list[dict] | None = None  # anchor, column, target, p_drop, reached, value, meaning


def read_json(path: str | Path):
    """A JSON file, or a ValueError naming it (missing, not UTF-8 text, not JSON)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text file (not UTF-8)") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None


def _one_of(value, allowed, where: str) -> None:
    if value not in allowed:
        raise ValueError(f"{where}: must be one of {', '.join(allowed)}, got {value!r}")


# ---- the sweep manifest ---------------------------------------------------------------------------
def check_entry(entry, where: str) -> dict:
    """One suite's manifest entry, checked against SuiteEntry, Run and Design."""
    check_fields(entry, SuiteEntry, where)
    check_fields(entry["run"], Run, f"{where}.run")
    design = entry.get("design")
    if design is not None:
        check_fields(design, Design, f"{where}.design")
        for i, method in enumerate(design.get("methods") or []):
            _one_of(method, SWEEP_METHODS, f"{where}.design.methods[{i}]")
    return entry


def read_manifest(out_dir: str | Path) -> dict[str, dict]:
    """A sweep directory's sweep.json, checked: suite -> {"run", "design"} ({} where there is none yet)."""
    path = Path(out_dir) / MANIFEST
    if not path.exists():
        return {}
    manifest = read_json(path)
    check_value(manifest, dict, str(path))
    return {suite: check_entry(entry, f"{path}: {suite}") for suite, entry in manifest.items()}


@dataclass(frozen=True)
class Recorded:
    """One suite's manifest entry as typed objects: what the lab reads (the run's settings, the design and the
    machine that recorded it)."""

    run: Run
    design: Design | None


def recorded(out_dir: str | Path, suite: str) -> Recorded | None:
    """A suite's entry of a sweep directory's sweep.json, checked and typed; None where the directory has none."""
    entry = read_manifest(out_dir).get(suite)
    if entry is None:
        return None
    design = entry.get("design")
    return Recorded(Run(**entry["run"]), Design(**design) if design is not None else None)


def write_manifest(out_dir: str | Path, manifest: dict[str, dict]) -> None:
    """Write sweep.json (each entry checked first: what is written reads back)."""
    path = Path(out_dir) / MANIFEST
    for suite, entry in manifest.items():
        check_entry(entry, f"{path}: {suite}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")


# ---- the cell log -------------------------------------------------------------------------------
def check_cell(row, where: str) -> dict:
    """One row of the cell log: the Cell fields present and of their types, its method a sweep's."""
    check_value(row, dict, where)
    for name, hint in typing.get_type_hints(Cell).items():
        if name not in row:
            raise ValueError(f"{where}.{name}: missing")
        check_value(row[name], hint, f"{where}.{name}")
    _one_of(row["method"], SWEEP_METHODS, f"{where}.method")
    return row


def read_cell_rows(out_dir: str | Path, name: str = CELLS) -> list[dict]:
    """The rows of a sweep's cell log (or of its lossless cells decoded again, `name` BASELINES), each checked; a
    line cut short by an interruption is skipped with a warning (the next run redoes its cell), any other malformed
    line is an error naming it."""
    path = Path(out_dir) / name
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines() if path.exists() else [], 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            warnings.warn(f"{path}: line {n} is incomplete (an interrupted write) and is ignored", stacklevel=3)
            continue
        rows.append(check_cell(row, f"{path}, line {n}: row"))
    return rows


# ---- the calibration result ---------------------------------------------------------------------
CURVE_RANGES = {"p_drop": (0.0, 1.0), "unanimity": (0.0, 1.0)}  # what every curve row holds, and its range
DIMS = ("dim", "flip_rate", "mean_abs_h")  # the per-dimension view's columns, one value per hidden dimension


def _number(value, where: str, lo: float = -math.inf, hi: float = math.inf) -> None:
    """A finite number in [lo, hi]."""
    check_value(value, float, where)
    if not lo <= value <= hi:
        raise ValueError(f"{where}: must lie in [{lo:g}, {hi:g}], got {value!r}")


def _check_curve_row(row: dict, where: str) -> None:
    """p_drop and unanimity in range; every other value a number (a relax rate is NaN where nothing was rejected)."""
    for name, (lo, hi) in CURVE_RANGES.items():
        if name not in row:
            raise ValueError(f"{where}.{name}: missing")
        _number(row[name], f"{where}.{name}", lo, hi)
    for name, value in row.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{where}.{name}: expected a number, got {value!r}")


ANCHOR_FIELDS = {"anchor": str, "column": str, "meaning": str, "reached": bool}  # and target, p_drop, value


def _check_anchor(found, where: str) -> None:
    """One anchor's pick: its names, whether it was reached, and its numbers (p_drop in [0, 1])."""
    if not isinstance(found, dict):
        raise ValueError(f"{where}: expected an object, got {found!r}")
    for name, kind in ANCHOR_FIELDS.items():
        if not isinstance(found.get(name), kind):
            raise ValueError(f"{where}.{name}: expected {kind.__name__}, got {found.get(name)!r}")
    for name in ("target", "value"):
        _number(found.get(name), f"{where}.{name}")
    _number(found.get("p_drop"), f"{where}.p_drop", 0.0, 1.0)


def read_calibration(path: str | Path) -> dict:
    """A calibration file, checked: its fields (Calibration), the pick, every curve row, the dims' columns."""
    cal, where = read_json(path), f"{path}: calibration"
    check_fields(cal, Calibration, where)
    _number(cal["chosen"], f"{where}.chosen", 0.0, 1.0)
    for i, row in enumerate(cal["curve"]):
        _check_curve_row(row, f"{where}.curve[{i}]")
    for i, found in enumerate(cal.get("anchors") or []):
        _check_anchor(found, f"{where}.anchors[{i}]")
    missing = [name for name in DIMS if name not in cal["dims"]]
    if missing:
        raise ValueError(f"{where}.dims.{missing[0]}: missing")
    if len({len(cal["dims"][name]) for name in DIMS}) > 1:
        sizes = ", ".join(f"{name} {len(cal['dims'][name])}" for name in DIMS)
        raise ValueError(f"{where}.dims: its columns differ in length ({sizes})")
    return cal


# ---- the size probe -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProbedModel:
    """One model of a size probe: what it is and its statistics per p_drop."""

    name: str
    original: str
    quantisation: str
    params: int
    hidden: int
    vocab: int
    rows: list[dict]  # p_drop, K, positions, unanimity, unanimity_paper, js_threshold, margin_*, top1_accuracy


@dataclass(frozen=True)
class Probe:
    """A size probe's result (`python -m dropmatch probe --json`)."""

    texts: str
    K: int
    p_drops: list[float]
    max_positions: int
    models: list[dict]
    paper: dict
    prediction: dict
    environment: dict | None = None


PROBE_RANGES = {"p_drop": (0.0, 1.0), "unanimity": (0.0, 1.0), "unanimity_paper": (0.0, 1.0)}


def read_probe(path: str | Path) -> dict:
    """A size-probe file, checked: its fields, each model's, and each row's p_drop and unanimities in [0, 1]."""
    probe, where = read_json(path), f"{path}: probe"
    check_fields(probe, Probe, where)
    for i, model in enumerate(probe["models"]):
        check_fields(model, ProbedModel, f"{where}.models[{i}]")
        for j, row in enumerate(model["rows"]):
            for name, (lo, hi) in PROBE_RANGES.items():
                _number(row.get(name), f"{where}.models[{i}].rows[{j}].{name}", lo, hi)
            if row["p_drop"] not in probe["p_drops"]:
                raise ValueError(f"{where}.models[{i}].rows[{j}].p_drop: {row['p_drop']} is not one of p_drops")
    return probe
