"""Sweeps on Ray actors: the serial backend's cells, resume after an interruption, dead actors, failing cells, CLI."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray  # starts a local Ray cluster and actors

import dropmatch.lab  # noqa: E402
from dropmatch import decode  # noqa: E402
from dropmatch.cli import main  # noqa: E402
from dropmatch.lab import distributed, sweep  # noqa: E402
from dropmatch.lab.suites import DEFAULT_SUITE, load_suite  # noqa: E402
from dropmatch.lab.sweep import (  # noqa: E402
    CELLS,
    PairRunner,
    Setting,
    pending,
    read_baselines,
    read_cells,
    run_sweep,
)

TESTS = Path(__file__).resolve().parents[1]
TIMING = ("wall_s", "tokens_per_s", "overhead_share", "cpu_s", "tokens_per_cpu_s", "loadavg")
ITEMS = load_suite(DEFAULT_SUITE, limit=2)
SETTINGS = [
    Setting("lossless", 3),
    Setting("dropmatch", 3, 3, 0.3, "js+majority"),
    Setting("relative", 3, criterion="top-k", knob=50),
]
KEYS = [s.key("s", item.id) for item in ITEMS for s in SETTINGS]
RUN = {"max_new_tokens": 10}


@dataclass(frozen=True)
class TinyRunners:
    """A picklable runner factory for the actors: the noisy tiny pair; each cell it starts is logged (tag, key);
    it can die once (os._exit, remembered in a marker file) on one cell and raise ValueError on another, and hold
    one cell until a file `<log>.release` appears (at most two minutes), marking `<log>.held` once it is decoded."""

    log: str
    tag: str = "-"
    suite: str = "s"
    crash: str | None = None
    fail: str | None = None
    hold: str | None = None

    def __call__(self):
        from tiny_pair import tiny_pair

        runner, crashed = PairRunner(tiny_pair(noise=0.01), RUN["max_new_tokens"]), Path(self.log + ".crashed")

        def run(item, setting):
            key = setting.key(self.suite, item.id)
            with open(self.log, "a", encoding="utf-8") as fh:
                fh.write(f"{self.tag} {key}\n")
            if key == self.crash and not crashed.exists():
                crashed.touch()
                os._exit(1)
            if key == self.fail:
                raise ValueError(f"no good: {key}")
            if key != self.hold:
                return runner(item, setting)
            deadline = time.monotonic() + 120
            while not Path(self.log + ".release").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            row = runner(item, setting)
            Path(self.log + ".held").touch()
            return row

        return run


@dataclass(frozen=True)
class TinyBatches:
    """A picklable factory of the real runner on the noisy tiny pair, decoding `batch` cells at a time."""

    batch: int

    def __call__(self):
        from tiny_pair import tiny_pair

        return PairRunner(tiny_pair(noise=0.01), RUN["max_new_tokens"], batch=self.batch)


def started(log: Path, tag: str = "-") -> list[str]:
    """Keys of the cells the actors started, in order, under one tag."""
    return [line.split()[1] for line in log.read_text(encoding="utf-8").splitlines() if line.split()[0] == tag]


def logged_keys(out: Path) -> list[str]:
    """Every key in the append log, duplicates kept (read_cells drops them); a line cut short is skipped."""
    lines = (out / CELLS).read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["key"] for line in lines if line.endswith("}")]


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """A local two-CPU Ray whose workers import the tests' helpers (tiny_pair, this module)."""
    path = os.pathsep.join(map(str, (TESTS, TESTS / "lab", TESTS.parent)))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield
    ray.shutdown()


def test_ray_cells_equal_the_serial_cells_even_when_an_actor_dies(noisy_pair, tmp_path):
    """Same keys, same output ids, text, tau and decisions per cell: only the timings differ. One actor dies
    (os._exit) in the middle of a cell: the cell runs again on a fresh actor and the table is complete."""
    run_sweep(ITEMS, SETTINGS, tmp_path / "serial", "s", RUN, PairRunner(noisy_pair, RUN["max_new_tokens"]))
    log, crash = tmp_path / "log", KEYS[1]
    df = distributed.run_ray_sweep(
        ITEMS, SETTINGS, tmp_path / "ray", "s", RUN, TinyRunners(str(log), crash=crash), actors=2, threads=2
    )
    assert started(log).count(crash) == 2 and Path(f"{log}.crashed").exists()  # died once, then ran
    serial, on_ray = (
        read_cells(tmp_path / d).sort_values("key", ignore_index=True).drop(columns=list(TIMING))
        for d in ("serial", "ray")
    )
    pd.testing.assert_frame_equal(serial, on_ray)
    assert sorted(serial["key"]) == sorted(KEYS) and sorted(logged_keys(tmp_path / "ray")) == sorted(KEYS)
    assert len(df) == len(KEYS) and df["tau"].between(1, 4).all() and (df["method"] != "lossless").any()
    assert not (tmp_path / "ray" / distributed.FAILED).exists()


def test_an_interrupted_ray_sweep_resumes_with_the_missing_cells_only(tmp_path):
    out, log = tmp_path / "out", tmp_path / "log"
    rows = distributed.iter_ray_sweep(ITEMS, SETTINGS, out, "s", RUN, TinyRunners(str(log), "first"), actors=2)
    first = [next(rows)[2]["key"] for _ in range(3)]
    rows.close()  # what an interruption does: the actors are killed, what they held is not written
    assert logged_keys(out) == first
    with (out / CELLS).open("a") as fh:  # and a row cut short by a lost driver
        fh.write('{"key": "s|b|dropm')
    with pytest.warns(UserWarning, match="incomplete"):
        df = distributed.run_ray_sweep(ITEMS, SETTINGS, out, "s", RUN, TinyRunners(str(log), "second"))
    assert sorted(started(log, "second")) == sorted(set(KEYS) - set(first))
    keys = logged_keys(out)
    assert len(keys) == len(set(keys)) == len(KEYS) == len(df)


def test_a_later_sitting_on_ray_times_lossless_again_before_its_cells(tmp_path, monkeypatch):
    """The directory's lossless cells were timed in another sitting: the actors decode the first problem's again
    (one in BASELINE_EVERY), into baselines.jsonl, and the new cells' speed ratios are scaled by it."""
    out, log = tmp_path / "out", tmp_path / "log"
    monkeypatch.setattr(sweep, "sitting", lambda: "A")
    distributed.run_ray_sweep(ITEMS, SETTINGS[:2], out, "s", RUN, TinyRunners(str(log), "first"), actors=2)
    monkeypatch.setattr(sweep, "sitting", lambda: "B")
    df = distributed.run_ray_sweep(ITEMS, SETTINGS, out, "s", RUN, TinyRunners(str(log), "second"), actors=2)
    lossless = [SETTINGS[0].key("s", item.id) for item in ITEMS]
    assert sorted(started(log, "second")) == sorted(lossless[:1] + KEYS[2::3])  # the first lossless again, top-k
    timed = read_baselines(out)
    assert timed["key"].tolist() == lossless[:1] and set(timed["sitting"]) == {"B"}
    assert sorted(logged_keys(out)) == sorted(KEYS)  # the cell log holds each cell once
    assert set(df.loc[df["criterion"] == "top-k", "speed_basis"]) == {"adjusted"}
    assert set(df.loc[df["method"] == "dropmatch", "speed_basis"]) == {"side by side"}


def test_cli_ray_backend_records_a_failing_cell_apart_and_goes_on(tmp_path, monkeypatch, capsys):
    """A cell whose runner raises goes to failed.jsonl, not to the log; every other cell runs; exit code 1."""
    out = tmp_path / "out"
    argv = [
        "sweep",
        "--suite",
        str(DEFAULT_SUITE),
        "--limit",
        "2",
        "--methods",
        "lossless,dropmatch",
        "--centre",
        "gamma=3,K=3",
        "--max-new-tokens",
        "10",
        "--backend",
        "ray",
        "--threads",
        "1",
        "--out",
        str(out),
    ]
    settings = [Setting("lossless", 3), Setting("dropmatch", 3, 3, 0.3, "js+majority")]
    cells = [(item, s) for item in ITEMS for s in settings]
    keys = [s.key("mini_spec_bench", item.id) for item, s in cells]
    make = TinyRunners(str(tmp_path / "log"), suite="mini_spec_bench", fail=keys[2])
    monkeypatch.setattr(distributed, "PairRunnerFactory", lambda *a, **k: make)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"1 of 4 cells failed (their errors: {out / distributed.FAILED}); a rerun retries them" in err
    assert sorted(logged_keys(out)) == sorted(keys[:2] + keys[3:]) and (out / "table.csv").exists()
    assert pending(out, "mini_spec_bench", ITEMS, settings) == [cells[2]]  # a rerun retries it
    failed = distributed.read_failed(out)
    assert failed["key"].tolist() == [keys[2]] and failed["attempts"].tolist() == [1]
    assert failed["error"][0] == "ValueError" and failed["message"][0] == f"no good: {keys[2]}"
    manifest = json.loads((out / "sweep.json").read_text())["mini_spec_bench"]
    assert manifest["design"]["environment"]["backend"] == "ray" and "backend" not in manifest["run"]
    sitting = manifest["design"]["sittings"][sweep.sitting()]  # which CPU timed it, where one name covers several
    assert sitting["cpu_model"] == decode.cpu_model() and sitting["cpu"] == decode.cpu_name()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--backend", "ray", "--actors", "0"], "expected a positive integer, got '0'"),
        (["--backend", "dask"], "invalid choice: 'dask'"),
        (["--actors", "2"], "--actors and --ray-address need --backend ray"),
        (["--ray-address", "auto"], "--actors and --ray-address need --backend ray"),
    ],
)
def test_cli_refuses_bad_backend_arguments_with_one_line(args, message, tmp_path, capsys):
    try:
        code = main(["sweep", "--suite", str(DEFAULT_SUITE), "--out", str(tmp_path / "x"), *args])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_cli_without_ray_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if it were not installed
    monkeypatch.delitem(sys.modules, "dropmatch.lab.distributed")
    monkeypatch.delattr(dropmatch.lab, "distributed")
    code = main(["sweep", "--suite", str(DEFAULT_SUITE), "--backend", "ray", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert (
        code == 2
        and err.strip()
        == "python -m dropmatch sweep: error: --backend ray needs Ray: pip install -r requirements-lab.txt"
    )
    assert not (tmp_path / "x").exists()


def test_ray_actors_decoding_several_cells_at_a_time_record_the_serial_cells(noisy_pair, tmp_path):
    """Each actor takes up to three cells at a time and decodes them together: the same rows as the serial sweep
    (float32: a batch decodes each cell as it decodes alone), each cell once."""
    run_sweep(ITEMS, SETTINGS, tmp_path / "serial", "s", RUN, PairRunner(noisy_pair, RUN["max_new_tokens"]))
    distributed.run_ray_sweep(ITEMS, SETTINGS, tmp_path / "ray", "s", RUN, TinyBatches(3), actors=2, batch=3)
    serial, on_ray = (
        read_cells(tmp_path / d).sort_values("key", ignore_index=True).drop(columns=list(TIMING))
        for d in ("serial", "ray")
    )
    pd.testing.assert_frame_equal(serial, on_ray)
    assert sorted(logged_keys(tmp_path / "ray")) == sorted(KEYS)


def test_a_chunk_whose_actor_ray_killed_for_memory_runs_again(noisy_pair, tmp_path, monkeypatch):
    """Ray's memory monitor kills a busy actor when the machine runs short (OutOfMemoryError from ray.get): its
    chunk goes back to the queue on a fresh actor, as for an actor that died, and the table is complete."""
    real_get, calls = ray.get, []

    def get_once_out_of_memory(ref, *args, **kwargs):
        calls.append(ref)
        if len(calls) == 1:
            raise ray.exceptions.OutOfMemoryError("1 worker(s) were killed due to the node running low on memory")
        return real_get(ref, *args, **kwargs)

    monkeypatch.setattr(distributed.ray, "get", get_once_out_of_memory)
    distributed.run_ray_sweep(ITEMS, SETTINGS, tmp_path / "ray", "s", RUN, TinyBatches(2), actors=2, batch=2)
    assert sorted(logged_keys(tmp_path / "ray")) == sorted(KEYS) and len(calls) > len(KEYS) // (2 * 4)
    assert not (tmp_path / "ray" / distributed.FAILED).exists()


def test_a_chunks_rows_are_written_as_its_cells_finish_not_when_the_chunk_does(tmp_path):
    """One actor holds all six cells (one chunk) and the last of them waits for a release: the first five rows are
    written while it waits, so a stop would lose only the cell still decoding; released, it is written too."""
    out, log = tmp_path / "out", tmp_path / "log"
    last_item, last_setting = pending(out, "s", ITEMS, SETTINGS)[-1]
    held = last_setting.key("s", last_item.id)
    rows = distributed.iter_ray_sweep(ITEMS, SETTINGS, out, "s", RUN, TinyRunners(str(log), hold=held), batch=2)
    with contextlib.closing(rows):
        first = [next(rows)[2]["key"] for _ in range(len(KEYS) - 1)]
        assert not Path(f"{log}.held").exists()  # written while the chunk's last cell was still held
        assert logged_keys(out) == first and held not in first
        Path(f"{log}.release").touch()
        assert next(rows)[2]["key"] == held and Path(f"{log}.held").exists()
    assert sorted(logged_keys(out)) == sorted(KEYS)
