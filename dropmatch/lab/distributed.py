"""Sweeps as Ray tasks: a few actors each hold one model pair and run cells; the driver alone writes the log.

`python -m dropmatch sweep --backend ray` runs the same pending cells as the serial sweep, in parallel. Each
actor loads the pair once (one GPU each where the cluster has GPUs, else one CPU and `--threads` torch
threads) and returns exactly the row the serial runner returns; the driver appends every row to
`cells.jsonl` as it arrives, so the log, the resume and the tidy table are the serial sweep's. A cell whose
actor dies is resubmitted on a fresh actor (at most `RETRIES` times); a cell whose runner raises goes to
`failed.jsonl` instead of the log, so a rerun retries it while the rest of the sweep goes on.

Ray is optional (requirements-lab.txt): only this module imports it, and the CLI imports this module only
for `--backend ray`.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import ray
import torch
from ray.exceptions import ActorDiedError, OutOfMemoryError, RayActorError, RayTaskError, WorkerCrashedError
from tqdm.auto import tqdm

from dropmatch.lab import sweep
from dropmatch.lab.suites import SuiteItem
from dropmatch.models import load_pair

FAILED = "failed.jsonl"
RETRIES = 3  # resubmissions of one cell after its actor died, before it is recorded as failed
# Cells an actor takes at once, in batches: with one batch a chunk, the batch drains as its cells finish and the actor
# waits on its longest (word problems at batch 16: about 60% of the cells per hour of a full batch); with four, a
# finished cell's place is taken by the next until the chunk's last batch. Each cell's row streams back as it finishes,
# so a stop loses only the cells still decoding, however long a chunk takes.
CHUNK_BATCHES = 4
# an actor that died, crashed or was killed by Ray's memory monitor: the cells of its chunk not yet back go to the
# queue again, a new actor takes its place
ACTOR_FAULTS = (RayActorError, ActorDiedError, WorkerCrashedError, OutOfMemoryError)
RunnerFactory = Callable[[], sweep.Runner]  # picklable; called once inside each actor


@dataclass(frozen=True)
class PairRunnerFactory:
    """The real runner, built inside an actor: the pair loaded as the serial sweep loads it, one warm-up cell
    (not recorded), then `sweep.PairRunner`."""

    target: str
    draft: str
    dtype: str
    device: str | None
    draft_quant: str
    draft_vocab: int | None
    max_new_tokens: int
    seed: int = 0
    timeout: float = 10.0
    warmup: SuiteItem | None = None
    temperature: float = 0.0
    batch: int = 1

    def __call__(self) -> sweep.Runner:
        pair = load_pair(
            self.target, self.draft, self.dtype, self.device, draft_quant=self.draft_quant, draft_vocab=self.draft_vocab
        )
        if self.warmup is not None:
            sweep.PairRunner(pair, 8)(self.warmup, sweep.Setting("lossless", 3))
        return sweep.PairRunner(pair, self.max_new_tokens, self.seed, self.timeout, self.temperature, batch=self.batch)


class CellActor:
    """One worker of a sweep: builds its runner (loads the pair) once, then runs cells on request."""

    def __init__(self, make: RunnerFactory, threads: int = 1) -> None:
        torch.set_num_threads(max(1, min(threads, len(os.sched_getaffinity(0)))))  # as the serial sweep does
        self.runner = make()

    def run(self, cells: list[tuple[SuiteItem, sweep.Setting]]) -> Iterator[tuple[int, dict]]:
        """(index into `cells`, its metrics row) as each cell finishes, the row exactly what the serial sweep would
        record: through the runner's `many` where it has one (several cells decoded at a time), else one cell after
        another. On Ray a stream: each row reaches the driver while the actor goes on."""
        if hasattr(self.runner, "many"):
            yield from self.runner.many(cells)
            return
        for index, (item, setting) in enumerate(cells):
            yield index, self.runner(item, setting)

    def pid(self) -> int:
        """The actor's process id (to watch its memory)."""
        return os.getpid()


_RemoteCellActor = ray.remote(CellActor)


def actor_options(device: str | None, threads: int) -> dict:
    """Ray resources of one actor: a whole GPU when the sweep runs on CUDA (asked for, or the default where the
    cluster has GPUs), else one CPU, on which the actor runs `threads` torch threads."""
    gpus = ray.cluster_resources().get("GPU", 0)
    on_gpu = str(device).startswith("cuda") or (device is None and gpus > 0)
    return {"num_gpus": 1} if on_gpu else {"num_cpus": 1}


def check_resources(actors: int, options: dict) -> None:
    """Refuse more actors than the cluster can place: an actor that never gets its GPU or CPU would stall the sweep."""
    kind = "GPU" if "num_gpus" in options else "CPU"
    have = ray.cluster_resources().get(kind, 0)
    if actors > have:
        raise ValueError(f"--actors {actors} needs {actors} {kind}s (one per actor); the Ray cluster has {have:g}")


class _Pool:
    """The sweep's actors by slot; a dead one is killed for good and replaced in its slot."""

    def __init__(self, make: RunnerFactory, size: int, threads: int, options: dict) -> None:
        self.make, self.threads, self.options = make, threads, options
        self.actors = [self._start() for _ in range(size)]
        self.idle = list(range(size))

    def _start(self):
        return _RemoteCellActor.options(**self.options).remote(self.make, self.threads)

    def replace(self, slot: int) -> None:
        """Kill the actor in `slot` (no restart) and start a fresh one there, ready for the next cell."""
        with contextlib.suppress(Exception):
            ray.kill(self.actors[slot], no_restart=True)
        self.actors[slot] = self._start()
        self.idle.append(slot)

    def close(self) -> None:
        """Kill every actor: the sweep is over or interrupted, and no cell may still run after it."""
        for actor in self.actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)


def record_failure(
    out_dir: str | Path, suite: str, item: SuiteItem, setting: sweep.Setting, error: BaseException, attempts: int
) -> dict:
    """Append a failed cell to failed.jsonl (key, error type and message); the cell stays pending for a rerun."""
    lines = str(error).strip().splitlines()
    row = {
        "key": setting.key(suite, item.id),
        "suite": suite,
        "prompt_id": item.id,
        "error": type(error).__name__,
        "message": lines[0][:500] if lines else "",
        "attempts": attempts,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    with (Path(out_dir) / FAILED).open("a", encoding="utf-8") as fh:
        sweep.append_row(fh, row)
    return row


def read_failed(out_dir: str | Path) -> pd.DataFrame:
    """The failures recorded in a sweep directory, oldest first (a cell that later succeeded is still listed)."""
    path = Path(out_dir) / FAILED
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return pd.DataFrame(
        [json.loads(line) for line in lines if line.strip()],
        columns=["key", "suite", "prompt_id", "error", "message", "attempts", "time"],
    )


def iter_ray_sweep(
    items,
    settings,
    out_dir,
    suite: str,
    run: dict,
    make: RunnerFactory,
    actors: int = 1,
    threads: int = 1,
    device: str | None = None,
    retries: int = RETRIES,
    batch: int = 1,
) -> Iterator[tuple[int, int, dict]]:
    """Run every pending cell on `actors` Ray actors (Ray must be initialised), appending each row as it finishes;
    where the pending cells' lossless baseline was timed in another sitting, some of this sitting's own lossless cells
    among them (`sweep.with_baselines`, into baselines.jsonl).

    Yields (finished cells, all cells, the row just written), like `sweep.iter_sweep`. Each actor holds up to
    CHUNK_BATCHES x `batch` cells at a time, which its runner decodes `batch` at a time (a finished cell's place taken
    by the next), each row streamed back as its cell finishes; closing the generator (an interruption) kills the
    actors, and the cells they still held stay pending. When an actor dies, the cells of its chunk not yet back go to
    the queue again; when a chunk's runner raises, each of those cells runs again alone, so only the cell that raises
    is recorded as failed.
    """
    todo, total = sweep.pending(out_dir, suite, items, settings), len(items) * len(settings)
    if not todo:
        return
    options = actor_options(device, threads)
    check_resources(actors, options)
    log = sweep.open_log(out_dir)
    cells = sweep.with_baselines(out_dir, suite, todo)  # this sitting's lossless cells among them
    queue = deque((item, setting, 0, False) for item, setting in cells)  # (cell, tries, to run alone)
    pool = _Pool(make, min(actors, len(todo)), threads, options)
    inflight: dict = {}
    done = total - len(todo)
    try:
        with log.open("a", encoding="utf-8") as fh:
            while queue or inflight:
                while queue and pool.idle:
                    slot, chunk = pool.idle.pop(0), [queue.popleft()]
                    while not chunk[0][3] and queue and not queue[0][3] and len(chunk) < batch * CHUNK_BATCHES:
                        chunk.append(queue.popleft())
                    cells = [(item, setting) for item, setting, _, _ in chunk]
                    inflight[pool.actors[slot].run.remote(cells)] = (slot, chunk, set())
                (stream,), _ = ray.wait(list(inflight), num_returns=1)
                slot, chunk, back = inflight[stream]
                try:
                    index, metrics = ray.get(next(stream))
                except StopIteration:  # every cell of the chunk is back
                    del inflight[stream]
                    pool.idle.append(slot)
                    continue
                except ACTOR_FAULTS as err:
                    if getattr(err, "actor_init_failed", False):
                        raise ValueError(f"a Ray actor could not build its runner: {_one_line(err)}") from None
                    del inflight[stream]
                    pool.replace(slot)
                    for item, setting, tries, alone in reversed(_not_back(chunk, back)):
                        if tries < retries:
                            queue.appendleft((item, setting, tries + 1, alone))
                        elif not setting.baseline:  # a re-timed lossless cell that fails is only left out
                            record_failure(out_dir, suite, item, setting, err, tries + 1)
                    continue
                except RayTaskError as err:
                    del inflight[stream]
                    pool.idle.append(slot)
                    left = _not_back(chunk, back)
                    if len(left) > 1:  # which cell raised: each runs again alone
                        queue.extendleft((item, setting, tries, True) for item, setting, tries, _ in reversed(left))
                        continue
                    for item, setting, tries, _ in left:  # the one cell that raised
                        if not setting.baseline:
                            record_failure(out_dir, suite, item, setting, err.cause or err, tries + 1)
                    continue
                back.add(index)
                item, setting, _, _ = chunk[index]
                row = sweep.cell_row(suite, item, setting, run, metrics)
                if setting.baseline:
                    sweep.append_baseline(out_dir, row)
                    continue
                sweep.append_row(fh, row)
                done += 1
                yield done, total, row
    finally:
        pool.close()


def _not_back(chunk: list, back: set[int]) -> list:
    """The cells of a chunk whose rows have not come back, in the chunk's order."""
    return [cell for index, cell in enumerate(chunk) if index not in back]


def _one_line(err: BaseException) -> str:
    """An error on one line: a Ray error's message ends with the line of the exception behind it."""
    if isinstance(err, RayTaskError) and err.cause is not None:
        err = err.cause
    lines = str(err).strip().splitlines() or [type(err).__name__]
    return lines[-1] if isinstance(err, ray.exceptions.RayError) else lines[0]


def connect(address: str | None = None) -> bool:
    """Join the Ray cluster at `address` ("auto": the one started with `ray start`), or start a local one when
    None; nothing when Ray is already initialised. True when this call initialised Ray (so it shuts it down)."""
    if ray.is_initialized():
        return False
    try:
        ray.init(address=address, include_dashboard=False)
    except ConnectionError as err:
        raise ValueError(f"--ray-address {address}: {_one_line(err)}") from None
    return True


def run_ray_sweep(
    items,
    settings,
    out_dir,
    suite: str,
    run: dict,
    make: RunnerFactory,
    actors: int = 1,
    threads: int = 1,
    device: str | None = None,
    address: str | None = None,
    retries: int = RETRIES,
    batch: int = 1,
) -> pd.DataFrame:
    """Run every pending cell on Ray (see `iter_ray_sweep`) under a progress bar; return the tidy table.

    Cells still pending afterwards are the ones that failed (listed in failed.jsonl); a rerun retries them.
    """
    started, total = connect(address), len(items) * len(settings)
    try:
        rows = iter_ray_sweep(items, settings, out_dir, suite, run, make, actors, threads, device, retries, batch)
        initial = total - len(sweep.pending(out_dir, suite, items, settings))
        with tqdm(total=total, initial=initial, desc=suite, unit="cell") as bar, contextlib.closing(rows):
            for _, _, row in rows:
                bar.set_postfix_str(row["key"], refresh=False)
                bar.update()
    finally:
        if started:
            ray.shutdown()
    return sweep.load_sweep(out_dir)
