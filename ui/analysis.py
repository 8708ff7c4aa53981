"""The Analysis tab: the recorded sweeps (no model needed), DropMatch beside its relatives, the p_drop calibration,
and a small live sweep whose results replace the view."""

from __future__ import annotations

from contextlib import closing
from functools import lru_cache
from pathlib import Path

import gradio as gr
import pandas as pd

from dropmatch.config import FACTORS, PAPER_SETTING, SETTING_COLUMNS
from dropmatch.criteria import KNOBS
from dropmatch.lab.composition import DEFAULT_LOSS, compose
from dropmatch.lab.files import BASELINES, CELLS, MANIFEST, TABLE, read_calibration, read_manifest, read_probe, recorded
from dropmatch.lab.live import (
    LIVE_LIMITS,
    SUITES,
    decode_cells,
    finish,
    plan,
    run_live,
    scored,
    todo,
    write_table,
)
from dropmatch.lab.report import VERDICT_NOTE, definition, table_html
from dropmatch.lab.sweep import load_sweep
from dropmatch.models import check_heads
from dropmatch.tables.power import parse_share, typed_plan
from dropmatch.tables.tradeoff import MEASURES
from dropmatch.tables.verdict import greedy, judged, scored_against_lossless
from ui.common import (
    DEFAULTS,
    KEPT_S,
    PAIR_CHOICES,
    PAIR_INFO,
    PAIRS,
    ROOT,
    Parts,
    Stops,
    UserError,
    bind,
    default_pair,
    gpu,
    gpu_duration,
    gpu_request_note,
    model_pair,
    parts,
    pick,
    scratch_folder,
    session_of,
    updates,
    user_errors,
    zero_gpu,
    zero_gpu_factor,
)
from viz.calibration import dims_figure, size_figure, unanimity_curve
from viz.sweep import FIGURES, tradeoff
from viz.tables import word_table
from viz.verdict import kinds_heatmap, power_tables

# The recorded sweeps the tab opens with: DropMatch's own one-factor sweep, DropMatch beside its relatives, the
# verdict (every rule as a curve on all of HumanEval, recorded in parts), the verdict sampled at T 0.7, and the verdict
# on the generated word problems (recorded in parts with the batched engine).
RECORDED = {
    "sweep": ROOT / "assets/sweep",
    "relatives": ROOT / "assets/relatives",
    "verdict": ROOT / "assets/verdict",
    "sampled": ROOT / "assets/verdict_t07",
    "word": ROOT / "assets/word_problems",
}
RECORDED_LABELS = {
    "sweep": "DropMatch's own sweep",
    "relatives": "DropMatch beside its relatives",
    "verdict": "The verdict: every rule on all of HumanEval",
    "sampled": "The verdict sampled at T 0.7: HumanEval's first 82 problems",
    "word": "The verdict on generated word problems (GSM8K-like, not GSM8K)",
}
CALIBRATION = ROOT / "assets/calibration"  # one JSON per suite, from python -m dropmatch calibrate --json
PROBE = ROOT / "assets/probe/size.json"  # python -m dropmatch probe --json: path agreement against model size
VERDICT_PARTS = ("verdict", "score_curves", "kinds", "power")  # its tables, curves, where relaxation happens, power
VERDICT_PLOTS = ("score_curves", "kinds", "by_kind")  # by_kind: each setting's change by problem kind
PLAN_INPUTS = ("source", "loss", "psi", "samples", "rho", "at")  # the planner's: the sweep shown and what is typed
LIVE_INPUTS = ("live_suite", "prompts", "factor", "values", "max_new_tokens", "pair")
# What /open_sweep updates, in order (one plot per FIGURES entry), and what a client receives (not the session's
# "source": the sweep shown, for redrawing); /sweep also clears the recorded-sweep choice. A part added once the
# endpoints were in use goes after all the others ("by_kind"), so a client reading them by position still can.
SWEEP_PARTS = ("note", "compare", *FIGURES, "matched", "measure", *VERDICT_PARTS, "summary", "files")
SWEEP_WIRING, SWEEP_OUTPUTS = (*SWEEP_PARTS, "by_kind", "source"), (*SWEEP_PARTS, "by_kind")
LIVE_WIRING, LIVE_OUTPUTS = (*SWEEP_PARTS, "source", "suite", "by_kind"), (*SWEEP_PARTS, "suite", "by_kind")
PLOT_ROWS = ("tau_vs_p_drop", "tau_vs_k"), ("speedup_vs_gamma", "category_bars"), ("score_vs_tau", "lossiness_vs_tau")


# ---- the recorded sweeps ------------------------------------------------------------------------
def recorded_choices() -> list[tuple[str, str]]:
    """(label, "sweep/suite") for every recorded suite; in each sweep the suite with the most varied values first."""
    out = []
    for key, folder in RECORDED.items():
        entries = read_manifest(folder)

        def varied(suite: str, entries: dict = entries) -> int:
            design = entries[suite].get("design") or {}
            return sum(len(v or []) for v in {**(design.get("grid") or {}), **(design.get("rules") or {})}.values())

        suites = sorted(entries, key=varied, reverse=True)
        out += [(f"{RECORDED_LABELS[key]} · {suite}", f"{key}/{suite}") for suite in suites]
    return out


def _recorded_key(choice: str) -> tuple[str, str]:
    """(RECORDED key, suite) of a recorded choice ("relatives/humaneval"); a clear gr.Error if unknown."""
    values = [value for _, value in recorded_choices()]
    if choice not in values:
        raise UserError(f"No recorded sweep named {choice!r}; choose one of {', '.join(values) or 'none'}.")
    key, suite = choice.split("/", 1)
    return key, suite


def recorded_table(choice: str) -> tuple[Path, str, pd.DataFrame]:
    """The directory, suite and rows of a recorded choice ("relatives/humaneval"); a clear gr.Error if unknown."""
    key, suite = _recorded_key(choice)
    return RECORDED[key], suite, load_sweep(RECORDED[key]).query("suite == @suite")


def _records_stamp(folder: Path) -> tuple:
    """What a recorded directory's views are computed from, as its path and (file, modified, size): a new stamp once
    a recording adds cells (or baselines) there."""
    paths = [folder / name for name in (CELLS, BASELINES, MANIFEST)]
    return (str(folder), *((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in paths if p.exists()))


@lru_cache(maxsize=16)
def _recorded_view(choice: str, stamp: tuple) -> tuple[Path, str, pd.DataFrame, dict]:
    folder, suite, part = recorded_table(choice)
    return folder, suite, part, content(part)


def recorded_view(choice: str) -> tuple[Path, str, pd.DataFrame, dict]:
    """A recorded choice's directory, suite, rows and views (`content`): the same for every visitor, so computed
    once per state of the directory's records (the word problems' verdict takes seconds) and shared; callers only
    read them."""
    key, _ = _recorded_key(choice)
    return _recorded_view(choice, _records_stamp(RECORDED[key]))


def recorded_note(folder: Path, suite: str, df: pd.DataFrame) -> str:
    """Where a recorded sweep's numbers come from: its size, run settings and the machine that timed it."""
    entry = recorded(folder, suite)
    env = (entry.design.environment if entry and entry.design else None) or {}
    settings = df[list(SETTING_COLUMNS)].drop_duplicates()
    machine = f"{env.get('device', '?')}, {env.get('threads', '?')} thread(s), torch {env.get('torch', '?')}"
    run = f"up to {entry.run.max_new_tokens} new tokens, {entry.run.dtype}" if entry else "settings not recorded"
    batch = f", {entry.run.batch} cells a batch" if entry and entry.run.batch else ""
    return (
        f"**Recorded sweep · {suite}**: {df['prompt_id'].nunique()} prompts × {len(settings)} settings "
        f"({len(df)} cells), {run}{batch}, timed on {machine}. "
        f"Read from `{folder.relative_to(ROOT)}`: no model needed. Hover a column name for its definition."
    )


def content(df: pd.DataFrame, measure: str | None = None) -> dict:
    """The suite's composition (`dropmatch.lab.composition.compose`, as the report has it) as the tab's parts: the paper
    comparison, one figure per FIGURES entry (None where it has nothing to show), the matched-tau table and the
    trade-off measures, the verdict, its curves, where relaxation happens, the power planner, the summary."""
    anchors = (calibration(f"recorded/{df['suite'].iloc[0]}") or {}).get("anchors") if len(df) else None
    c = compose(df, definition, VERDICT_NOTE, measure, anchors)
    return {
        "compare": word_table(c.compare, definition, stack=True) if len(c.compare) else "",
        **c.figures,
        "matched": table_html(c.matched) if len(c.matched) else "",
        "measure": {
            "choices": [(MEASURES[m].label, m) for m in c.measures],
            "value": c.measure,
            "visible": bool(c.measures),
        },
        "verdict": c.verdict,
        "score_curves": c.curves,
        "by_kind": c.by_kind,
        "kinds": kinds_heatmap(c.kinds) if len(c.kinds) else None,
        "power": c.power,
        "summary": table_html(c.summary.drop(columns=["suite"])) if len(c.summary) else "",
    }


def sweep_views(a: Parts, c: dict, note: str, files: list[str] | None, source: list[str]) -> dict:
    """Every SWEEP_WIRING part for one sweep's views (`content`; figures hidden where empty); `source` = [directory,
    suite]."""
    plots = {name: gr.Plot(value=c[name], visible=c[name] is not None) for name in (*FIGURES, *VERDICT_PLOTS)}
    return updates(
        a,
        {
            "note": note,
            "compare": c["compare"],
            **plots,
            "matched": c["matched"],
            "measure": gr.Dropdown(**c["measure"]),
            "verdict": gr.HTML(c["verdict"], visible=bool(c["verdict"])),
            "power": c["power"],
            "summary": c["summary"],
            "files": files,
            "source": source,
        },
    )


def recorded_files(folder: Path) -> list[str] | None:
    """The report and the tidy table of a recorded sweep, those that exist (a sweep not yet reported has no HTML)."""
    present = [str(path) for path in (folder / "report.html", folder / TABLE) if path.exists()]
    return present or None


# ---- handlers -----------------------------------------------------------------------------------
def open_recorded_sweep(a: Parts, choice: str) -> dict:
    folder, suite, part, views = recorded_view(choice)
    files = recorded_files(folder)
    return sweep_views(a, views, recorded_note(folder, suite, part), files, [str(folder), suite])


def shown_rows(source) -> pd.DataFrame:
    """The rows every setting ran of the sweep shown (`source` = [directory, suite]); a clear gr.Error where a live
    sweep's folder was cleared from the server since (`scratch_folder`)."""
    folder, suite = source
    if not (Path(folder) / CELLS).exists():
        hours = KEPT_S // 3600
        raise UserError(
            f"This live sweep's files are no longer on the server (they are kept {hours} hours): run it again."
        )
    return judged(load_sweep(folder).query("suite == @suite"))


def redraw_tradeoff(source, measure: str):
    """The trade-off figure of the sweep shown, against another quality measure."""
    if not source or measure not in MEASURES:
        raise UserError("Open a sweep with relatives first, then pick a quality measure.")
    return gr.Plot(value=tradeoff(shown_rows(source), measure), visible=True)


def plan_power(source, loss, psi, samples, rho, at=None) -> str:
    """The power planner: for the sweep shown (`source`), each setting's plan against the loss typed; with a
    discordance typed (a pilot's, "30/164" or 0.183), its own plan too, with `samples` a problem at correlation
    `rho`, and where `at` is given, the power and the smallest detectable loss at that many problems."""
    with user_errors():
        share = parse_share(loss)
        m = 1 if samples is None else int(samples)
        r = 0.0 if rho is None else float(rho)
        if m < 1 or not 0 <= r <= 1:
            raise ValueError(f"samples a problem must be at least 1 and the correlation between 0 and 1; got {m}, {r}")
        n = None if at is None else int(at)
        if n is not None and n < 1:
            raise ValueError(f"the problems to judge at must be a whole number above 0, or left empty; got {at}")
        typed = typed_plan(parse_share(psi), share, m, r, n) if str(psi or "").strip() else None
        rows = pd.DataFrame()
        if source:
            rows = shown_rows(source)
        scored, table = scored_against_lossless(rows)
        shown = power_tables(table, greedy(rows) if scored else True, definition, share, typed)
    if not shown:
        raise UserError("Open a scored sweep (HumanEval, the word problems) or type a discordance to plan for.")
    return shown


def calibration(choice: str | None) -> dict | None:
    """The recorded calibration of the suite of a recorded choice ("sweep/humaneval"), checked, or None."""
    path = CALIBRATION / f"{str(choice).split('/', 1)[-1]}.json"
    return read_calibration(path) if choice and path.exists() else None


def calibration_views(choice: str) -> tuple:
    """The unanimity curve and the per-dimension view of the suite shown (hidden where it was not calibrated)."""
    with user_errors():
        cal = calibration(choice)
    if cal is None:
        return gr.Plot(visible=False), gr.Plot(visible=False)
    return gr.Plot(unanimity_curve(cal), visible=True), gr.Plot(dims_figure(cal), visible=True)


STOPS = Stops()  # the sessions whose live-sweep Stop was pressed (Explore's Stop has its own)


def sweep_seconds(p, pair: str, due: list) -> int:
    """The GPU time a live sweep asks ZeroGPU for (`decode_sweep`'s duration; ZeroGPU calls it with decode_sweep's
    arguments and checks the visitor's quota against it), from its plan: every cell's new tokens and its prompt's
    prefill (common.gpu_duration), 44 s at the tab's starting plan (3 prompts x 4 settings x 32 tokens)."""
    return gpu_duration(p.tokens, p.prompt_chars)


@gpu(duration=sweep_seconds)
def decode_sweep(p, pair: str, due: list):
    """The GPU function: load the pair (the one Explore runs: the app's draft, so a loaded pair is reused), check its
    heads (once per process: on ZeroGPU, once per worker, on the GPU), then decode and measure the cells `due`,
    yielding (cell key, row) after each; nothing is scored here."""
    models = model_pair(pair, p.run["draft_quant"])
    with user_errors(f"Cannot decode with the {pair} pair: "):
        check_heads(models)
    with user_errors():
        yield from decode_cells(p, models, due)


def cells(p, pair: str, folder: Path):
    """Run the plan's cells in `folder`, decoded in the GPU function and scored here as each arrives (a HumanEval
    cell's tests are CPU work: off the GPU's clock): (finished, total, row) after each. Stopping stops the GPU
    function too."""
    with user_errors(), closing(decode_sweep(p, pair, todo(p, folder))) as decoded:
        yield from run_live(p, folder, scored(p, decoded))


def live_sweep(a: Parts, suite, prompts, factor, values, max_new_tokens, pair, session: str | None = None):
    """A small one-factor sweep on the chosen pair, within LIVE_LIMITS, shown after every cell; the session's Stop
    ends it after the cell in progress, with the report of the cells done."""
    target, draft = PAIRS.get(pair, ("", "")) if isinstance(pair, str) else ("", "")
    with user_errors():
        p = plan(
            suite,
            prompts,
            factor,
            values,
            max_new_tokens,
            {"dtype": "bfloat16", "target_id": target, "draft_id": draft, "draft_quant": DEFAULTS["draft_quant"]},
        )
    STOPS.clear(session)
    asks = f" · {gpu_request_note(sweep_seconds(p, pair, []), zero_gpu_factor(), 'this sweep')}" if zero_gpu() else ""
    # the recorded-sweep choice is cleared: picking a suite again brings the recorded sweep back
    yield updates(a, {"note": f"**Live sweep** · {p.describe()} · loading the model pair…{asks}", "suite": None})
    folder = scratch_folder("sweep")
    source = [str(folder), p.suite]
    said = f"**Live sweep done** · {p.describe()} · {suite}."
    try:
        with closing(cells(p, pair, folder)) as done_so_far:
            for done, total, row in done_so_far:
                if session in STOPS:
                    said = f"**Live sweep stopped** after {done} of {total} cells · {p.describe()} · {suite}."
                    break
                df, table = write_table(folder)
                note = f"**Live sweep** · {done}/{total} cells · last: `{row['key']}`, tau {row['tau']:.2f}"
                yield sweep_views(a, content(df), note, [str(table)], source)
    finally:
        STOPS.clear(session)
    df, files = finish(folder)
    yield sweep_views(
        a, content(df), f"{said} Download the report and the per-prompt table below.", [str(f) for f in files], source
    )


def sweep_handler(a: Parts):
    """/sweep's handler: `live_sweep` with the visitor's session (Gradio passes a gr.Request to one typed so)."""

    def sweep(suite, prompts, factor, values, max_new_tokens, pair, request: gr.Request):
        yield from live_sweep(a, suite, prompts, factor, values, max_new_tokens, pair, session_of(request))

    sweep.__doc__ = live_sweep.__doc__
    return sweep


def stop_sweep(request: gr.Request) -> None:
    """The tab's Stop: marks the session, so its live sweep ends after the cell in progress (nothing is cancelled
    under the page)."""
    STOPS.mark(session_of(request))
    gr.Info("Stopping after the cell in progress: the report will hold the cells done.")


# ---- layout and events --------------------------------------------------------------------------
def _live_controls() -> dict:
    """The live sweep's inputs and buttons, in a closed accordion."""
    a = {}
    with gr.Accordion("Run a small sweep live", open=False, elem_id="lab-live"):
        with gr.Row():
            a["live_suite"] = gr.Dropdown(list(SUITES), value="mini_spec_bench", label="suite")
            a["prompts"] = gr.Slider(
                *LIVE_LIMITS["prompts"], value=3, step=1, label="prompts", info="spread over the suite's categories"
            )
            a["factor"] = gr.Dropdown(
                [*FACTORS, *KNOBS], value="p_drop", label="vary", info="a DropMatch factor, or a relative's knob"
            )
            a["values"] = gr.Textbox("0,0.3,0.5", label="values", info="comma-separated", elem_id="lab-values")
        with gr.Row():
            a["max_new_tokens"] = gr.Slider(*LIVE_LIMITS["max_new_tokens"], value=32, step=8, label="max new tokens")
            a["pair"] = gr.Dropdown(PAIR_CHOICES, value=default_pair(), label="Model pair", info=PAIR_INFO, scale=2)
            a["run"] = gr.Button("▶ Run sweep", variant="primary", elem_id="lab-run")
            a["stop"] = gr.Button("■ Stop", variant="stop", elem_id="lab-stop")
        gr.Markdown(
            f"At most {LIVE_LIMITS['cells']} cells (prompts × settings) and "
            f"{LIVE_LIMITS['tokens']} generated tokens in all; lossless runs once per γ, and DropMatch at the "
            "paper's setting beside a relative."
        )
    return a


def _tradeoff_parts(first: dict) -> dict:
    """The relatives' section: the matched-tau table, the quality measure and the speed / quality figure."""
    a = {}
    gr.Markdown(
        "#### DropMatch beside its relatives\nEach relative at the knob where its τ equals DropMatch's "
        "(paper setting), and its quality there; below, τ against a quality measure, one curve per rule, "
        "ringed points on the Pareto front. Truncation sampling of the target alone (top-k, min-p; a sweep's "
        "`--rule min-p=...`) is the quality reference at T > 0. The task score (pass@1) is the neutral quality "
        "measure: the cost of a relaxed acceptance (nats) and the target log-prob of the text are proxies that "
        "score the target's own p(d), so by construction they favour rules that threshold p(d) (typical, top-k, "
        "MARS) over rules that compare q with p (DropMatch, Fuzzy SD). The family column groups the rules as the "
        "lossy-verification literature does."
    )
    a["matched"] = gr.HTML(first["matched"], elem_id="lab-matched")
    a["measure"] = gr.Dropdown(**first["measure"], label="quality measure", elem_id="lab-measure")
    a["tradeoff"] = gr.Plot(
        first["tradeoff"], visible=first["tradeoff"] is not None, show_label=False, elem_id="lab-tradeoff"
    )
    return a


def _verdict_parts(first: dict) -> dict:
    """The verdict: the headline and the paired tables, pass@1 against tau per rule, where relaxation happens, and
    (where the problems have kinds) each setting's change by problem kind."""
    a = {}
    gr.Markdown(
        "#### The verdict: is a relaxed acceptance worth it?\nEach rule's pass@1 against lossless problem by problem "
        "(paired bootstrap interval, exact McNemar p) and the largest τ at which it keeps pass@1 within the field's "
        "bar (2 of HumanEval's 164 problems of exact decoding); below, where each rule's relaxed acceptances fall by "
        "token kind, and on the word problems each setting's change within each kind of problem."
    )
    a["verdict"] = gr.HTML(first["verdict"], visible=bool(first["verdict"]), elem_id="lab-verdict")
    with gr.Row():
        for name in ("score_curves", "kinds"):
            a[name] = gr.Plot(
                first[name], visible=first[name] is not None, show_label=False, min_width=340, elem_id=f"lab-{name}"
            )
    a["by_kind"] = gr.Plot(
        first["by_kind"], visible=first["by_kind"] is not None, show_label=False, elem_id="lab-by_kind"
    )
    with gr.Accordion("How many problems would settle it? The power planner", open=False, elem_id="lab-power-box"):
        gr.Markdown(
            "A paired test can only see a loss larger than the problems' discordance allows. For the sweep shown: "
            "each setting's smallest detectable loss, its power against the loss below, and the problems it would "
            "need. Type a pilot's discordance (lost + gained over problems) to plan a new recording, and a number "
            "of problems to see what that many would detect (a word problem's template counts as a problem, its "
            "problems as the samples). Where problems cluster, the floor says the smallest loss any number of "
            "problems from the same clusters would detect: past it, only more clusters help."
        )
        with gr.Row():
            a["loss"] = gr.Textbox(DEFAULT_LOSS, label="loss to detect", info="a share: 2/164 or 0.0122", min_width=140)
            a["psi"] = gr.Textbox("", label="discordance (optional)", info="e.g. 30/164", min_width=140)
            a["samples"] = gr.Number(
                1, label="samples a problem", info="or problems a template", precision=0, minimum=1, min_width=120
            )
            a["rho"] = gr.Number(
                0.12, label="intra-problem correlation", info="or intra-template", minimum=0, maximum=1, min_width=120
            )
            a["at"] = gr.Number(
                None, label="judged at (optional)", info="problems, or templates", precision=0, min_width=120
            )
            a["plan"] = gr.Button("Plan", elem_id="lab-plan", min_width=100)
        a["power"] = gr.HTML(first["power"], elem_id="lab-power")
    return a


def layout() -> Parts:
    """The tab's contents (inside its gr.Tab), showing the first recorded suite at once."""
    choices = recorded_choices()
    choice = choices[0][1] if choices else None
    folder, suite, part, first = (
        recorded_view(choice) if choice else (None, None, pd.DataFrame(), content(pd.DataFrame()))
    )
    gr.Markdown(
        "Sweeps over prompt suites: DropMatch at each setting against lossless on the same prompt and γ, "
        f"one factor at a time around the paper's setting (γ {PAPER_SETTING['gamma']}, K {PAPER_SETTING['K']}, "
        f"p_drop {PAPER_SETTING['p_drop']}, {PAPER_SETTING['criterion']}), and DropMatch beside its relatives "
        "(three knobs each on mini-Spec-Bench; on HumanEval each at the knob matching DropMatch's τ "
        "there). The command line runs any size: `python -m dropmatch sweep`, then "
        "`python -m dropmatch report`."
    )
    a = {
        "suite": gr.Radio(choices, value=choice, label="Recorded sweep", elem_id="lab-suite"),
        "source": gr.State([str(folder), suite] if choice else None),
    }
    a |= _live_controls()
    note = recorded_note(folder, suite, part) if choice else "No recorded sweep in `assets/`: run one live."
    a["note"] = gr.Markdown(note, elem_id="lab-note")
    a["compare"] = gr.HTML(first["compare"], label="Comparison with the paper", elem_id="lab-compare")
    for row in PLOT_ROWS:
        with gr.Row():
            for name in row:
                a[name] = gr.Plot(
                    first[name], visible=first[name] is not None, show_label=False, min_width=340, elem_id=f"lab-{name}"
                )
    a |= _tradeoff_parts(first)
    a |= _verdict_parts(first)
    a["summary"] = gr.HTML(first["summary"], elem_id="lab-summary")
    a["files"] = gr.File(
        recorded_files(folder) if choice else None,
        label="Report (HTML) and per-prompt table (CSV)",
        file_count="multiple",
        interactive=False,
        elem_id="lab-files",
    )
    gr.Markdown(
        "#### A p_drop that transfers: path unanimity per p_drop\n`python -m dropmatch calibrate` on this "
        "suite's lossless outputs: how often all K paths keep the unmasked top-1, how often each DropMatch "
        "rule relaxes, and which hidden dimensions move the argmax when zeroed alone."
    )
    cal = calibration(choice)
    with gr.Row():
        a["unanimity"] = gr.Plot(
            unanimity_curve(cal) if cal else None,
            visible=cal is not None,
            show_label=False,
            min_width=340,
            elem_id="lab-unanimity",
        )
        a["dims"] = gr.Plot(
            dims_figure(cal) if cal else None,
            visible=cal is not None,
            show_label=False,
            min_width=340,
            elem_id="lab-dims",
        )
    probed = read_probe(PROBE) if PROBE.exists() else None
    gr.Markdown(
        "#### How path agreement grows with model size\n`python -m dropmatch probe`: the same statistics on every "
        "model that installs offline here, each reading HumanEval's solutions through its own tokenizer, beside the "
        "paper's 70B head. Four small models of two families cannot be read at 70B: a fit's prediction there has a "
        "95% interval of 11% to 100%, so none is drawn."
    )
    a["size"] = gr.Plot(
        size_figure(probed) if probed else None, visible=probed is not None, show_label=False, elem_id="lab-size"
    )
    return parts(a)


def wire(a: Parts) -> None:
    """The tab's events: /open_sweep (a recorded suite), /sweep (a live sweep, streamed; Stop ends it), the
    trade-off measure, /plan_power (the power planner), and the calibration of the suite shown."""
    a["suite"].input(bind(open_recorded_sweep, a), a["suite"], pick(a, SWEEP_WIRING), api_name="open_sweep")
    a["suite"].input(calibration_views, a["suite"], pick(a, ("unanimity", "dims")), api_visibility="private")
    a["measure"].input(redraw_tradeoff, pick(a, ("source", "measure")), a["tradeoff"], api_visibility="private")
    a["plan"].click(plan_power, pick(a, PLAN_INPUTS), a["power"], api_name="plan_power")
    a["run"].click(
        sweep_handler(a),
        pick(a, LIVE_INPUTS),
        pick(a, LIVE_WIRING),
        api_name="sweep",
        concurrency_id="model",
        preprocess=False,
    )  # raw inputs: the plan checks them
    # Stop marks the session (no queue: at once); the sweep ends itself after its cell in progress
    a["stop"].click(stop_sweep, None, None, api_visibility="private", queue=False)
