"""Small live sweeps for the app's Analysis tab: a checked plan within set limits, run cell by cell.

A live sweep is an ordinary sweep (`dropmatch.lab.sweep`): one factor varied around the paper's setting (or one
relative's knob, beside DropMatch at that setting), lossless once per gamma, over a few prompts spread across the
suite's categories. Limits keep it to minutes on a CPU;
the command line (`python -m dropmatch sweep`) has none. Every bad input is a ValueError with a clear message.
Decoding and scoring are apart: `decode_cells` decodes and measures (where the model is, a GPU slot on ZeroGPU), and
`scored` adds each cell's task score where it arrives, before `run_live` logs it.
The sweep directory holds its own files: the log and manifest as it runs, the tidy table after every cell
(`write_table`), the report at the end (`finish`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dropmatch.config import FACTORS, PAPER_SETTING, bounded_int, check_setting
from dropmatch.criteria import KNOBS
from dropmatch.lab.files import TABLE
from dropmatch.lab.report import write_report
from dropmatch.lab.suites import DEFAULT_SUITE, HUMANEVAL, SuiteItem, load_suite, spread
from dropmatch.lab.sweep import (
    PairRunner,
    Runner,
    Setting,
    check_manifest,
    design_settings,
    iter_sweep,
    load_sweep,
    parse_rule,
    parse_values,
    pending,
    save_table,
    score_row,
)

SUITES = {"mini_spec_bench": DEFAULT_SUITE, HUMANEVAL: HUMANEVAL}
LIVE_LIMITS = {"prompts": (1, 8), "max_new_tokens": (8, 256), "cells": 32, "tokens": 2048}


@dataclass(frozen=True)
class Plan:
    """What a live sweep will run: the prompts, the settings and the run-wide values."""

    suite: str
    items: tuple[SuiteItem, ...]
    settings: tuple[Setting, ...]
    run: dict
    grid: dict
    rules: dict

    @property
    def cells(self) -> int:
        return len(self.items) * len(self.settings)

    @property
    def tokens(self) -> int:
        """The most new tokens the sweep decodes: every cell's max_new_tokens."""
        return self.cells * self.run["max_new_tokens"]

    @property
    def prompt_chars(self) -> int:
        """The prompt characters the sweep prefills: each prompt once per setting."""
        return len(self.settings) * sum(len(item.prompt) for item in self.items)

    def describe(self) -> str:
        return (
            f"{len(self.items)} prompts × {len(self.settings)} settings = {self.cells} cells, "
            f"up to {self.run['max_new_tokens']} tokens each"
        )


def plan(suite: str, prompts, factor: str, values: str, max_new_tokens, run: dict | None = None) -> Plan:
    """Check a live sweep's inputs against LIVE_LIMITS and build its plan (nothing runs, nothing loads)."""
    if not isinstance(suite, str) or suite not in SUITES:
        raise ValueError(f"suite must be one of {', '.join(SUITES)}; got {suite!r}")
    if not isinstance(factor, str) or factor not in (*FACTORS, *KNOBS):
        raise ValueError(f"the varied factor must be one of {', '.join((*FACTORS, *KNOBS))}; got {factor!r}")
    n = bounded_int("prompts", prompts, *LIVE_LIMITS["prompts"])
    tokens = check_setting("max_new_tokens", max_new_tokens, LIVE_LIMITS)
    grid = {factor: parse_values(values, factor)} if factor in FACTORS else {}
    rules = dict([parse_rule(f"{factor}={values}")]) if factor in KNOBS else {}
    settings = tuple(design_settings(grid, "ofat", rules=rules))
    for setting in settings:
        setting.config(tokens)  # a DecodeConfig error now, not after the model loads
    items = tuple(spread(load_suite(SUITES[suite]), n))
    result = Plan(suite, items, settings, {"max_new_tokens": tokens, "seed": 0} | (run or {}), grid, rules)
    if result.cells > LIVE_LIMITS["cells"]:
        raise ValueError(
            f"{result.describe()}: a live sweep runs at most {LIVE_LIMITS['cells']} cells; "
            "use fewer prompts or values, or the command line (python -m dropmatch sweep)"
        )
    if result.tokens > LIVE_LIMITS["tokens"]:
        raise ValueError(
            f"{result.describe()}: a live sweep generates at most {LIVE_LIMITS['tokens']} tokens "
            "(cells × max new tokens); use fewer cells or tokens, or the command line"
        )
    return result


def todo(p: Plan, out_dir: str | Path) -> list[tuple[SuiteItem, Setting]]:
    """The plan's cells not yet in `out_dir`'s log, in the order `run_live` runs them."""
    return pending(out_dir, p.suite, list(p.items), list(p.settings))


def decode_cells(p: Plan, pair, cells: list[tuple[SuiteItem, Setting]]) -> Iterator[tuple[str, dict]]:
    """Decode and measure each of `cells` on a loaded pair, with the plan's run-wide settings, and leave the task score
    to `scored` (HumanEval's tests are CPU work, to run where the model is not held): yields (cell key, row)."""
    runner = PairRunner(pair, p.run["max_new_tokens"], p.run["seed"], score=False)
    for item, setting in cells:
        yield setting.key(p.suite, item.id), runner(item, setting)


def scored(p: Plan, decoded: Iterator[tuple[str, dict]], timeout: float = 10.0) -> Runner:
    """The runner `run_live` takes for cells decoded elsewhere (`decode_cells`, in the order of `todo`): each cell's
    row is the next one decoded, its task score added here."""

    def run(item: SuiteItem, setting: Setting) -> dict:
        key, row = next(decoded)
        if key != setting.key(p.suite, item.id):
            raise ValueError(f"the decoded cell {key} came where {setting.key(p.suite, item.id)} was due")
        return score_row(item, row, timeout)

    return run


def run_live(p: Plan, out_dir: str | Path, runner: Runner) -> Iterator[tuple[int, int, dict]]:
    """Run the plan in `out_dir` with `runner(item, setting) -> row`; yields (finished, total, row) after each cell."""
    design = {
        "design": "ofat",
        "centre": dict(PAPER_SETTING),
        "grid": p.grid,
        "rules": p.rules,
        "methods": sorted({s.method for s in p.settings}),
    }
    check_manifest(out_dir, p.suite, p.run, design)
    yield from iter_sweep(list(p.items), list(p.settings), out_dir, p.suite, p.run, runner)


def write_table(out_dir: str | Path) -> tuple[pd.DataFrame, Path]:
    """The sweep so far as the tidy table, written to table.csv in `out_dir`: the table and its file."""
    df, path = load_sweep(out_dir), Path(out_dir) / TABLE
    save_table(df, path)
    return df, path


def finish(out_dir: str | Path) -> tuple[pd.DataFrame, list[Path]]:
    """The finished sweep: its table, and its files (the HTML report, then table.csv) written in `out_dir`."""
    df, table = write_table(out_dir)
    return df, [write_report(out_dir), table]
