"""`gpucheck`: one prepared check for a few minutes on a CUDA machine, on random weights (no model files, no network).

    python -m dropmatch.lab.gpucheck --out DIR [--device cuda] [--tiny] [--budget SECONDS]

writes DIR/gpucheck.json section by section (so a run cut short keeps what it measured) and prints a summary:

- machine: torch, CUDA, transformers and Python versions, the GPU's and the CPU's names.
- equality: on a small pair whose draft is the target plus weight noise (so they mostly agree), float32 on the
  device: lossless == target-only greedy, DropMatch at p_drop 0 == lossless (lazy and evidence mode), lazy ==
  evidence mode at the paper's setting (token ids and every drafted position's decision), greedy and sampled; the
  first difference; and in bf16 the equalities a GPU promises (docs/algorithm.md).
- lean_draft: lossless with the int8 draft against the stock draft: the draft's seconds per round.
- head_bench: `headbench` on the embedded target's head (1536 x 151,936), a 70B head (8192 x 128,256) and a 7B head
  (3584 x 152,064), K 5, median ms, beside the paper's Table 4 (`paper.HEAD_COST_MS`) and the goal for K 5 JS.
- round_split: bf16 DropMatch (lazy) and lossless on a pair shaped as the embedded one (1.5B target, 0.5B draft):
  seconds per token and the mean split of a round (draft, target, paths, criteria, the rest) at two lengths.
- host_syncs: host synchronisations per round (torch.cuda.set_sync_debug_mode "warn"), lossless and DropMatch,
  lazy and evidence; null on the CPU (cuda only).
- side_by_side: the app's two runs (DropMatch and lossless, both in evidence mode) at two lengths.
- head_share_7b: a 7B-shaped target with the 0.5B draft: what share of a round the paths and criteria take.

Random weights give true costs, not true acceptance: the random draft rarely agrees with the random target, so
a round emits about one token (tau near 1) and seconds per token are per round; the real pair emits more. `--tiny`
shrinks every shape so the whole check runs on a CPU in seconds (the test runs it so). docs/usage.md, "A GPU check",
says where its result goes.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import math
import platform
import statistics
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import torch
import transformers

from dropmatch.config import PAPER_SETTING, DecodeConfig
from dropmatch.criteria import SEMANTIC_REASONS
from dropmatch.decode import Request, cpu_name, generate, stream, stream_many
from dropmatch.lab.headbench import run_headbench
from dropmatch.lab.paper import HEAD_COST_MS
from dropmatch.lab.random_pairs import (
    DRAFT_0_5B,
    QWEN_COMMON,
    TARGET_1_5B,
    TARGET_7B,
    TINY_BIG,
    TINY_COMMON,
    TINY_DRAFT,
    TINY_TARGET,
    noisy_pair,
    shaped_pair,
)
from dropmatch.models import ModelPair
from dropmatch.quant import quantize

FILE = "gpucheck.json"
# The head shapes of the head bench: (what it is, hidden, vocab)
HEADS = (("embedded target (1.5B)", 1536, 151936), ("70B (paper Table 4)", 8192, 128256), ("7B", 3584, 152064))
TINY_HEADS = (("embedded target (1.5B)", 64, 512), ("70B (paper Table 4)", 128, 1024), ("7B", 96, 640))
PAPER_HEAD = HEADS[1][0]
JS_GOAL_MS = 0.5  # the goal for K 5 paths + JS on a 70B head (the paper's Table 4 reports 1.74 ms on an A100)
SPLIT_SETTING = {"gamma": 5, "K": 5, "p_drop": 0.1, "criterion": "js+majority"}
STEPS = ("draft", "target", "paths", "criteria")
PROMPTS = (
    'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n',
    "The quick brown fox jumps over the lazy dog. Then",
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
)


def say(message: str) -> None:
    print(f"[gpucheck] {message}", flush=True)


def free(device: str) -> None:
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


class Budget:
    """The run's time limit: sections and runs that would pass it are skipped, and say so; None sets none (what a
    CPU run with --tiny does, so what the check covers does not depend on the machine's load)."""

    def __init__(self, seconds: float | None):
        self.start, self.seconds = time.perf_counter(), seconds

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        return math.inf if self.seconds is None else self.seconds - self.elapsed()


# ---- equality -------------------------------------------------------------------------------------------------------


def decisions(trace, reasons: bool) -> list[tuple]:
    """Every drafted position's decision: (round, pos, accepted[, reason])."""
    return [
        (r.round, r.pos, r.accepted, r.reason) if reasons else (r.round, r.pos, r.accepted)
        for r in trace.records
        if r.kind == "draft"
    ]


def first_difference(a: list, b: list) -> int | None:
    """The first index where two lists differ (a length difference counts at the shorter's end); None if equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def compare(pair: ModelPair, a: DecodeConfig, b: DecodeConfig, what: str, with_decisions: bool) -> dict:
    """Run both configs on every prompt: the same token ids (and decisions, where both draft)?"""
    found, rejections, relaxed, tokens = None, 0, 0, 0
    for i, prompt in enumerate(PROMPTS):
        ta, tb = generate(pair, prompt, a), generate(pair, prompt, b)
        tokens += len(ta.token_ids)
        rejections += sum(r.kind == "draft" and r.lossless is False for r in tb.records)
        relaxed += sum(r.kind == "draft" and r.reason in SEMANTIC_REASONS for r in tb.records)
        where = first_difference(ta.token_ids, tb.token_ids)
        if where is not None:
            found = {"prompt": i, "in": "token_ids", "index": where}
            break
        if with_decisions:
            same_reasons = a.method == b.method
            da, db = decisions(ta, same_reasons), decisions(tb, same_reasons)
            where = first_difference(da, db)
            if where is not None:
                found = {"prompt": i, "in": "decisions", "index": where, "a": da[where : where + 1]}
                found["b"] = db[where : where + 1]
                break
    return {
        "what": what,
        "passed": found is None,
        "first_difference": found,
        "prompts": len(PROMPTS),
        "tokens": tokens,
        "lossless_rejections": rejections,
        "relaxed_accepts": relaxed,
    }


def batched(pair: ModelPair, configs: list[DecodeConfig], what: str) -> dict:
    """Every prompt under every config as one batch (`stream_many`), each against its decode alone: the same token
    ids and decisions?"""
    requests = [Request(prompt, c) for prompt in PROMPTS for c in configs]
    together = {s.index: s.trace for s in stream_many(pair, requests, batch=len(requests)) if s.left}
    found, tokens, rejections = None, 0, 0
    for i, (prompt, config, _) in enumerate(requests):
        alone = generate(pair, prompt, config)
        tokens += len(alone.token_ids)
        rejections += sum(r.kind == "draft" and r.lossless is False for r in alone.records)
        for part, a, b in (
            ("token_ids", together[i].token_ids, alone.token_ids),
            ("decisions", decisions(together[i], True), decisions(alone, True)),
        ):
            if (where := first_difference(a, b)) is not None:
                found = {"request": i, "in": part, "index": where}
                break
        if found:
            break
    return {
        "what": what,
        "passed": found is None,
        "first_difference": found,
        "requests": len(requests),
        "tokens": tokens,
        "lossless_rejections": rejections,
    }


def both_modes(pair: ModelPair, config: DecodeConfig, what: str) -> dict:
    """`compare` of a config lazy and in evidence mode: the same tokens and decisions."""
    return compare(pair, config, replace(config, evidence=True), what, True)


def equality(device: str, tiny: bool, **_) -> dict:
    pair = noisy_pair(device)
    n = 16 if tiny else 48
    target = DecodeConfig(method="target", max_new_tokens=n)
    lossless = DecodeConfig(method="lossless", max_new_tokens=n)
    zero = DecodeConfig(method="dropmatch", p_drop=0.0, max_new_tokens=n)
    paper = DecodeConfig(method="dropmatch", **PAPER_SETTING, max_new_tokens=n)
    sampled = replace(paper, temperature=0.8, seed=3)
    truncated = DecodeConfig(method="truncation", criterion="top-k-sampling", temperature=0.8, seed=3, max_new_tokens=n)
    checks = [
        compare(pair, target, lossless, "lossless greedy == target-only greedy (token ids)", False),
        compare(pair, lossless, zero, "DropMatch p_drop 0, lazy == lossless", True),
        compare(pair, lossless, replace(zero, evidence=True), "DropMatch p_drop 0, evidence mode == lossless", True),
        both_modes(pair, paper, "DropMatch lazy == evidence mode (paper setting)"),
        both_modes(pair, replace(paper, criterion="naive"), "DropMatch lazy == evidence mode (naive)"),
        # sampling draws on the CPU generator from device distributions: the same draws in either mode
        both_modes(pair, sampled, "sampled DropMatch (T 0.8) lazy == evidence mode"),
        both_modes(pair, replace(sampled, method="lossless"), "sampled lossless (T 0.8) lazy == evidence mode"),
        compare(pair, truncated, truncated, "top-k sampling of the target alone runs, twice the same", False),
        batched(pair, [paper, lossless, sampled], "a batch (DropMatch, lossless, sampled) == each decoded alone"),
    ]
    half = noisy_pair(device, dtype=torch.bfloat16)  # docs/algorithm.md: on a GPU both modes check all at once
    bf16 = [
        both_modes(half, paper, "bf16: DropMatch lazy == evidence mode (expected)"),
        compare(half, lossless, zero, "bf16: DropMatch p_drop 0, lazy == lossless (expected)", True),
        compare(half, target, lossless, "bf16: lossless == target-only (may part at a near-tie)", False),
    ]
    return {
        "dtype": "float32",
        "bf16": bf16,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "pair": "target random (hidden 64, 2 layers, vocab 512); draft = target + 0.005 weight noise",
        "max_new_tokens": n,
        "all_passed": all(c["passed"] for c in checks),
        "checks": checks,
    }


# ---- timings on the shaped pair ------------------------------------------------------------------------------------


def summarise(trace, wall: float) -> dict:
    """A run's speed: seconds per token (wall, and summed over its rounds) and the mean seconds of each step of a
    round; `rest` is the round's bookkeeping outside the four steps (the lossless test, the records)."""
    rounds, n = trace.rounds, len(trace.token_ids)
    mean = {step: statistics.fmean(getattr(r, f"t_{step}") for r in rounds) for step in (*STEPS, "total")}
    mean["rest"] = mean["total"] - sum(mean[step] for step in STEPS)
    cfg = trace.config
    return {
        "config": {k: cfg[k] for k in ("method", "gamma", "K", "p_drop", "criterion", "evidence", "max_new_tokens")},
        "tokens": n,
        "rounds": len(rounds),
        "tau": n / len(rounds),
        "wall_s": wall,
        "s_per_token": wall / n,
        "s_per_token_rounds": sum(r.t_total for r in rounds) / n,
        "mean_round_s": mean,
        "share_of_round": {k: v / mean["total"] for k, v in mean.items() if k != "total"},
        "path_positions_per_round": statistics.fmean(r.path_positions for r in rounds),
    }


def timed(pair: ModelPair, config: DecodeConfig) -> dict:
    start = time.perf_counter()
    trace = generate(pair, PROMPTS[0], config)
    return summarise(trace, time.perf_counter() - start)


def lengths(tiny: bool) -> tuple[int, int]:
    return (8, 16) if tiny else (48, 256)


def timed_lengths(pair: ModelPair, configs: dict[str, DecodeConfig], tiny: bool, budget: Budget) -> dict:
    """Each config at both lengths, the short runs first; a long run the budget cannot hold (estimated from its
    short run) is skipped and says so."""
    out: dict = {}
    short, long_ = lengths(tiny)
    for n in (short, long_):
        for name, config in configs.items():
            key = f"{name} @ {n}"
            if n == long_ and f"{name} @ {short}" in out:
                estimate = out[f"{name} @ {short}"]["wall_s"] * long_ / short * 1.2
                if estimate > budget.left():
                    out[key] = {"skipped": f"budget: about {estimate:.0f} s needed, {budget.left():.0f} s left"}
                    continue
            say(f"  {key} ...")
            out[key] = timed(pair, replace(config, max_new_tokens=n))
            say(f"  {key}: {out[key]['s_per_token'] * 1e3:.1f} ms/token, tau {out[key]['tau']:.2f}")
    return out


def shaped(ctx: dict) -> ModelPair:
    """The pair shaped as the embedded one, built once and warmed up (kernels, allocator) before any timing."""
    if "pair" not in ctx:
        start = time.perf_counter()
        tiny, device = ctx["tiny"], ctx["device"]
        ctx["pair"] = shaped_pair(
            TINY_TARGET if tiny else TARGET_1_5B,
            TINY_DRAFT if tiny else DRAFT_0_5B,
            TINY_COMMON if tiny else QWEN_COMMON,
            device,
        )
        for config in (split_configs() | side_configs()).values():
            generate(ctx["pair"], PROMPTS[0], replace(config, max_new_tokens=8))
        ctx["pair_build_s"] = time.perf_counter() - start
        say(f"  shaped pair built and warmed up in {ctx['pair_build_s']:.1f} s")
    return ctx["pair"]


def split_configs() -> dict[str, DecodeConfig]:
    return {m: DecodeConfig(method=m, **SPLIT_SETTING) for m in ("dropmatch", "lossless")}


def side_configs() -> dict[str, DecodeConfig]:
    """The app's two runs: its rule at its default (the paper's setting) with full evidence, and lossless likewise
    (the app's lossless side is the same config with the method changed, so it records evidence too)."""
    relaxed = DecodeConfig(method="dropmatch", **PAPER_SETTING, evidence=True)
    return {"dropmatch (evidence)": relaxed, "lossless (evidence)": replace(relaxed, method="lossless")}


def pair_shapes(tiny: bool) -> dict:
    return {"target": TINY_TARGET if tiny else TARGET_1_5B, "draft": TINY_DRAFT if tiny else DRAFT_0_5B}


def round_split(ctx: dict, budget: Budget, tiny: bool, **_) -> dict:
    pair = shaped(ctx)
    return {
        "dtype": "bfloat16",
        "shapes": pair_shapes(tiny),
        "prompt_tokens": len(pair.tokenizer(PROMPTS[0])["input_ids"]),
        "pair_build_and_warmup_s": ctx.get("pair_build_s"),
        "runs": timed_lengths(pair, split_configs(), tiny, budget),
    }


def lean_draft(ctx: dict, tiny: bool, **_) -> dict:
    """The int8 draft (torch's int8 kernel on this device) against the stock bf16 draft: lossless at the short length,
    the draft's mean seconds per round and per token. The app takes the stock draft on a GPU; this says whether int8
    would pay there."""
    pair = shaped(ctx)
    lean = replace(pair, draft=quantize(copy.deepcopy(pair.draft), "int8"), draft_quant="int8")
    config = DecodeConfig(method="lossless", **SPLIT_SETTING, max_new_tokens=lengths(tiny)[0])
    runs = {}
    for name, p in (("stock", pair), ("int8", lean)):
        generate(p, PROMPTS[0], replace(config, max_new_tokens=4))  # kernels warmed
        runs[name] = timed(p, config)
    draft_s = {name: run["mean_round_s"]["draft"] for name, run in runs.items()}
    return {"runs": runs, "draft_s_per_round": draft_s, "int8_speedup": draft_s["stock"] / draft_s["int8"]}


def side_by_side(ctx: dict, budget: Budget, tiny: bool, **_) -> dict:
    pair = shaped(ctx)
    runs = timed_lengths(pair, side_configs(), tiny, budget)
    both = {}
    for n in lengths(tiny):
        sides = [runs.get(f"{name} @ {n}", {}) for name in side_configs()]
        if all("s_per_token" in side for side in sides):
            both[str(n)] = sum(side["wall_s"] for side in sides) / sides[0]["tokens"]
    return {"dtype": "bfloat16", "runs": runs, "both_sides_s_per_token": both}


SYNC_MESSAGE = "synchroniz"  # torch's warning: "called a synchronizing CUDA operation"


def count_syncs(pair: ModelPair, config: DecodeConfig) -> dict:
    """Host synchronisations torch warns of while decoding (set_sync_debug_mode "warn"): before the first round
    (the decoder's set-up) and in each round."""
    per_round = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            rounds = stream(pair, PROMPTS[0], config)
            seen = setup = sum(SYNC_MESSAGE in str(w.message) for w in caught)
            for _ in rounds:
                now = sum(SYNC_MESSAGE in str(w.message) for w in caught)
                per_round.append(now - seen)
                seen = now
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return {
        "setup": setup,
        "rounds": len(per_round),
        "per_round_mean": statistics.fmean(per_round),
        "per_round_median": statistics.median(per_round),
        "per_round_max": max(per_round),
        "first_round": per_round[0],
    }


def host_syncs(ctx: dict, device: str, tiny: bool, **_) -> dict:
    configs = {
        "lossless": DecodeConfig(method="lossless", **SPLIT_SETTING),
        "dropmatch (lazy)": DecodeConfig(method="dropmatch", **SPLIT_SETTING),
        "dropmatch (evidence)": DecodeConfig(method="dropmatch", **SPLIT_SETTING, evidence=True),
    }
    if not device.startswith("cuda"):
        return {"note": "cuda only", "counts": {name: None for name in configs}}
    pair = shaped(ctx)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            torch.cuda.synchronize()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    n, explicit = 8 if tiny else 32, any(SYNC_MESSAGE in str(w.message) for w in caught)
    return {
        "note": "the syncs torch warns of (device-to-host reads, blocking copies), transformers' own in the model "
        "bodies included; the round timer records CUDA events and synchronizes nothing"
        + ("" if not explicit else "; an explicit torch.cuda.synchronize is counted too"),
        "explicit_synchronize_counted": explicit,
        "max_new_tokens": n,
        "counts": {name: count_syncs(pair, replace(config, max_new_tokens=n)) for name, config in configs.items()},
    }


# ---- the head bench --------------------------------------------------------------------------------------------------

BESIDE_PAPER = {"plain": "plain head, all positions", "K=5 naive": "K=5 paths + naive, all positions"}
BESIDE_PAPER["K=5 JS"] = "K=5 paths + js, all positions"


def one_head(label: str, hidden: int, vocab: int, device: str, dtype: torch.dtype, repeat: int) -> dict:
    """`headbench` on one head shape (K 5, gamma + 1 positions), its K 5 JS row against the goal, and the 70B
    head's rows beside the paper's. The sparse-complement form (it copies W transposed) is tried on the embedded
    target's head only; where it fails, its error is recorded and the dense rows are measured without it."""
    entry: dict = {"hidden": hidden, "vocab": vocab}
    positions = PAPER_SETTING["gamma"] + 1
    sparse = label == HEADS[0][0]
    try:
        table = run_headbench(hidden, vocab, 5, positions, device, dtype, repeat=repeat, sparse=sparse)
    except Exception as err:
        if not sparse:
            raise
        entry["sparse_error"] = f"{type(err).__name__}: {err}"
        table = run_headbench(hidden, vocab, 5, positions, device, dtype, repeat=repeat, sparse=False)
    entry["ms"] = {name: float(ms) for name, ms in table["ms"].items()}
    js = entry["ms"].get(BESIDE_PAPER["K=5 JS"])
    entry["js_meets_goal"] = None if js is None else js <= JS_GOAL_MS
    if label == PAPER_HEAD:
        entry["beside_paper"] = {
            name: {"paper_ms": HEAD_COST_MS[name], "here_ms": entry["ms"].get(row)}
            for name, row in BESIDE_PAPER.items()
        }
    return entry


def head_bench(device: str, tiny: bool, budget: Budget, **_) -> dict:
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    repeat = 3 if tiny else 20
    shapes = {}
    for label, hidden, vocab in TINY_HEADS if tiny else HEADS:
        if budget.left() < 20:
            shapes[label] = {"skipped": f"budget: {budget.left():.0f} s left"}
            continue
        say(f"  head {hidden} x {vocab} ...")
        try:
            shapes[label] = one_head(label, hidden, vocab, device, dtype, repeat)
        except Exception as err:  # recorded; the other shapes still run
            shapes[label] = {"hidden": hidden, "vocab": vocab, "error": f"{type(err).__name__}: {err}"}
            shapes[label]["traceback"] = traceback.format_exc(limit=8)
            say(f"  head {hidden} x {vocab} failed: {shapes[label]['error']}")
        free(device)
    if not any("ms" in entry for entry in shapes.values()):
        errors = "; ".join(f"{label}: {entry.get('error') or entry.get('skipped')}" for label, entry in shapes.items())
        raise RuntimeError(f"no head shape was measured ({errors})")
    return {
        "dtype": str(dtype).removeprefix("torch."),
        "K": 5,
        "positions": PAPER_SETTING["gamma"] + 1,
        "p_drop": 0.3,
        "repeat": repeat,
        "paper_table4_ms": dict(HEAD_COST_MS),
        "paper_machine": "A100 (the paper's Table 4, a 70B head)",
        "goal": f"K 5 paths + JS <= {JS_GOAL_MS} ms",
        "heads": shapes,
    }


def head_share_7b(ctx: dict, device: str, tiny: bool, budget: Budget, **_) -> dict:
    ctx.pop("pair", None)  # the 1.5B pair's memory goes first
    free(device)
    pair = shaped_pair(
        TINY_BIG if tiny else TARGET_7B,
        TINY_DRAFT if tiny else DRAFT_0_5B,
        TINY_COMMON if tiny else QWEN_COMMON,
        device,
    )
    n = 8 if tiny else 48
    configs = {
        "lossless": DecodeConfig(method="lossless", **SPLIT_SETTING, max_new_tokens=n),
        "dropmatch (lazy)": DecodeConfig(method="dropmatch", **SPLIT_SETTING, max_new_tokens=n),
        "dropmatch (evidence)": DecodeConfig(method="dropmatch", **SPLIT_SETTING, evidence=True, max_new_tokens=n),
    }
    for config in configs.values():
        generate(pair, PROMPTS[0], replace(config, max_new_tokens=4))  # warm-up
    runs = {}
    for name, config in configs.items():
        if budget.left() < 10:
            runs[name] = {"skipped": f"budget: {budget.left():.0f} s left"}
            continue
        runs[name] = run = timed(pair, config)
        run["paths_and_criteria_share"] = (run["mean_round_s"]["paths"] + run["mean_round_s"]["criteria"]) / run[
            "mean_round_s"
        ]["total"]
    del pair
    free(device)
    return {"dtype": "bfloat16", "shapes": {"target": TINY_BIG if tiny else TARGET_7B}, "runs": runs}


# ---- the run --------------------------------------------------------------------------------------------------------


def machine(device: str, **_) -> dict:
    cuda = device.startswith("cuda")
    props = torch.cuda.get_device_properties(torch.device(device)) if cuda else None
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "device": device,
        "gpu": torch.cuda.get_device_name(torch.device(device)) if cuda else None,
        "gpu_memory_gib": props.total_memory / 2**30 if props else None,
        "cpu": cpu_name(),
        "machine": platform.machine(),
        "cpu_threads": torch.get_num_threads(),
        # the app's packages this check has imported: none, since the device machine has neither
        "ui_modules_loaded": [name for name in ("plotly", "gradio") if name in sys.modules],
    }


# (name, function, seconds the section needs at the least to be worth starting), in the order they run: the cheap
# and most telling first, so a short budget still records them
SECTIONS: tuple[tuple[str, Callable[..., dict], float], ...] = (
    ("machine", machine, 0),
    ("equality", equality, 10),
    ("head_bench", head_bench, 30),
    ("round_split", round_split, 30),
    ("host_syncs", host_syncs, 15),
    ("side_by_side", side_by_side, 30),
    ("lean_draft", lean_draft, 20),
    ("head_share_7b", head_share_7b, 45),
)


def run_section(name: str, fn: Callable[..., dict], need: float, budget: Budget, **kwargs) -> dict:
    """One section, timed; an error (or a budget too short to start it) is recorded and the next section runs."""
    if budget.left() < need:
        return {"status": "skipped", "reason": f"budget: {budget.left():.0f} s left, {need:.0f} s needed"}
    say(f"{name} ...")
    start = time.perf_counter()
    device = kwargs["device"]
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats(torch.device(device))
    try:
        out = {"status": "ok", **fn(budget=budget, **kwargs)}
    except Exception as err:  # one failing section must not stop the others
        out = {"status": "error", "error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc(limit=8)}
        say(f"{name} failed: {out['error']}")
    out["seconds"] = time.perf_counter() - start
    if device.startswith("cuda"):
        out["peak_gpu_memory_gib"] = torch.cuda.max_memory_allocated(torch.device(device)) / 2**30
    say(f"{name}: {out['status']} in {out['seconds']:.1f} s")
    return out


def summary(result: dict) -> list[str]:
    """A few lines: the machine, the equality checks, the head costs beside the paper, the round split."""
    lines, sections = [], result["sections"]
    m = sections.get("machine", {})
    lines.append(f"machine: {m.get('gpu') or m.get('cpu')} | torch {m.get('torch')} cuda {m.get('cuda')}")
    for name, section in sections.items():
        if section.get("status") != "ok":
            lines.append(f"{name}: {section.get('status')} {section.get('error') or section.get('reason') or ''}")
    eq = sections.get("equality", {})
    for check in eq.get("checks", []):
        lines.append(
            f"{'PASS' if check['passed'] else 'FAIL'} {check['what']} (first difference {check['first_difference']})"
        )
    for label, head in sections.get("head_bench", {}).get("heads", {}).items():
        if "ms" in head:
            ms = head["ms"]
            cells = ", ".join(f"{name} {ms.get(row, float('nan')):.3f} ms" for name, row in BESIDE_PAPER.items())
            lines.append(f"head {label} {head['hidden']}x{head['vocab']}: {cells}")
    paper = ", ".join(f"{k} {v} ms" for k, v in HEAD_COST_MS.items())
    lines.append(f"paper Table 4 (70B head, A100): {paper}; goal K 5 JS <= {JS_GOAL_MS} ms")
    for section in ("round_split", "side_by_side"):
        for key, run in sections.get(section, {}).get("runs", {}).items():
            if "mean_round_s" in run:
                split = " ".join(f"{k} {v * 1e3:.1f}" for k, v in run["mean_round_s"].items())
                lines.append(f"{section} {key}: {run['s_per_token'] * 1e3:.1f} ms/token; round ms: {split}")
    for name, count in (sections.get("host_syncs", {}).get("counts") or {}).items():
        if count:
            lines.append(f"host syncs {name}: {count['per_round_mean']:.1f} per round (set-up {count['setup']})")
    return lines


def run(out: Path, device: str, tiny: bool, budget_s: float | None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    path = out / FILE
    budget = Budget(budget_s)
    result = {
        "check": "gpucheck",
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "tiny": tiny,
        "device": device,
        "budget_s": budget_s,
        "weights": "random (true costs, not true acceptance)",
        "sections": {},
    }
    ctx = {"tiny": tiny, "device": device}
    for name, fn, need in SECTIONS:
        result["sections"][name] = run_section(name, fn, need, budget, ctx=ctx, device=device, tiny=tiny)
        result["elapsed_s"] = budget.elapsed()
        path.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    ctx.clear()
    free(device)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dropmatch.lab.gpucheck", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help=f"folder for {FILE}")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--tiny", action="store_true", help="every shape small: the whole check in seconds on a CPU")
    parser.add_argument("--budget", type=float, default=None, help="seconds (default 420; none with --tiny)")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda, but torch sees no CUDA device here")
    budget = args.budget if args.budget is not None or args.tiny else 420.0
    result = run(args.out, args.device, args.tiny, budget)
    for line in summary(result):
        print(line, flush=True)
    print(f"wrote {args.out / FILE} ({result['elapsed_s']:.0f} s)", flush=True)
    failed = [name for name, s in result["sections"].items() if s["status"] == "error"]
    passed = result["sections"].get("equality", {}).get("all_passed", False)
    return 0 if not failed and passed else 1


if __name__ == "__main__":
    sys.exit(main())
