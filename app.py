"""DropMatch Explorer, the Gradio app: why each draft token was accepted or rejected, DropMatch beside lossless."""

from __future__ import annotations

import json
import socket
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import gradio as gr
import pandas as pd

import viz
from dropmatch import lab
from dropmatch.config import DecodeConfig, bounded_int
from dropmatch.criteria import CRITERIA
from dropmatch.decode import stream
from dropmatch.metrics import compare, compute, token_table
from dropmatch.models import DEFAULT_DRAFT, DEFAULT_TARGET, HUB_PAIR, default_device, load_pair
from dropmatch.report import paper_comparison, summary, table_html, write_report
from dropmatch.sweep import CENTRE, FACTORS, MANIFEST, TABLE, load_sweep
from dropmatch.trace import Trace
from viz.summary import RUNS, divergence, status_line, traces_from_data
from viz.sweep import FIGURES, relevant

try:
    import spaces
except ImportError:
    spaces = None

ROOT = Path(__file__).resolve().parent
PAPER = "https://arxiv.org/abs/2603.03333"
PAIRS = {"embedded": (DEFAULT_TARGET, DEFAULT_DRAFT), "hub": HUB_PAIR}
PAIR_CHOICES = [
    ("Embedded: Qwen2.5-Coder 1.5B target, 0.5B draft (offline)", "embedded"),
    (f"Hub: {HUB_PAIR[0]} + {HUB_PAIR[1].split('/')[-1]} (needs huggingface.co)", "hub"),
]
LIMITS = {"prompt_chars": 4000, "max_new_tokens": (1, 256), "gamma": (1, 12), "K": (1, 16), "seed": (0, 2**31 - 1)}
RECORDED = {name: ROOT / f"assets/traces/story_{name.lower()}.json" for name in RUNS}
SWEEP = ROOT / "assets/sweep"  # the recorded sweep the Analysis tab opens with
CLICK = "Click a token of either output to inspect it."
N_VIEWS, STATUS_AT = 8, 6  # views(): 2 texts, 2 maps, table, figure, status, state


def gpu(fn=None, *, duration: int = 120):
    """Request a ZeroGPU slot for `fn` where the `spaces` package exists; unchanged elsewhere."""
    if fn is None:
        return lambda f: gpu(f, duration=duration)
    return spaces.GPU(duration=duration)(fn) if spaces is not None else fn


# ---- validation and loading ---------------------------------------------------------------------
def _int(name: str, value, lo: int, hi: int) -> int:
    try:
        return bounded_int(name, value, lo, hi)
    except ValueError as err:
        raise gr.Error(str(err)) from None


def _float(name: str, value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise gr.Error(f"{name} must be a number; got {value!r}") from None


def configs(gamma, K, p_drop, criterion, mode, temperature, max_new_tokens, seed) -> dict[str, DecodeConfig]:
    """The two configs (same draft, same seed, full evidence); library ValueErrors become gr.Error."""
    shared = {
        "gamma": _int("gamma", gamma, *LIMITS["gamma"]),
        "K": _int("K", K, *LIMITS["K"]),
        "max_new_tokens": _int("max new tokens", max_new_tokens, *LIMITS["max_new_tokens"]),
        "seed": _int("seed", seed, *LIMITS["seed"]),
        "p_drop": _float("p_drop", p_drop),
        "temperature": _float("temperature", temperature),
        "criterion": criterion,
        "mode": mode,
        "evidence": True,
    }
    try:
        return {name: DecodeConfig(method=method, **shared) for name, method in zip(RUNS, ("dropmatch", "lossless"))}
    except ValueError as err:
        raise gr.Error(str(err)) from None


def check_prompt(prompt) -> str:
    if not isinstance(prompt, str) or not prompt.strip():
        raise gr.Error("Type a prompt or pick an example first.")
    if len(prompt) > LIMITS["prompt_chars"]:
        raise gr.Error(f"The prompt has {len(prompt)} characters; the limit is {LIMITS['prompt_chars']}.")
    return prompt


def _hub_ready(timeout: float = 3.0) -> bool:
    """The hub pair can load when both models are cached locally or the hub answers."""
    from huggingface_hub import constants, try_to_load_from_cache

    if all(isinstance(try_to_load_from_cache(repo, "config.json"), str) for repo in HUB_PAIR):
        return True
    if constants.HF_HUB_OFFLINE:
        return False
    try:
        socket.create_connection((urlparse(constants.ENDPOINT).hostname, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def model_pair(pair: str):
    """The cached pair in bfloat16 (on CUDA where present); every failure is a clear gr.Error."""
    if pair not in PAIRS:
        raise gr.Error(f"model pair must be one of {', '.join(PAIRS)}; got {pair!r}")
    if pair == "hub" and not _hub_ready():
        raise gr.Error("The hub pair needs huggingface.co, which this machine cannot reach. Use the embedded pair.")
    try:
        return load_pair(*PAIRS[pair], dtype="bfloat16", device=default_device())
    except (ValueError, OSError) as err:
        raise gr.Error(f"Cannot load the {pair} pair: {err}") from None


# ---- outputs ------------------------------------------------------------------------------------
def views(traces: dict, note: str, live: bool = False) -> tuple:
    """Both coloured texts, both accept/reject maps, the metrics table and figure, the status, the state.

    While a run streams (`live`), the metrics table and figure wait for the end: each round stays cheap.
    """
    cut = divergence(traces)
    texts = [viz.spans(traces[n], cut)[0] if traces.get(n) else [] for n in RUNS]
    maps = [viz.reason_heatmap(traces.get(n), f"{n}: accept / reject per round") for n in RUNS]
    if live:
        return (*texts, *maps, gr.skip(), gr.skip(), note, traces)
    table = viz.metrics_frame({n: traces.get(n) for n in RUNS})
    return (*texts, *maps, table, viz.acceptance_figure(traces), note, traces)


def downloads(traces: dict) -> list[str]:
    """Each trace as JSON (Trace.to_json) and its per-token table as CSV, in a fresh temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="dropmatch-"))
    paths = []
    for name, trace in traces.items():
        json_path, csv_path = folder / f"{name.lower()}_trace.json", folder / f"{name.lower()}_tokens.csv"
        trace.to_json(json_path)
        token_table(trace).to_csv(csv_path, index=False)
        paths += [str(json_path), str(csv_path)]
    return paths


def step_view(traces: dict, run_name: str, t: int = 0, stage: int = 0) -> tuple:
    trace = (traces or {}).get(run_name)
    return viz.round_story(trace, t, stage), viz.round_figure(trace, t, stage), [t, stage]


def step(traces: dict, run_name: str, pos, delta: int) -> tuple:
    trace = (traces or {}).get(run_name)
    if trace is None or not trace.rounds:
        raise gr.Error(f"No {run_name} trace yet: run a prompt or open a trace first.")
    t, stage = viz.move(trace, int(pos[0]), int(pos[1]), delta)
    return step_view(traces, run_name, t, stage)


def finished(traces: dict, note: str) -> tuple:
    """Every run output once a run ends or traces are opened: views, downloads, the step view at round 1."""
    first = next((n for n in RUNS if n in traces), RUNS[0])
    return (*views(traces, note), downloads(traces), *step_view(traces, first), first)


def only_status(note: str) -> tuple:
    return tuple(note if i == STATUS_AT else gr.skip() for i in range(N_VIEWS + 5))


# ---- events -------------------------------------------------------------------------------------
def interleave(iterators: dict):
    """Advance each run by one round in turn, yielding (name, trace), until all are done."""
    live = dict(iterators)
    while live:
        for name in list(live):
            try:
                trace = next(live[name])
            except StopIteration:
                del live[name]
                continue
            except ValueError as err:
                raise gr.Error(str(err)) from None
            yield name, trace


def validate(prompt, *settings) -> tuple[str, dict[str, DecodeConfig]]:
    """The prompt and the two configs, or a clear gr.Error before anything loads."""
    return check_prompt(prompt), configs(*settings)


def open_streams(pair: str, prompt: str, cfgs: dict, chat) -> dict:
    """Load the pair and open one round-by-round stream per run (the same draft and seed for both)."""
    models = model_pair(pair)
    try:
        return {name: stream(models, prompt, cfg, bool(chat)) for name, cfg in cfgs.items()}
    except ValueError as err:
        raise gr.Error(str(err)) from None


@gpu
def run(prompt, chat, pair, gamma, K, p_drop, criterion, mode, temperature, max_new_tokens, seed):
    """DropMatch and lossless on the same prompt, draft and seed, streamed side by side round by round."""
    prompt, cfgs = validate(prompt, gamma, K, p_drop, criterion, mode, temperature, max_new_tokens, seed)
    yield only_status("**Loading the model pair…**")
    iters = open_streams(pair, prompt, cfgs, chat)
    clock, traces = time.perf_counter(), {}
    for name, trace in interleave(iters):
        traces[name] = trace
        note = status_line(traces, "Running", time.perf_counter() - clock)
        yield *views(traces, note, live=True), *(gr.skip(),) * 5
    yield finished(traces, status_line(traces, "Done", time.perf_counter() - clock))


def stopped(traces: dict) -> tuple:
    """After Stop: the partial traces get their downloads and step view."""
    if not traces:
        return only_status("Stopped")
    return finished(traces, status_line(traces, "Stopped"))


def open_files(files) -> tuple:
    """Re-open downloaded traces (or a /trace result); a bad file is a clear gr.Error."""
    traces = {}
    for path in [files] if isinstance(files, str) else files or []:
        try:
            traces.update(traces_from_data(json.loads(Path(path).read_text(encoding="utf-8"))))
        except (ValueError, UnicodeDecodeError) as err:
            raise gr.Error(f"{Path(path).name}: {err}") from None
    if not traces:
        raise gr.Error("Upload a trace JSON file (downloaded from this app, or returned by /trace).")
    return finished(traces, status_line(traces, "Opened from file"))


def open_recorded() -> tuple:
    traces = {name: Trace.from_json(path) for name, path in RECORDED.items()}
    return finished(traces, status_line(traces, "Recorded example (no model needed)"))


def inspect(traces: dict, run_name: str, index) -> tuple:
    """Caption and the three inspector figures for the token at span `index` of one run's output."""
    trace = (traces or {}).get(run_name)
    if trace is None:
        raise gr.Error("Run a prompt or open a trace first.")
    _, records = viz.spans(trace, divergence(traces))
    if isinstance(index, (list, tuple)):
        index = index[0]
    if not isinstance(index, int) or not 0 <= index < len(records):
        raise gr.Error(f"No token at index {index!r} in the {run_name} output.")
    rec = trace.records[records[index]]
    ev = viz.evidence_record(trace, rec)
    note = f"**{run_name}** · {viz.caption(trace, rec)}"
    return note, viz.distribution_heatmap(ev, rec if ev is not rec else None), viz.js_figure(ev), viz.votes_figure(ev)


def on_select(run_name: str):
    """A .select handler for one run's coloured text."""

    def handler(traces: dict, evt: gr.SelectData):
        return inspect(traces, run_name, evt.index)

    return handler


@gpu
def trace_api(
    prompt: str, chat: bool = False, pair: str = "embedded", gamma: int = 5, K: int = 5, p_drop: float = 0.3,
    criterion: str = "js+majority", mode: str = "or", temperature: float = 0.0, max_new_tokens: int = 48, seed: int = 0,
) -> dict:
    """Decode with DropMatch and lossless; return both full traces, their metrics and their comparison."""
    prompt, cfgs = validate(prompt, gamma, K, p_drop, criterion, mode, temperature, max_new_tokens, seed)
    traces = dict(interleave(open_streams(pair, prompt, cfgs, chat)))
    out: dict = {name: t.to_dict() for name, t in traces.items()}
    out["metrics"] = {name: compute(t) for name, t in traces.items()}
    out["compare"] = compare(traces["DropMatch"], traces["lossless"])
    return out


# ---- the Analysis tab: recorded and live sweeps ---------------------------------------------------
def lab_content(df: pd.DataFrame) -> dict:
    """The paper comparison, one figure per FIGURES entry (None where it has nothing to show), the summary."""
    shown = set(relevant(df)) if len(df) else set()
    return {
        "compare": table_html(paper_comparison(df)) if len(df) else "",
        "figures": {name: FIGURES[name](df) if name in shown else None for name in FIGURES},
        "summary": table_html(summary(df).drop(columns=["suite"])) if len(df) else "",
    }


def lab_views(df: pd.DataFrame, note: str, files: list[str]) -> tuple:
    """The Analysis tab's outputs: note, comparison, figures (hidden where empty), summary, files."""
    c = lab_content(df)
    plots = [gr.Plot(value=fig, visible=fig is not None) for fig in c["figures"].values()]
    return (note, c["compare"], *plots, c["summary"], files)


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


def open_recorded_sweep(suite: str) -> tuple:
    suites = recorded_suites()
    if suite not in suites:
        raise gr.Error(f"No recorded sweep named {suite!r}; choose one of {', '.join(suites) or 'none'}.")
    df = load_sweep(SWEEP)
    part = df[df["suite"] == suite]
    return lab_views(part, recorded_note(suite, part), recorded_files())


def recorded_files() -> list[str]:
    return [str(SWEEP / "report.html"), str(SWEEP / TABLE)]


@gpu(duration=300)
def live_sweep(suite, prompts, factor, values, max_new_tokens, pair):
    """A small one-factor sweep on the chosen pair, within lab.LIVE_LIMITS, shown after every cell."""
    run = {"dtype": "bfloat16", "target_id": PAIRS.get(pair, ("", ""))[0], "draft_id": PAIRS.get(pair, ("", ""))[1]}
    try:
        plan = lab.plan(suite, prompts, factor, values, max_new_tokens, run)
    except ValueError as err:
        raise gr.Error(str(err)) from None
    skip = (gr.skip(),) * (len(FIGURES) + 3)
    # the recorded-sweep choice is cleared: picking a suite again brings the recorded sweep back
    yield f"**Live sweep** · {plan.describe()} · loading the model pair…", *skip, None
    models, folder = model_pair(pair), Path(tempfile.mkdtemp(prefix="dropmatch-sweep-"))
    try:
        for done, total, row in lab.run_live(plan, models, folder):
            df = load_sweep(folder)
            df.to_csv(folder / TABLE, index=False)
            note = f"**Live sweep** · {done}/{total} cells · last: `{row['key']}`, tau {row['tau']:.2f}"
            yield *lab_views(df, note, [str(folder / TABLE)]), gr.skip()
    except ValueError as err:
        raise gr.Error(str(err)) from None
    report = write_report(folder)
    note = f"**Live sweep done** · {plan.describe()} · {suite}. Download the report and the per-prompt table below."
    yield *lab_views(df, note, [str(report), str(folder / TABLE)]), gr.skip()


# ---- layout -------------------------------------------------------------------------------------
def _controls() -> dict:
    """Prompt, model pair and decoding settings, each with its limits."""
    c = {}
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            c["prompt"] = gr.Textbox(label="Prompt", lines=5, max_length=LIMITS["prompt_chars"],
                                     placeholder="Type a prompt, or pick an example below.", elem_id="prompt")
            with gr.Row():
                c["chat"] = gr.Checkbox(value=True, label="Chat format", info="wrap the prompt in the chat template")
                c["pair"] = gr.Dropdown(PAIR_CHOICES, value="embedded", label="Model pair", scale=2)
            examples = json.loads((ROOT / "assets/examples.json").read_text(encoding="utf-8"))
            gr.Examples([[e["prompt"], e["chat"]] for e in examples], [c["prompt"], c["chat"]],
                        example_labels=[e["label"] for e in examples], label="Examples")
            with gr.Row():
                c["run"] = gr.Button("▶ Run", variant="primary", elem_id="run-btn")
                c["stop"] = gr.Button("■ Stop", variant="stop", elem_id="stop-btn")
                c["recorded"] = gr.Button("Open recorded example", elem_id="recorded-btn")
        with gr.Column(scale=2, elem_classes="dm-settings"):
            with gr.Row():
                c["gamma"] = gr.Slider(*LIMITS["gamma"], value=5, step=1, label="γ (draft length)")
                c["K"] = gr.Slider(*LIMITS["K"], value=5, step=1, label="K (dropout paths)")
            with gr.Row():
                c["p_drop"] = gr.Slider(0.0, 0.95, value=0.3, step=0.05, label="p_drop",
                                        info="dropout on the LM-head input")
                c["temperature"] = gr.Slider(0.0, 2.0, value=0.0, step=0.05, label="temperature", info="0 = greedy")
            with gr.Row():
                c["criterion"] = gr.Dropdown(list(CRITERIA), value="js+majority", label="criterion")
                c["mode"] = gr.Radio(["or", "replace"], value="or", label="mode", info="or: lossless OR criterion")
            with gr.Row():
                c["max_new_tokens"] = gr.Slider(*LIMITS["max_new_tokens"], value=48, step=1, label="max new tokens",
                                                elem_id="max-new-tokens")
                c["seed"] = gr.Number(value=0, precision=0, minimum=0, maximum=LIMITS["seed"][1], label="seed")
    return c


def _outputs() -> dict:
    """The two coloured outputs and the token inspector."""
    o = {"status": gr.Markdown("Pick an example and press **Run**, or open the recorded example.", elem_id="status")}
    gr.HTML(viz.legend_html(), padding=False)
    with gr.Row(equal_height=True):
        for name in RUNS:
            o[name] = gr.HighlightedText(
                label=f"{name} output · click a token to inspect it", color_map=viz.text_color_map(),
                show_legend=False, show_inline_category=False, combine_adjacent=False,
                elem_id=f"out-{name.lower()}", elem_classes="dm-output",
            )
    with gr.Group(elem_id="inspector"):
        o["caption"] = gr.Markdown("**Token inspector** · click any token above.", elem_classes="dm-caption")
        with gr.Row():
            o["heat"] = gr.Plot(viz.message_figure(CLICK, "Top-N probabilities per head"), show_label=False,
                                elem_id="insp-heatmap")
        with gr.Row():
            o["js"] = gr.Plot(viz.message_figure(CLICK, "JS test (nats)"), show_label=False, scale=2, elem_id="insp-js")
            o["votes"] = gr.Plot(viz.message_figure(CLICK, "Votes of the K paths"), show_label=False, scale=3,
                                 elem_id="insp-votes")
    return o


def _tabs() -> dict:
    """Accept/reject maps, metrics, step-through, files, and the explanation."""
    t = {}
    with gr.Tabs():
        with gr.Tab("Accept / reject map"):
            with gr.Row():
                t["maps"] = [gr.Plot(viz.message_figure("No rounds yet.", f"{n}: accept / reject per round"),
                                     show_label=False, elem_id=f"map-{n.lower()}") for n in RUNS]
        with gr.Tab("Metrics"):
            t["table"] = gr.Dataframe(label="Metrics (dropmatch.metrics), each with its definition", wrap=True,
                                      interactive=False, elem_id="metrics")
            t["acceptance"] = gr.Plot(viz.message_figure("No rounds yet.", ""), show_label=False, elem_id="acceptance")
        with gr.Tab("Step through"):
            with gr.Row():
                t["step_run"] = gr.Radio(list(RUNS), value=RUNS[0], label="run", scale=2)
                t["prev"] = gr.Button("◀ Previous", elem_id="step-prev")
                t["next"] = gr.Button("Next ▶", variant="primary", elem_id="step-next")
            t["step_md"] = gr.Markdown(viz.round_story(None, 0, 0), elem_classes="dm-story")
            t["step_fig"] = gr.Plot(viz.round_figure(None, 0, 0), show_label=False, elem_id="step-fig")
        with gr.Tab("Files"), gr.Row():
            t["files"] = gr.File(label="Downloads: traces as JSON, per-token tables as CSV", file_count="multiple",
                                 interactive=False, elem_id="downloads")
            t["upload"] = gr.File(label="Open trace JSON (one or both runs)", file_count="multiple",
                                  file_types=[".json"], elem_id="upload")
        with gr.Tab("Analysis", elem_id="analysis-tab"):
            t["lab"] = _analysis()
        with gr.Tab("How DropMatch works"):
            gr.Markdown(viz.how_it_works(PAPER), latex_delimiters=[{"left": "$$", "right": "$$", "display": True}])
            gr.Markdown(viz.glossary())
    return t


def _analysis() -> dict:
    """A recorded sweep (shown at once, no model), and a small live sweep whose results replace it."""
    a, suites = {}, recorded_suites()
    part = load_sweep(SWEEP).query("suite == @suites[0]") if suites else pd.DataFrame()
    first = lab_content(part)
    gr.Markdown("Sweeps over prompt suites: DropMatch at each setting against lossless on the same prompt and γ, "
                f"one factor at a time around the paper's setting (γ {CENTRE['gamma']}, K {CENTRE['K']}, "
                f"p_drop {CENTRE['p_drop']}, {CENTRE['criterion']}). The command line runs any size: "
                "`python -m dropmatch sweep`, then `python -m dropmatch report`.")  # fmt: skip
    a["suite"] = gr.Radio(suites, value=suites[0] if suites else None, label="Recorded sweep", elem_id="lab-suite")
    with gr.Accordion("Run a small sweep live", open=False, elem_id="lab-live"):
        with gr.Row():
            a["live_suite"] = gr.Dropdown(list(lab.SUITES), value="mini_spec_bench", label="suite")
            a["prompts"] = gr.Slider(*lab.LIVE_LIMITS["prompts"], value=3, step=1, label="prompts",
                                     info="spread over the suite's categories")  # fmt: skip
            a["factor"] = gr.Radio(list(FACTORS), value="p_drop", label="vary")
            a["values"] = gr.Textbox("0,0.3,0.5", label="values", info="comma-separated", elem_id="lab-values")
        with gr.Row():
            a["max_new_tokens"] = gr.Slider(*lab.LIVE_LIMITS["max_new_tokens"], value=32, step=8,
                                            label="max new tokens")
            a["pair"] = gr.Dropdown(PAIR_CHOICES, value="embedded", label="Model pair", scale=2)
            a["run"] = gr.Button("▶ Run sweep", variant="primary", elem_id="lab-run")
            a["stop"] = gr.Button("■ Stop", variant="stop", elem_id="lab-stop")
        gr.Markdown(f"At most {lab.LIVE_LIMITS['cells']} cells (prompts × settings) and "
                    f"{lab.LIVE_LIMITS['tokens']} generated tokens in all; lossless runs once per γ.")  # fmt: skip
    note = recorded_note(suites[0], part) if suites else "No recorded sweep in `assets/sweep`: run one live."
    a["note"] = gr.Markdown(note, elem_id="lab-note")
    a["compare"] = gr.HTML(first["compare"], label="Comparison with the paper", elem_id="lab-compare")
    plots = {}
    rows = ("tau_vs_p_drop", "tau_vs_k"), ("speedup_vs_gamma", "category_bars"), ("score_vs_tau", "lossiness_vs_tau")
    for row in rows:
        with gr.Row():
            for name in row:
                fig = first["figures"][name]
                plots[name] = gr.Plot(fig, visible=fig is not None, show_label=False, elem_id=f"lab-{name}")
    a["plots"] = [plots[name] for name in FIGURES]  # the order lab_views returns them in
    a["summary"] = gr.HTML(first["summary"], elem_id="lab-summary")
    a["files"] = gr.File(recorded_files() if suites else None, label="Report (HTML) and per-prompt table (CSV)",
                         file_count="multiple", interactive=False, elem_id="lab-files")  # fmt: skip
    return a


def build_demo() -> gr.Blocks:
    """The whole app; nothing runs until it is launched."""
    with gr.Blocks(title="DropMatch Explorer") as demo:
        traces, step_pos = gr.State({}), gr.State([0, 0])
        gr.Markdown(f"# DropMatch Explorer\nWhy every draft token was accepted or rejected: DropMatch "
                    f"([arXiv 2603.03333]({PAPER})) beside lossless speculative decoding, same draft, same seed.",
                    elem_id="header")
        c, o, t = _controls(), _outputs(), _tabs()
        inputs = [c[k] for k in ("prompt", "chat", "pair", "gamma", "K", "p_drop", "criterion", "mode",
                                 "temperature", "max_new_tokens", "seed")]
        outputs = [o["DropMatch"], o["lossless"], *t["maps"], t["table"], t["acceptance"], o["status"], traces,
                   t["files"], t["step_md"], t["step_fig"], step_pos, t["step_run"]]
        go = c["run"].click(run, inputs, outputs, api_name="run", concurrency_id="model", show_progress="minimal")
        c["stop"].click(stopped, traces, outputs, cancels=[go], api_visibility="private")
        c["recorded"].click(open_recorded, None, outputs, api_name="open_recorded")
        t["upload"].upload(open_files, t["upload"], outputs, api_name="open_files")
        inspector = [o["caption"], o["heat"], o["js"], o["votes"]]
        for name in RUNS:
            o[name].select(on_select(name), traces, inspector, api_visibility="private")
        step_out = [t["step_md"], t["step_fig"], step_pos]
        step_in = [traces, t["step_run"], step_pos]
        t["prev"].click(lambda tr, r, p: step(tr, r, p, -1), step_in, step_out, api_visibility="private")
        t["next"].click(lambda tr, r, p: step(tr, r, p, 1), step_in, step_out, api_visibility="private")
        t["step_run"].change(step_view, [traces, t["step_run"]], step_out, api_visibility="private")
        gr.api(trace_api, api_name="trace", concurrency_id="model")
        a = t["lab"]
        lab_out = [a["note"], a["compare"], *a["plots"], a["summary"], a["files"]]
        a["suite"].input(open_recorded_sweep, a["suite"], lab_out, api_name="open_sweep")
        lab_in = [a[k] for k in ("live_suite", "prompts", "factor", "values", "max_new_tokens", "pair")]
        sweep = a["run"].click(live_sweep, lab_in, [*lab_out, a["suite"]], api_name="sweep", concurrency_id="model")
        a["stop"].click(None, None, None, cancels=[sweep])
    demo.queue(default_concurrency_limit=1, max_size=16)
    return demo


def launch_options() -> dict:
    """Theme and css go to launch() in Gradio 6."""
    theme = gr.themes.Soft(primary_hue="violet", neutral_hue="slate")
    return {"theme": theme, "css_paths": [ROOT / "assets/app.css"]}


if __name__ == "__main__":
    model_pair("embedded")  # load before serving, so the first Run streams at once (ZeroGPU wants this too)
    build_demo().launch(**launch_options())
