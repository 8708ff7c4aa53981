"""The command line, all of its argparse: `generate`, `bench`, `headbench`, `sweep`, `report`, `matched`, `seeds` and
`calibrate` (a stable contract).

Every subcommand validates its input, calls the core or the lab, and prints; bad input is one line on
stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import sys
import typing
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import torch
import transformers

from dropmatch import llamacpp, metrics
from dropmatch.config import (
    DRAFT_QUANTS,
    ENGINES,
    METHODS,
    MODES,
    PAIR_SETTINGS,
    PAPER_RELAX_SHARE,
    PAPER_SETTING,
    PAPER_UNANIMITY,
    RELAXED_METHODS,
    SETTINGS,
    TARGET_QUANTS,
    TRUNCATION_KNOBS,
    DecodeConfig,
    KnobPair,
    bounded_float,
    check_setting,
    criterion_method,
    criterion_names,
)
from dropmatch.criteria import CRITERION_KNOBS, KNOBS, RELATIVE_CRITERIA
from dropmatch.decode import cpu_bf16, cpu_model, cpu_name, generate
from dropmatch.lab import bench, calibrate, headbench, knob_match, probe, suites, sweep
from dropmatch.lab.files import recorded
from dropmatch.lab.paper import HEAD_COST_MS
from dropmatch.models import DEFAULT_DRAFT, DEFAULT_TARGET, DTYPES, load_pair
from dropmatch.tables import power, seeds
from dropmatch.tables.summary import summary
from dropmatch.tables.tradeoff import matched_table, setting_points
from dropmatch.tables.verdict import against_lossless, cluster, clusters_checked, judged, markdown


class _Parser(argparse.ArgumentParser):
    """argparse that prints one line and exits 2 on bad input (no usage dump, no traceback)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


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


def _seeds(text: str) -> list[int]:
    """A comma-separated list of seeds ("0,1"), each checked as the seed setting is, duplicates dropped."""
    parts = [t.strip() for t in text.split(",")]
    if not all(parts):
        raise ValueError(f"seeds: expected a comma-separated list of integers, got {text!r}")
    return list(dict.fromkeys(int(check_setting("seed", t)) for t in parts))


def _threads(n: int) -> None:
    """torch's CPU threads: `n`, never more than the CPUs this process may use."""
    torch.set_num_threads(min(n, len(os.sched_getaffinity(0))))


# ---- arguments shared by the subcommands ----------------------------------------------------------
# The decoding settings the command line takes (the app's SETTINGS but the pair's own, asked for with the pair),
# and what --help says of each: the flag, type and default come from DecodeConfig's field, the checks from
# DecodeConfig.from_settings.
DECODE_SETTINGS = tuple(name for name in SETTINGS if name not in PAIR_SETTINGS)
SETTING_HELP = {
    "gamma": "draft tokens per round",
    "K": "dropout paths K",
    "p_drop": "dropout rate on the LM-head input",
    "criterion": "a DropMatch rule on the K paths, one of its relatives, or a truncation sampling of the target alone "
    "(top-k-sampling, min-p: no draft; greedy target decoding at T = 0); relatives and truncations take --knob",
    "mode": "or: the lossless test OR the criterion accepts a draft; replace: the criterion alone (the same for "
    "a speculative cascade, whose rule is the verification)",
    "temperature": "0 = greedy",
    "max_new_tokens": "tokens to generate at most",
    "seed": "the seed of the dropout masks and of sampling",
    "span_gate": "relax only inside comments, strings and whitespace (a plain prompt, read as Python); in a chat "
    "turn, never on a token that holds a digit; elsewhere the lossless test decides",
    "knob": "the relative's (or the truncation's) setting, a pair written K/delta where it takes two; defaults: "
    + "; ".join(f"{n}: {k.said()}" for n, k in (KNOBS | TRUNCATION_KNOBS).items()),
}
CHOICES = {"criterion": criterion_names(), "mode": MODES}


def _add_settings(p: argparse.ArgumentParser, names=DECODE_SETTINGS, **helps: str) -> None:
    """--name for each decoding setting named (K: --k, p_drop: --p-drop), typed and defaulted as DecodeConfig's
    field (`float | None`: a float, default None); `helps` replaces a setting's help text."""
    fields, hints = {f.name: f for f in dataclasses.fields(DecodeConfig)}, typing.get_type_hints(DecodeConfig)
    for name in names:
        if hints[name] is bool:  # a switch: --span-gate
            p.add_argument("--" + name.replace("_", "-"), dest=name, action="store_true", help=SETTING_HELP[name])
            continue
        kind = next(t for t in (*typing.get_args(hints[name]), hints[name]) if t in (int, float, str))
        kind = str if name == "knob" else kind  # a number, or a pair of them ("8/0.5"): the rule's knob checks it
        p.add_argument(
            "--" + name.lower().replace("_", "-"),
            dest=name,
            type=kind,
            default=fields[name].default,
            choices=CHOICES.get(name),
            help=helps.get(name, SETTING_HELP[name]),
        )


def _add_pair(
    p: argparse.ArgumentParser, lean: bool = True, device_map: bool = False, engine: bool = False, leans: bool = False
) -> None:
    """The model pair: --target, --draft, --dtype, --device; --device-map where the subcommand can spread a pair;
    the lean draft (--draft-quant, --draft-vocab) where it decodes with the draft (`leans`: --draft-quant may be
    given more than once, each a lean draft beside the stock one); --engine where it can run on llama.cpp, and there
    --target-quant (a 4-bit target body)."""
    p.add_argument("--target", default=DEFAULT_TARGET, help="hub id, local path, or 'embedded' (default)")
    p.add_argument("--draft", default=DEFAULT_DRAFT, help="hub id, local path, or 'embedded' (default)")
    p.add_argument("--dtype", default="bfloat16", choices=tuple(DTYPES))
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    if device_map:
        p.add_argument("--device-map", default=None, help="'auto' spreads a pair too large for one device (accelerate)")
    if lean:
        p.add_argument(
            "--draft-quant",
            default=[] if leans else "none",
            action="append" if leans else "store",
            choices=DRAFT_QUANTS,
            help="the draft's weights: none, int8 weight-only (per-channel scales; pays with bf16; CPU or CUDA), or "
            "int4 in groups of 32 (CPU only)" + ("; once per lean draft to time beside the stock one" if leans else ""),
        )
        p.add_argument(
            "--draft-vocab",
            type=_positive,
            default=None,
            help="the draft's head scores only the N most frequent tokens (default: all)",
        )
    if engine:
        p.add_argument(
            "--target-quant",
            default="none",
            choices=TARGET_QUANTS,
            help="the target's body: none (the reference), or int4 in groups of 32 (CPU only; its head stays dense; "
            "on the embedded pair the layers its GGUF file holds in Q4_K)"
            + ("; bench times it beside the bf16 target" if leans else ""),
        )
        p.add_argument(
            "--engine",
            default="torch",
            choices=ENGINES,
            help="what runs the models: torch (the reference), or llama.cpp on the embedded pair's GGUF files with "
            "the target's head in torch (needs requirements-llama.txt)",
        )


# ---- generate ----------------------------------------------------------------------------------
def decode_config(args: argparse.Namespace, method: str | None, evidence: bool = False) -> DecodeConfig:
    """The config of one method from the decode arguments (DecodeConfig.from_settings); None = the method that runs
    --criterion."""
    settings = {name: getattr(args, name) for name in DECODE_SETTINGS}
    if (method or criterion_method(args.criterion)) not in RELAXED_METHODS:
        settings["span_gate"] = False  # a switch of a rule: the baselines beside it run none
    return DecodeConfig.from_settings(method=method, evidence=evidence, **settings)


def _cmd_generate(args: argparse.Namespace) -> int:
    config = decode_config(args, args.method, evidence=args.evidence)
    pair = load_pair(
        args.target,
        args.draft,
        args.dtype,
        args.device,
        args.device_map,
        args.draft_quant,
        args.draft_vocab,
        engine=args.engine,
        target_quant=args.target_quant,
    )
    trace = generate(pair, args.prompt, config, chat=args.chat)
    m = metrics.compute(trace)
    print(trace.text)
    print("---")
    shown = (
        "tau",
        "acceptance_rate",
        "tokens_per_s",
        "n_tokens",
        "target_forwards",
        "draft_forwards",
        "histogram",
        "relaxed_share",
        "ties",
    )
    for key in shown:
        value = m[key]
        print(f"{key:>16}: {round(value, 3) if isinstance(value, float) else value}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(trace.to_dict() | {"metrics": m}, f, ensure_ascii=False)
    return 0


# ---- bench and headbench -------------------------------------------------------------------------
def _cmd_bench(args: argparse.Namespace) -> int:
    if args.temperature != 0:
        raise ValueError("bench compares greedy runs (assisted generation's exactness check needs T = 0)")
    prompts = suites.load_suite(args.prompts, args.limit)
    pair = load_pair(args.target, args.draft, args.dtype, args.device, args.device_map)
    quants = dict.fromkeys(args.draft_quant or ["none"])  # the lean drafts beside the stock one, same target
    leans = [
        load_pair(args.target, args.draft, args.dtype, args.device, args.device_map, quant, args.draft_vocab)
        for quant in quants
        if quant != "none" or args.draft_vocab
    ]
    if args.target_quant != "none":  # the 4-bit target with each draft, beside the bf16 target
        leans += [
            load_pair(
                args.target,
                args.draft,
                args.dtype,
                args.device,
                args.device_map,
                quant,
                args.draft_vocab,
                target_quant=args.target_quant,
            )
            for quant in quants
        ]
    engine = None
    if args.engine != "torch":  # every method once more on the other engine, beside the torch reference
        engine = load_pair(args.target, args.draft, args.dtype, args.device, args.device_map, engine=args.engine)
    if args.batches:
        return _batch_bench(args, pair, prompts)
    configs = {m: decode_config(args, m) for m in ("target", "lossless", criterion_method(args.criterion))}
    df = bench.run_bench(pair, prompts, configs, args.gamma, args.max_new_tokens, leans, engine, args.gammas)
    table = bench.summarise(df)
    with pd.option_context("display.width", 160, "display.float_format", "{:.3f}".format):
        print(
            f"gamma={args.gamma} K={args.K} p_drop={args.p_drop} criterion={args.criterion} mode={args.mode} "
            f"dtype={args.dtype} prompts={len(prompts)} max_new_tokens={args.max_new_tokens}"
        )
        print(table.to_string())
        print(
            "tau pooled over prompts (N / T, bonus included); tokens/s: mean over prompts; speedups: ratios of "
            "those means; overhead / draft / target share: time in dropout paths + criteria / drafting / the "
            "target's verify forward, over round time; +int8, +int4: the same method with that draft; +llama.cpp: on "
            "the llama.cpp engine (bodies in llama.cpp, the target's head in torch); llama.cpp / llama.cpp spec: "
            "llama.cpp alone, plain greedy decoding / greedy speculation with the draft (both heads its own); +g2: at "
            "draft length 2 instead of gamma"
        )
    _write_bench(args, table, df)
    return 0


def _write_bench(args: argparse.Namespace, table: pd.DataFrame, df: pd.DataFrame) -> None:
    """With --json: the command's settings, where it ran, the summary table and the per-prompt rows."""
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "config": vars(args) | {"func": None},
                    "environment": _environment(args),
                    "summary": table.reset_index().to_dict(orient="records"),
                    "rows": df.to_dict(orient="records"),
                },
                indent=1,
                default=str,
            )
        )


def _batch_bench(args: argparse.Namespace, pair, prompts) -> int:
    """bench --batches: lossless and the relaxed method over the prompts at each batch size (the paper's Table 5)."""
    relaxed = criterion_method(args.criterion)
    configs = {m: decode_config(args, m) for m in ("lossless", relaxed)}
    df = bench.run_batch_bench(pair, prompts, configs, args.batches, args.max_new_tokens)
    table = bench.summarise_batches(df, relaxed)
    with pd.option_context("display.width", 160, "display.float_format", "{:.3f}".format):
        print(
            f"gamma={args.gamma} K={args.K} p_drop={args.p_drop} criterion={args.criterion} dtype={args.dtype} "
            f"prompts={len(prompts)} max_new_tokens={args.max_new_tokens} threads={torch.get_num_threads()}"
        )
        print(table.T.to_string())
        print(
            "tokens_per_s: every prompt's tokens over the wall time of the whole set at that batch size; "
            "cpu_s_per_cell: the process's CPU seconds per prompt; tau pooled; gain: the relaxed method's "
            "tokens_per_s over lossless's at the same batch size; x batch 1: over the same method at batch 1; "
            "paper gain: the paper's Table 5 (GSM8K, draft length 10, vLLM on A100s), batch 1 only kept"
        )
    _write_bench(args, table, df)
    return 0


def _cmd_headbench(args: argparse.Namespace) -> int:
    if args.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda asked for, but no CUDA device is available")
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[args.dtype]
    table = headbench.run_headbench(
        args.hidden,
        args.vocab,
        args.k,
        args.positions,
        args.device,
        dtype,
        args.p_drop,
        args.repeat,
        sparse=not args.no_sparse,
    )
    print(
        f"hidden={args.hidden} vocab={args.vocab} K={args.k} positions={args.positions} "
        f"device={args.device} dtype={args.dtype} (median of {args.repeat})"
    )
    print(table.to_string(float_format="{:.3f}".format))
    print("paper, Table 4 (70B head on A100): " + ", ".join(f"{k} {v} ms" for k, v in HEAD_COST_MS.items()))
    return 0


# ---- sweep and report -----------------------------------------------------------------------------
def _environment(args) -> dict:
    """Where the timings come from: library versions (llama-cpp-python's where a command that can run it has it),
    device, the CPU (its name, its model where one name covers several, and whether it has bf16 arithmetic), threads,
    niceness, the usable CPUs."""
    usable = sorted(os.sched_getaffinity(0))
    llama = hasattr(args, "engine") and llamacpp.available()  # bench's llama.cpp rows, or --engine llama.cpp
    versions = {"llama_cpp_python": llamacpp.library().__version__} if llama else {}
    return {
        "cpu": cpu_name(),
        "cpu_model": cpu_model(),
        "cpu_bf16": cpu_bf16(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        **versions,
        "python": platform.python_version(),
        "device": args.device or ("cuda" if torch.cuda.is_available() else "cpu"),
        "threads": torch.get_num_threads(),
        "cpus": usable,
        "nice": os.nice(0),
    }


def _ray_backend():
    """dropmatch.lab.distributed, imported only for --backend ray: the app and the core never need Ray."""
    try:
        from dropmatch.lab import distributed
    except ModuleNotFoundError as err:
        if (err.name or "").partition(".")[0] != "ray":
            raise
        raise ValueError("--backend ray needs Ray: pip install -r requirements-lab.txt") from None
    return distributed


FIGURES_HINT = "pip install -r requirements.txt"  # plotly: the report and the figures


def _plotted():
    """dropmatch.lab.report (it draws with plotly), or None where plotly is not installed; imported only by the
    subcommands that draw, so the decoder's commands run on a machine without plotly or gradio."""
    try:
        from dropmatch.lab import report
    except ModuleNotFoundError as err:
        if (err.name or "").partition(".")[0] != "plotly":
            raise
        return None
    return report


def _sweep_outputs(out: str) -> pd.DataFrame:
    """A sweep's table.csv, summary.csv and figures (report.write_outputs); without plotly the two tables alone
    (sweep.write_tables), and a line on stderr that says so. Returns the table."""
    report = _plotted()
    if report is not None:
        return report.write_outputs(out)
    print(f"plotly is not installed ({FIGURES_HINT}): table.csv and summary.csv written, no figures", file=sys.stderr)
    return sweep.write_tables(out)


def _batches(text: str) -> list[int]:
    """Batch sizes, e.g. "1,2,4,8,16": positive integers."""
    try:
        sizes = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise ValueError(f"batch sizes are positive integers, e.g. 1,2,4,8; got {text!r}")
    return sizes


def _sweep_batch(args, suite: str) -> int:
    """The batch a sweep decodes at: --batch, else the one its directory was recorded at (batch 1 for a directory
    that names none), else the default for a new directory."""
    if args.batch is not None:
        return args.batch
    entry = recorded(args.out, suite)
    return sweep.DEFAULT_BATCH if entry is None else entry.run.batch or 1


def _cmd_sweep(args) -> int:
    """Validate everything, load the pair only if cells are pending, run them, write table and figures."""
    if args.backend != "ray" and (args.actors is not None or args.ray_address is not None):
        raise ValueError("--actors and --ray-address need --backend ray")
    distributed = _ray_backend() if args.backend == "ray" else None
    _threads(args.threads)
    items, suite = suites.load_suite(args.suite, args.limit), suites.suite_name(args.suite)
    grid = {"p_drop": args.p_drop, "K": args.K, "gamma": args.gamma, "criterion": args.criterion}
    rules = dict(args.rule or [])
    gates = {"off": (False,), "on": (True,), "both": (False, True)}[args.span_gate]
    settings = sweep.design_settings(grid, args.design, args.methods, args.centre, rules, args.seeds, gates)
    for s in settings:
        s.config(args.max_new_tokens, args.seed, args.temperature)  # every DecodeConfig error now, not an hour in
    run = {
        "max_new_tokens": args.max_new_tokens,
        "seed": args.seed,
        "dtype": args.dtype,
        "target_id": args.target,
        "draft_id": args.draft,
    }
    if suite == suites.WORD_PROBLEMS:  # a generated suite: its templates' version is part of what was run
        run["suite_version"] = suites.word_problems_version()
    lean = {"draft_quant": args.draft_quant, "draft_vocab": args.draft_vocab, "temperature": args.temperature or None}
    run |= {k: v for k, v in lean.items() if v not in ("none", None)}  # only when set: older sweeps still resume
    batch = _sweep_batch(args, suite)
    run |= {"batch": batch} if batch != 1 else {}  # batch 1 unsaid, as the older sweeps have it
    design = {
        "design": args.design,
        "centre": args.centre,
        "grid": grid,
        "methods": args.methods,
        "rules": rules,
        **({"span_gate": args.span_gate} if args.span_gate != "off" else {}),
        "environment": _environment(args) | {"backend": args.backend},
    }
    if distributed is not None:
        design["environment"] |= {"actors": args.actors or 1, "threads_per_actor": args.threads}
    design["sittings"] = {sweep.sitting(): design["environment"]}
    sweep.check_manifest(args.out, suite, run, design)
    todo = sweep.pending(args.out, suite, items, settings)
    print(f"{suite}: {len(items)} prompts x {len(settings)} settings, {len(todo)} cells to run -> {args.out}")
    if todo and distributed is not None:
        make = distributed.PairRunnerFactory(
            args.target,
            args.draft,
            args.dtype,
            args.device,
            args.draft_quant,
            args.draft_vocab,
            args.max_new_tokens,
            args.seed,
            args.timeout,
            warmup=items[0],
            temperature=args.temperature,
            batch=batch,
        )
        distributed.run_ray_sweep(
            items,
            settings,
            args.out,
            suite,
            run,
            make,
            args.actors or 1,
            args.threads,
            args.device,
            args.ray_address,
            batch=batch,
        )
    elif todo:
        pair = load_pair(
            args.target, args.draft, args.dtype, args.device, draft_quant=args.draft_quant, draft_vocab=args.draft_vocab
        )
        sweep.PairRunner(pair, 8)(items[0], sweep.Setting("lossless", 3))  # warm-up, not recorded
        runner = sweep.PairRunner(pair, args.max_new_tokens, args.seed, args.timeout, args.temperature, batch=batch)
        sweep.run_sweep(items, settings, args.out, suite, run, runner)
    failed = len(sweep.pending(args.out, suite, items, settings)) if todo and distributed is not None else 0
    if failed < len(items) * len(settings):  # only Ray records a failing cell and goes on; serial stops at it
        df = _sweep_outputs(args.out)
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(summary(df[df["suite"] == suite]).drop(columns=["suite"]).round(3).to_string(index=False))
    if failed:
        print(
            f"{failed} of {len(todo)} cells failed (their errors: {Path(args.out) / distributed.FAILED}); "
            "a rerun retries them",
            file=sys.stderr,
        )
        return 1
    return 0


def _cmd_report(args) -> int:
    if args.markdown:  # the verdict alone, as text: no figures, no HTML
        df = sweep.load_sweep(args.source, args.limit)
        scored = [(suite, part) for suite, part in df.groupby("suite", sort=False) if part["score"].notna().any()]
        if not scored:
            raise ValueError(f"{args.source} holds no scored suite (HumanEval, word problems): no verdict to write")
        for suite, part in scored:
            print(f"### {suite}\n\n{markdown(part)}")
        return 0
    report = _plotted()
    if report is None:
        raise ValueError(f"the report draws its figures with plotly: {FIGURES_HINT}")
    path = report.write_report(args.source, args.out, args.limit)
    print(f"report written to {path}")
    return 0


def _cmd_matched(args) -> int:
    """Each relative at DropMatch's tau (the reference setting) in one suite of a sweep, and the --rule to run it."""
    df = sweep.load_sweep(args.source)
    part = df[df["suite"] == args.suite]
    if part.empty:
        raise ValueError(f"{args.source} holds no {args.suite} rows; it has {', '.join(sorted(set(df['suite'])))}")
    if not (part["method"] == "relative").any():
        raise ValueError(f"no relative ran on {args.suite} in {args.source}; add them with sweep --rule NAME=V1,V2")
    table = matched_table(part)
    if table.empty:
        raise ValueError(f"the {args.suite} rows hold no DropMatch run at the reference setting (K 5, p_drop 0.3)")
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_colwidth", 60):
        print(table.round(3).to_string(index=False))
    found = table.dropna(subset=["knob"])
    rules = [f"--rule {r.rule}={r.knob:.3g}" for r in found.itertuples() if r.rule in KNOBS]
    print("to run each relative at its matched knob:", " ".join(rules) or "(none reached)")
    return 0


def _cmd_power(args) -> int:
    """Problems needed to detect a loss (and to show equivalence within it), from a typed discordance or per setting
    of a recorded verdict."""
    if (args.psi is None) == (args.source is None):
        raise ValueError("give the discordance (--psi) or a recorded sweep (--from), one of them")
    if args.limit is not None and args.source is None:
        raise ValueError("--limit reads the first problems of a recorded sweep: give it with --from")
    if args.source is not None:
        df = sweep.load_sweep(args.source, args.limit)
        part = df[df["suite"] == args.suite].dropna(subset=["score"])
        table = against_lossless(part)
        if table.empty:
            raise ValueError(f"{args.source} holds no scored {args.suite} cells beside lossless")
        out = power.plan(table, args.loss)  # each setting's clusters (seeds, templates) via its design effect
        with pd.option_context("display.width", 200, "display.max_columns", 30):
            print(out.round(4).to_string(index=False))
        print(
            f"loss {args.loss:.4f} at two-sided 5%, 80% power (normal approximation of the paired test); "
            "detectable_loss: the smallest loss the setting's own problems detect; detectable_floor: the smallest "
            "any number of problems from these clusters (samples of these problems) would detect"
        )
        base = part[part["method"] == "lossless"]
        units = base["prompt_id"].map(cluster)
        if units.nunique() < base["prompt_id"].nunique():  # clustered problems (a generated suite's templates)
            rho = power.intra_cluster_correlation(base["score"], units)
            print(f"lossless: pass@1 {base['score'].mean():.3f} on {len(base)} problems in {units.nunique()} clusters; "
                  f"intra-cluster correlation of its scores {rho:.3f}")  # fmt: skip
            checked = clusters_checked(judged(part))
            if len(checked):
                print("\nthe clusters checked one level up: each setting's differences by template and by kind "
                      "(rho, design effect and its 95% interval; correlation across a kind's templates would make "
                      "the template-clustered intervals too narrow):")  # fmt: skip
                with pd.option_context("display.width", 250, "display.max_columns", 30):
                    print(checked.round(3).to_string(index=False))
        return 0
    got = power.typed_plan(args.psi, args.loss, args.samples, args.rho, args.problems)
    print(f"discordance {args.psi:.4f}, loss {args.loss:.4f} (two-sided 5%, 80% power, normal approximation):")
    print(f"  problems to detect the loss: {math.ceil(got['problems_to_detect']):,}")
    print(f"  problems to show equivalence within it (two one-sided tests): "
          f"{math.ceil(got['problems_for_equivalence']):,}")  # fmt: skip
    if args.samples > 1:
        print(f"  with {args.samples} samples a problem (intra-problem correlation {args.rho}): "
              f"{math.ceil(got['problems_with_samples']):,} problems")  # fmt: skip
    if args.problems:
        each = f" of {args.samples} samples each" if args.samples > 1 else ""
        print(f"  at {args.problems:,} problems{each}: power {got['power_at_loss']:.1%}, "
              f"smallest detectable loss {got['detectable_loss']:.4f}")  # fmt: skip
        if "detectable_floor" in got:
            print(f"  however many samples each of {args.problems:,} problems hold: smallest detectable loss "
                  f"{got['detectable_floor']:.4f} (they are worth at most {args.problems / args.rho:,.0f} "
                  "independent ones)")  # fmt: skip
    return 0


POOLED = ["rule", "knob", "pairs", "clusters", "tau", "score_diff", "diff_low", "diff_high", "diff_lower",
          "non_inferior", "lost", "gained", "mcnemar_p", "holm_p", "design_effect"]  # fmt: skip


def _cmd_seeds(args) -> int:
    """DropMatch's mask seed as a source of noise: greedy recordings that differ only in --seed, each seed against
    lossless, their spread, and the verdict over the seeds pooled (a problem's seeds one cluster)."""
    df = judged(sweep.load_mask_seeds(args.source, args.suite).dropna(subset=["score"]))
    if df.empty:
        raise ValueError(f"the directories hold no scored {args.suite} cells")
    pooled = against_lossless(df[df["method"].isin(["lossless", "dropmatch"])])  # Holm over the rows shown
    with pd.option_context("display.width", 220, "display.max_columns", 30):
        print("each seed against lossless (pass@1 as shares):")
        print(seeds.per_seed(df).round(4).to_string(index=False))
        print("\nacross the seeds (churn: problems whose score differs; floor: the tie-only control's churn):")
        print(seeds.spread(df).round(4).to_string(index=False))
        print("\nthe seeds pooled, a problem's seeds one cluster (Holm over these settings):")
        print(pooled.reindex(columns=POOLED).round(4).to_string(index=False))
        reruns = sweep.seed_free_reruns(args.source, args.suite)
        if len(reruns):
            print("\ncells without masks decoded again in a later directory (only the numerics part them at T 0):")
            print(reruns.to_string(index=False))
    return 0


def _rule_first(text: str) -> tuple[str, float | None]:
    """A --rule of match-knobs: a rule's name, or for a pair of knobs its name and first part (relaxed-top-k=8)."""
    name, _, first = text.partition("=")
    name = name.strip()
    knob = CRITERION_KNOBS.get(name)
    if name not in RELATIVE_CRITERIA or knob is None:
        with_knob = ", ".join(r for r in RELATIVE_CRITERIA if r in CRITERION_KNOBS)
        raise ValueError(f"match-knobs takes a relative with a knob ({with_knob}); got {name!r}")
    if isinstance(knob, KnobPair) != bool(first.strip()):
        raise ValueError(
            f"{name}: give its first part, {name}={knob.first.default:g} ({knob.first.name})"
            if isinstance(knob, KnobPair)
            else f"{name} has one knob, matched here: write {name} alone"
        )
    return name, knob.first.check(first) if first.strip() else None


def _cmd_match_knobs(args) -> int:
    """Each relative's knob that accepts DropMatch's share of exact-match rejections, on a sweep's lossless outputs."""
    _threads(args.threads)
    name = suites.suite_name(args.suite)
    entry = recorded(args.source, name)
    if entry is None:
        raise ValueError(f"{args.source} holds no {name} sweep to read lossless outputs and the pair from")
    if not args.rule and not args.span_gate:
        raise ValueError("name the rules to match (--rule NAME, repeated) or ask for --span-gate")
    run = entry.run
    if run.temperature:
        raise ValueError(f"{args.source} was sampled (T {run.temperature:g}); knobs are matched on greedy positions")
    table = sweep.load_sweep(args.source)
    items = suites.load_suite(args.suite, args.limit)
    pair = load_pair(
        run.target_id or DEFAULT_TARGET,
        run.draft_id or DEFAULT_DRAFT,
        run.dtype or "bfloat16",
        args.device,
        draft_quant=run.draft_quant or "none",
        draft_vocab=run.draft_vocab,
    )
    prompts = calibrate.recorded_outputs(table[table["suite"] == name], items)
    positions = calibrate.collect(pair, prompts, rejected_only=True, gates=args.span_gate)
    found = knob_match.matched_knobs(pair, positions, dict(args.rule), args.p_drop, args.span_gate)
    found = knob_match.measured_check(found, setting_points(judged(table[table["suite"] == name])), args.p_drop)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(found.to_string(index=False, float_format="{:.4f}".format))
    print(
        f"DropMatch {PAPER_SETTING['criterion']} at p_drop {args.p_drop:g} accepts {found['share_target'].iloc[0]:.1%}"
        f" of the {found['rejections'].iloc[0]} exact-match rejections on {len(items)} recorded lossless outputs"
    )
    reached = found[found["reached"] & found["rule"].isin(RELATIVE_CRITERIA)]
    flags = [f"--rule {r.rule}={r.knob if isinstance(r.knob, str) else f'{r.knob:.4g}'}" for r in reached.itertuples()]
    print("to sweep each at its predicted match:", " ".join(flags) or "(none reached)")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(found.to_json(orient="records", indent=1) + "\n")
    return 0


def _cmd_calibrate(args) -> int:
    _threads(args.threads)
    items = suites.load_suite(args.suite, args.limit)
    recorded = sweep.load_sweep(args.source) if args.source else None
    if recorded is not None:
        recorded = recorded[recorded["suite"] == suites.suite_name(args.suite)]
    pair = load_pair(args.target, args.draft, args.dtype, args.device)
    prompts = (
        calibrate.recorded_outputs(recorded, items)
        if recorded is not None
        else calibrate.lossless_outputs(pair, items, args.max_new_tokens)
    )
    positions = calibrate.collect(pair, prompts)
    marks = calibrate.anchors(args.target_unanimity, args.target_relax)
    table, picks = calibrate.curve(pair, positions, args.p_drop, args.k, marks, args.refine)
    chosen, reached = picks[0]["p_drop"], picks[0]["reached"]  # the unanimity anchor, as before
    dims_positions = min(args.dims, len(positions.argmax))
    dims = calibrate.dimension_flips(pair, positions, dims_positions)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string(index=False, formatters={"p_drop": "{:.4g}".format}, float_format="{:.4f}".format))
    for found in picks:
        verdict = "reaches it" if found["reached"] else "does not reach it; the closest"
        print(
            f"{found['anchor']}: {found['column']} {found['target']:.4g} -> p_drop {found['p_drop']:.4g}, "
            f"{verdict} ({found['value']:.4g}): {found['meaning']}"
        )
    flips = dims[dims["flip_rate"] > 0]
    print(
        f"{len(flips)} of {len(dims)} hidden dimensions move the argmax somewhere when zeroed alone (first "
        f"{dims_positions} positions); the top five: "
        + ", ".join(
            f"dim {r.dim} ({r.flip_rate:.1%} of positions, mean |h| {r.mean_abs_h:.2f})"
            for r in dims.nlargest(5, "flip_rate").itertuples()
        )
    )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps(
                {
                    "suite": suites.suite_name(args.suite),
                    "K": args.k,
                    "target_unanimity": args.target_unanimity,
                    "target_relax": args.target_relax,
                    "chosen": chosen,
                    "reached": reached,
                    "anchors": picks,
                    "positions": len(positions.argmax),
                    "source": "recorded lossless outputs of " + args.source
                    if args.source
                    else "lossless outputs decoded now",
                    "settings": {
                        "dtype": args.dtype,
                        "target_id": args.target,
                        "draft_id": args.draft,
                        "limit": args.limit,
                        "max_new_tokens": None if args.source else args.max_new_tokens,
                    },
                    "environment": _environment(args),
                    "curve": table.to_dict(orient="records"),
                    "dims": dims.to_dict(orient="list"),
                    "dims_positions": dims_positions,
                },
                indent=1,
            ),
            encoding="utf-8",
        )
    return 0


def _cmd_probe(args) -> int:
    """The size probe: the same teacher-forced path statistics on each model, the fit, the JSON."""
    _threads(args.threads)
    record = probe.run(args.models, args.p_drop, args.k, args.limit, args.max_positions)
    for m in record["models"]:
        for r in m["rows"]:
            print(
                f"{m['name']} ({m['params'] / 1e6:.0f}M, hidden {m['hidden']}): p_drop {r['p_drop']:g} unanimity "
                f"{r['unanimity']:.1%} (paper's count {r['unanimity_paper']:.1%}), JS threshold "
                f"{r['js_threshold']:.4f}, median top-1 margin {r['margin_q50']:.2f}, top-1 accuracy "
                f"{r['top1_accuracy']:.1%} over {r['positions']} positions"
            )
    for p, fit in record["prediction"].items():
        print(
            f"p_drop {p}: predicted unanimity (paper's count) at 70B {fit['predicted']:.1%} "
            f"[{fit['low']:.1%}, {fit['high']:.1%}] from {fit['models']} models; the paper measured 98.4% at 0.3"
        )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        record["environment"] = _environment(args)
        Path(args.json).write_text(json.dumps(record, indent=1), encoding="utf-8")
    return 0


# ---- the parser -----------------------------------------------------------------------------------
def _add_generate(sub) -> None:
    gen = sub.add_parser("generate", help="decode one prompt and print the text and metrics")
    gen.add_argument("--prompt", required=True)
    gen.add_argument(
        "--method",
        default=None,
        choices=METHODS,
        help="default: the method that runs --criterion (dropmatch, relative for a relative, truncation for "
        "top-k-sampling or min-p)",
    )
    gen.add_argument(
        "--json", default=None, help="write the trace (config, text, ids, records, rounds) and metrics here"
    )
    gen.add_argument("--evidence", action="store_true", help="compute the K paths at every position (for display)")
    gen.add_argument("--chat", action="store_true", help="wrap the prompt in the chat template")
    _add_settings(gen)
    _add_pair(gen, device_map=True, engine=True)
    gen.set_defaults(func=_cmd_generate)


def _add_bench(sub) -> None:
    p = sub.add_parser("bench", help="compare target-only, lossless, DropMatch (or a relative) and assisted generation")
    p.add_argument("--prompts", required=True, help="a suite: JSONL (id, category, prompt[, chat]) or 'humaneval'")
    p.add_argument("--limit", type=int, default=None, help="first N prompts only")
    p.add_argument("--json", default=None, help="write the per-prompt rows and the summary here")
    p.add_argument("--chat", action="store_true", help="wrap the prompt in the chat template")
    p.add_argument(
        "--gammas",
        type=_arg(lambda t: sweep.parse_values(t, "gamma")),
        default=[],
        help="more draft lengths beside --gamma, e.g. 1,2,3: every speculative row (llama.cpp's speculation too) "
        "once more at each, named +g2 ...",
    )
    p.add_argument(
        "--batches",
        type=_arg(_batches),
        default=[],
        help="instead of the method table: lossless and the relaxed method at each batch size, e.g. 1,2,4,8,16 "
        "(every prompt decoded that many at a time; the paper's Table 5)",
    )
    _add_settings(p)
    _add_pair(p, device_map=True, engine=True, leans=True)
    p.set_defaults(func=_cmd_bench)


def _add_headbench(sub) -> None:
    p = sub.add_parser("headbench", help="time K-path LM-head products and criteria on random weights")
    p.add_argument("--hidden", type=int, default=8192)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--k", type=int, default=PAPER_SETTING["K"])
    p.add_argument("--positions", type=int, default=6, help="verify positions per round (gamma + 1)")
    p.add_argument("--p-drop", type=float, default=PAPER_SETTING["p_drop"])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"])
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--no-sparse", action="store_true", help="skip the sparse-complement form (it copies W transposed)")
    p.set_defaults(func=_cmd_headbench)


def _add_sweep(sub) -> None:
    def values(factor: str):
        return _arg(lambda t: sweep.parse_values(t, factor))

    p = sub.add_parser(
        "sweep", help="run a resumable parameter sweep over a prompt suite", description=sweep.__doc__.splitlines()[0]
    )
    p.add_argument("--suite", required=True, help="a JSONL suite file (id, category, prompt[, chat]) or 'humaneval'")
    p.add_argument("--p-drop", type=values("p_drop"), help="dropout rates, e.g. 0,0.1,0.3 (default: the centre)")
    p.add_argument("--k", dest="K", type=values("K"), help="dropout path counts, e.g. 1,3,5,8")
    p.add_argument("--gamma", type=values("gamma"), help="draft lengths, e.g. 3,5,8")
    p.add_argument("--criterion", type=values("criterion"), help="DropMatch criteria, e.g. js+majority,naive")
    p.add_argument(
        "--rule",
        type=_arg(sweep.parse_rule),
        action="append",
        metavar="NAME=V1,V2",
        help="a relative (or a truncation sampling of the target) and its knob values, e.g. typical=0.05,0.09,0.2, "
        "min-p=0.05,0.1 or relaxed-top-k=8/0.5,8/1 (a pair K/delta); a rule without a knob by its name alone, "
        f"tie-only (repeat for more); names: {', '.join(CRITERION_KNOBS)}",
    )
    p.add_argument(
        "--methods",
        type=values("method"),
        default=list(sweep.METHODS),
        help="lossless,dropmatch,relative,truncation (default: all; relatives and truncations run where --rule "
        "names them)",
    )
    p.add_argument(
        "--design",
        choices=("ofat", "grid"),
        default="ofat",
        help="ofat: one factor at a time around the centre (default); grid: full cross product",
    )
    p.add_argument(
        "--centre",
        type=_arg(sweep.parse_centre),
        default=dict(PAPER_SETTING),
        help="e.g. gamma=5,K=5,p_drop=0.3 (the default)",
    )
    p.add_argument("--limit", type=_positive, help="only the first N prompts / problems")
    _add_settings(
        p,
        ("max_new_tokens", "seed", "temperature"),
        temperature="sampling temperature of every cell (default 0: greedy; a sampled sweep is its own directory)",
    )
    p.add_argument(
        "--seeds",
        type=_arg(_seeds),
        default=None,
        help="sampled replicates: every setting once per seed, e.g. 0,1 (default: the --seed alone)",
    )
    p.add_argument(
        "--span-gate",
        choices=("off", "on", "both"),
        default="off",
        help="every rule's setting without the span gate (off), behind it (on: it relaxes only inside comments, "
        "strings and whitespace; in a chat turn never on a digit), or both, as a sweep axis",
    )
    _add_pair(p)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per HumanEval test run")
    p.add_argument(
        "--threads",
        type=_positive,
        default=2,
        help="torch CPU threads (at most the usable CPUs; with --backend ray: per actor)",
    )
    p.add_argument(
        "--batch",
        type=_positive,
        default=None,
        help="cells decoded at a time, in lockstep rounds (with --backend ray: per actor; default: the directory's "
        f"own batch, {sweep.DEFAULT_BATCH} for a new one; a directory keeps one batch, since a bf16 batch can part "
        "from batch 1 at a near-tie)",
    )
    p.add_argument("--out", required=True, help="sweep directory (created; reruns resume it)")
    p.add_argument(
        "--backend",
        choices=("serial", "ray"),
        default="serial",
        help="serial: cells one after another in this process (default); ray: on Ray actors, each holding "
        "the pair (pip install -r requirements-lab.txt)",
    )
    p.add_argument(
        "--actors",
        type=_positive,
        default=None,
        help="with --backend ray: actors, each one GPU (where the cluster has GPUs) or one CPU (default 1)",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        help="with --backend ray: 'auto' joins the cluster of `ray start` (default: start a local Ray)",
    )
    p.set_defaults(func=_cmd_sweep)
    r = sub.add_parser("report", help="turn a sweep directory into one self-contained HTML report")
    r.add_argument("--from", dest="source", required=True, help="a sweep directory")
    r.add_argument("--out", default=None, help="the HTML file (default: DIR/report.html)")
    r.add_argument(
        "--limit",
        type=_positive,
        default=None,
        help="judge each suite's first N problems only, in the suite's order (humaneval, word-problems): a part of a "
        "recording still growing, as it was judged (default file: DIR/report_firstN.html)",
    )
    r.add_argument(
        "--markdown",
        action="store_true",
        help="print each scored suite's verdict against lossless as a Markdown table instead (no HTML written)",
    )
    r.set_defaults(func=_cmd_report)


def _add_analysis(sub) -> None:
    m = sub.add_parser("matched", help="each relative at the knob where its tau equals DropMatch's (paper setting)")
    m.add_argument("--from", dest="source", required=True, help="a sweep directory with relatives (--rule)")
    m.add_argument("--suite", default="mini_spec_bench", help="which suite of the sweep (default mini_spec_bench)")
    m.set_defaults(func=_cmd_matched)
    w = sub.add_parser("power", help="problems needed to detect a loss in pass rate, or to show equivalence within it")
    w.add_argument("--loss", type=_arg(power.parse_share), required=True, help="the loss to detect: 0.0122 or 2/164")
    w.add_argument(
        "--psi", type=_arg(power.parse_share), help="the discordant share of problems (lost + gained over all)"
    )
    w.add_argument("--from", dest="source", help="a recorded sweep: every setting's own discordance against lossless")
    w.add_argument("--suite", default="humaneval", help="which suite of the sweep (default humaneval)")
    w.add_argument(
        "--limit",
        type=_positive,
        default=None,
        help="with --from: the suite's first N problems only, in its order (a recording still growing, as judged)",
    )
    w.add_argument(
        "--problems", type=_positive, help="with --psi: the power and detectable loss at this many (--samples each)"
    )
    w.add_argument(
        "--samples", type=_positive, default=1, help="with --psi: samples a problem (T > 0), or problems a template"
    )
    w.add_argument("--rho", type=float, default=0.0, help="with --samples: the outcomes' intra-problem correlation")
    w.set_defaults(func=_cmd_power)
    e = sub.add_parser("seeds", help="DropMatch's mask seed as noise: greedy recordings that differ only in --seed")
    e.add_argument(
        "--from", dest="source", nargs="+", required=True, help="two or more sweep directories, one per mask seed"
    )
    e.add_argument("--suite", default="humaneval", help="which suite of the sweeps (default humaneval)")
    e.set_defaults(func=_cmd_seeds)
    k = sub.add_parser(
        "match-knobs",
        help="each relative's knob that accepts DropMatch's share of exact-match rejections, before sweeping it",
        description=knob_match.__doc__.splitlines()[0],
    )
    k.add_argument("--from", dest="source", required=True, help="a sweep directory with the suite's lossless outputs")
    k.add_argument("--suite", required=True, help="the sweep's suite: word-problems, humaneval or a JSONL file")
    k.add_argument("--limit", type=_positive, help="only the first N prompts / problems")
    k.add_argument(
        "--rule",
        type=_arg(_rule_first),
        action="append",
        default=[],
        metavar="NAME[=FIRST]",
        help="a relative to match (repeat for more); a pair of knobs with its first part held, relaxed-top-k=8",
    )
    k.add_argument("--span-gate", action="store_true", help="also DropMatch's p_drop behind the span gate")
    k.add_argument(
        "--p-drop",
        type=_arg(lambda t: check_setting("p_drop", t)),
        default=PAPER_SETTING["p_drop"],
        help="DropMatch's reference p_drop (default the paper's 0.3)",
    )
    k.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    k.add_argument("--threads", type=_positive, default=2, help="torch CPU threads (at most the usable CPUs)")
    k.add_argument("--json", default=None, help="write the table here")
    k.set_defaults(func=_cmd_match_knobs)
    c = sub.add_parser(
        "calibrate",
        help="path unanimity and relax rates per p_drop, and the p_drops that match the paper's unanimity, effect "
        "and JS spread",
        description=calibrate.__doc__.splitlines()[0],
    )
    c.add_argument("--suite", required=True, help="a JSONL suite file or 'humaneval'")
    c.add_argument("--limit", type=_positive, help="only the first N prompts / problems")
    c.add_argument(
        "--k", type=_arg(lambda t: check_setting("K", t)), default=PAPER_SETTING["K"], help="dropout paths K"
    )
    c.add_argument(
        "--p-drop",
        type=_arg(lambda t: sweep.parse_values(t, "p_drop")),
        default=[0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3],
        help="the p_drop grid",
    )
    c.add_argument(
        "--target-unanimity",
        type=_arg(lambda t: bounded_float("target unanimity", t, 0.0, 1.0)),
        default=PAPER_UNANIMITY,
        help="default: the paper's 0.984 (70B, HumanEval)",
    )
    c.add_argument(
        "--target-relax",
        type=_arg(lambda t: bounded_float("target relax share", t, 0.0, 1.0)),
        default=PAPER_RELAX_SHARE["humaneval"],
        help="the share of exact-match rejections js+majority should relax (default: the paper's HumanEval 0.25, "
        "from its Table 6; GSM8K 0.54)",
    )
    c.add_argument("--refine", type=int, default=3, help="bisection steps around the target (default 3)")
    c.add_argument(
        "--from",
        dest="source",
        default=None,
        help="a sweep directory whose lossless outputs give the positions (default: decode them now)",
    )
    _add_settings(c, ("max_new_tokens",), max_new_tokens="tokens per prompt when decoding the positions now")
    c.add_argument("--dims", type=_positive, default=256, help="positions for the per-dimension view")
    c.add_argument("--json", default=None, help="write the curve, the pick and the per-dimension view here")
    _add_pair(c, lean=False)
    c.add_argument("--threads", type=_positive, default=2, help="torch CPU threads (at most the usable CPUs)")
    c.set_defaults(func=_cmd_calibrate)

    def names(text: str) -> list[str]:
        out = [t.strip() for t in text.split(",") if t.strip()]
        unknown = [n for n in out if n not in probe.MODELS]
        if unknown or not out:
            raise ValueError(f"models: expected names from {', '.join(probe.MODELS)}, got {text!r}")
        return out

    p = sub.add_parser("probe", help="how path agreement grows with model size: the same statistics on each model")
    p.add_argument("--models", type=_arg(names), default=list(probe.MODELS), help="comma-separated (default: all)")
    p.add_argument(
        "--p-drop", type=_arg(lambda t: sweep.parse_values(t, "p_drop")), default=[0.1, 0.3], help="dropout rates"
    )
    p.add_argument("--k", type=_arg(lambda t: check_setting("K", t)), default=PAPER_SETTING["K"], help="paths K")
    p.add_argument("--limit", type=_positive, default=40, help="HumanEval problems whose solutions are read")
    p.add_argument("--max-positions", type=_positive, default=2000, help="positions per model, at most")
    p.add_argument("--json", default=None, help="write the statistics and the fit here")
    p.add_argument("--device", default=None, help=argparse.SUPPRESS)
    p.add_argument("--threads", type=_positive, default=2, help="torch CPU threads (at most the usable CPUs)")
    p.set_defaults(func=_cmd_probe)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m dropmatch", description="DropMatch speculative decoding")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in (_add_generate, _add_bench, _add_headbench, _add_sweep, _add_analysis):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"{parser.prog} {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
