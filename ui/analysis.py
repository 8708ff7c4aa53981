"""The Analysis tab: the recorded sweep (no model needed) and a small live sweep whose results replace it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import gradio as gr
import pandas as pd

from dropmatch.config import FACTORS, PAPER_SETTING
from dropmatch.lab.live import LIVE_LIMITS, SUITES, plan, run_live, runner_for
from dropmatch.lab.report import paper_comparison, summary, table_html, write_report
from dropmatch.lab.sweep import MANIFEST, TABLE, load_sweep
from ui.common import PAIR_CHOICES, PAIRS, ROOT, Parts, bind, gpu, model_pair, parts, pick, updates, user_errors
from viz.sweep import FIGURES, relevant

SWEEP = ROOT / "assets/sweep"  # the recorded sweep the tab opens with
LIVE_INPUTS = ("live_suite", "prompts", "factor", "values", "max_new_tokens", "pair")
# What /open_sweep returns, in order (one plot per FIGURES entry); /sweep also clears the recorded-sweep choice.
SWEEP_OUTPUTS = ("note", "compare", *FIGURES, "summary", "files")
LIVE_OUTPUTS = (*SWEEP_OUTPUTS, "suite")
PLOT_ROWS = ("tau_vs_p_drop", "tau_vs_k"), ("speedup_vs_gamma", "category_bars"), ("score_vs_tau", "lossiness_vs_tau")


# ---- the recorded sweep -------------------------------------------------------------------------
def recorded_manifest() -> dict:
    """The recorded sweep's sweep.json: per suite, its run settings and design (empty when there is none)."""
    path = SWEEP / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def recorded_suites() -> list[str]:
    """Suites of the recorded sweep, the one with the most varied values first (it has the most to show)."""
    manifest = recorded_manifest()

    def varied(suite: str) -> int:
        return sum(len(v or []) for v in ((manifest[suite].get("design") or {}).get("grid") or {}).values())

    return sorted(manifest, key=varied, reverse=True)


def recorded_note(suite: str, df: pd.DataFrame) -> str:
    """Where a recorded sweep's numbers come from: its size, run settings and the machine that timed it."""
    entry = recorded_manifest().get(suite, {})
    run, env = entry.get("run", {}), (entry.get("design") or {}).get("environment", {})
    settings = df[["method", "gamma", "K", "p_drop", "criterion"]].drop_duplicates()
    machine = f"{env.get('device', '?')}, {env.get('threads', '?')} thread(s), torch {env.get('torch', '?')}"
    return (f"**Recorded sweep · {suite}**: {df['prompt_id'].nunique()} prompts × {len(settings)} settings "
            f"({len(df)} cells), up to {run.get('max_new_tokens')} new tokens, {run.get('dtype')}, timed on {machine}. "
            "Read from `assets/sweep`: no model needed. Hover a column name for its definition.")  # fmt: skip


def recorded_files() -> list[str]:
    return [str(SWEEP / "report.html"), str(SWEEP / TABLE)]


def content(df: pd.DataFrame) -> dict:
    """The paper comparison, one figure per FIGURES entry (None where it has nothing to show), the summary."""
    shown = set(relevant(df)) if len(df) else set()
    return {
        "compare": table_html(paper_comparison(df)) if len(df) else "",
        **{name: FIGURES[name](df) if name in shown else None for name in FIGURES},
        "summary": table_html(summary(df).drop(columns=["suite"])) if len(df) else "",
    }


def sweep_views(a: Parts, df: pd.DataFrame, note: str, files: list[str]) -> dict:
    """Every SWEEP_OUTPUTS part for one sweep table: note, comparison, figures (hidden where empty), summary, files."""
    c = content(df)
    plots = {name: gr.Plot(value=c[name], visible=c[name] is not None) for name in FIGURES}
    return updates(a, {"note": note, "compare": c["compare"], **plots, "summary": c["summary"], "files": files})


# ---- handlers -----------------------------------------------------------------------------------
def open_recorded_sweep(a: Parts, suite: str) -> dict:
    suites = recorded_suites()
    if suite not in suites:
        raise gr.Error(f"No recorded sweep named {suite!r}; choose one of {', '.join(suites) or 'none'}.")
    df = load_sweep(SWEEP)
    part = df[df["suite"] == suite]
    return sweep_views(a, part, recorded_note(suite, part), recorded_files())


@gpu(duration=300)
def cells(p, pair: str, folder: Path):
    """Load the pair and run the plan's cells in `folder`: (finished, total, row) after each."""
    models = model_pair(pair)
    with user_errors():
        yield from run_live(p, folder, runner_for(p, models))


def live_sweep(a: Parts, suite, prompts, factor, values, max_new_tokens, pair):
    """A small one-factor sweep on the chosen pair, within LIVE_LIMITS, shown after every cell."""
    target, draft = PAIRS.get(pair, ("", ""))
    with user_errors():
        p = plan(suite, prompts, factor, values, max_new_tokens,
                 {"dtype": "bfloat16", "target_id": target, "draft_id": draft})  # fmt: skip
    # the recorded-sweep choice is cleared: picking a suite again brings the recorded sweep back
    yield updates(a, {"note": f"**Live sweep** · {p.describe()} · loading the model pair…", "suite": None})
    folder = Path(tempfile.mkdtemp(prefix="dropmatch-sweep-"))
    for done, total, row in cells(p, pair, folder):
        df = load_sweep(folder)
        df.to_csv(folder / TABLE, index=False)
        note = f"**Live sweep** · {done}/{total} cells · last: `{row['key']}`, tau {row['tau']:.2f}"
        yield sweep_views(a, df, note, [str(folder / TABLE)])
    report = write_report(folder)
    note = f"**Live sweep done** · {p.describe()} · {suite}. Download the report and the per-prompt table below."
    yield sweep_views(a, load_sweep(folder), note, [str(report), str(folder / TABLE)])


# ---- layout and events --------------------------------------------------------------------------
def _live_controls() -> dict:
    """The live sweep's inputs and buttons, in a closed accordion."""
    a = {}
    with gr.Accordion("Run a small sweep live", open=False, elem_id="lab-live"):
        with gr.Row():
            a["live_suite"] = gr.Dropdown(list(SUITES), value="mini_spec_bench", label="suite")
            a["prompts"] = gr.Slider(*LIVE_LIMITS["prompts"], value=3, step=1, label="prompts",
                                     info="spread over the suite's categories")  # fmt: skip
            a["factor"] = gr.Radio(list(FACTORS), value="p_drop", label="vary")
            a["values"] = gr.Textbox("0,0.3,0.5", label="values", info="comma-separated", elem_id="lab-values")
        with gr.Row():
            a["max_new_tokens"] = gr.Slider(*LIVE_LIMITS["max_new_tokens"], value=32, step=8,
                                            label="max new tokens")  # fmt: skip
            a["pair"] = gr.Dropdown(PAIR_CHOICES, value="embedded", label="Model pair", scale=2)
            a["run"] = gr.Button("▶ Run sweep", variant="primary", elem_id="lab-run")
            a["stop"] = gr.Button("■ Stop", variant="stop", elem_id="lab-stop")
        gr.Markdown(f"At most {LIVE_LIMITS['cells']} cells (prompts × settings) and "
                    f"{LIVE_LIMITS['tokens']} generated tokens in all; lossless runs once per γ.")  # fmt: skip
    return a


def layout() -> Parts:
    """The tab's contents (inside its gr.Tab), showing the first recorded suite at once."""
    suites = recorded_suites()
    part = load_sweep(SWEEP).query("suite == @suites[0]") if suites else pd.DataFrame()
    first = content(part)
    gr.Markdown("Sweeps over prompt suites: DropMatch at each setting against lossless on the same prompt and γ, "
                f"one factor at a time around the paper's setting (γ {PAPER_SETTING['gamma']}, K {PAPER_SETTING['K']}, "
                f"p_drop {PAPER_SETTING['p_drop']}, {PAPER_SETTING['criterion']}). The command line runs any size: "
                "`python -m dropmatch sweep`, then `python -m dropmatch report`.")  # fmt: skip
    a = {"suite": gr.Radio(suites, value=suites[0] if suites else None, label="Recorded sweep", elem_id="lab-suite")}
    a |= _live_controls()
    note = recorded_note(suites[0], part) if suites else "No recorded sweep in `assets/sweep`: run one live."
    a["note"] = gr.Markdown(note, elem_id="lab-note")
    a["compare"] = gr.HTML(first["compare"], label="Comparison with the paper", elem_id="lab-compare")
    for row in PLOT_ROWS:
        with gr.Row():
            for name in row:
                a[name] = gr.Plot(first[name], visible=first[name] is not None, show_label=False, elem_id=f"lab-{name}")
    a["summary"] = gr.HTML(first["summary"], elem_id="lab-summary")
    a["files"] = gr.File(recorded_files() if suites else None, label="Report (HTML) and per-prompt table (CSV)",
                         file_count="multiple", interactive=False, elem_id="lab-files")  # fmt: skip
    return parts(a)


def wire(a: Parts) -> None:
    """The tab's events: /open_sweep (a recorded suite) and /sweep (a live sweep, streamed; Stop cancels it)."""
    a["suite"].input(bind(open_recorded_sweep, a), a["suite"], pick(a, SWEEP_OUTPUTS), api_name="open_sweep")
    sweep = a["run"].click(bind(live_sweep, a), pick(a, LIVE_INPUTS), pick(a, LIVE_OUTPUTS), api_name="sweep",
                           concurrency_id="model")  # fmt: skip
    a["stop"].click(None, None, None, cancels=[sweep])
