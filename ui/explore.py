"""The Explore view: prompt and controls, the two coloured outputs, inspector, maps, metrics, step-through, files."""

from __future__ import annotations

import html
import json
import time
from contextlib import closing

import gradio as gr

import viz
from dropmatch.config import MODES, RANGES, SETTINGS, bound, check_setting
from dropmatch.criteria import RULES
from dropmatch.decode import cpu_environment, cpu_name
from dropmatch.metrics import compute
from dropmatch.models import default_device
from ui import compare, runs
from ui.common import (
    APP_LIMITS,
    APP_PROMPT_CHARS,
    CRITERION_CHOICES,
    DEFAULTS,
    PAIR_CHOICES,
    PAIR_INFO,
    PAIRS,
    Parts,
    Stops,
    UserError,
    bind,
    check_chat,
    check_pair,
    check_prompt,
    configs,
    default_pair,
    draft_quant_choices,
    gpu_request_note,
    parts,
    pick,
    session_of,
    start_failure,
    takes_settings,
    updates,
    zero_gpu,
    zero_gpu_factor,
)
from viz.summary import RUNS, display_name, divergence, measure, run_names, status_line

CLICK = "Click a token of either output to inspect it."
# Below the status line: the way to the prompt and the settings, one tap (they sit below the answer).
CHANGE = "[Change the prompt or the settings ↓](#controls) · tap a token to see why it got its colour"
RUN_INPUTS = ("prompt", "chat", "pair", *SETTINGS)
STATES = ("traces", "step_pos")  # session state: not sent to API clients
# What /run, /open_files and /open_recorded update, in their order; RUN_OUTPUTS is what a client receives.
# The maps show each run's own decisions again after a run or an opened file ("recolour" goes back to it).
RUN_WIRING = (
    "DropMatch",
    "lossless",
    "map_DropMatch",
    "map_lossless",
    "table",
    "acceptance",
    "status",
    "traces",
    "files",
    "step_md",
    "step_fig",
    "step_pos",
    "step_run",
    "recolour",
)
RUN_OUTPUTS = tuple(name for name in RUN_WIRING if name not in STATES)
INSPECTOR = ("caption", "heat", "js", "votes", "rules", "selected")
STEP = ("step_md", "step_fig", "step_pos")


# ---- layout -------------------------------------------------------------------------------------
def _slider(name: str, step: float, **kwargs) -> gr.Slider:
    """A setting's slider: its range from the config (within APP_LIMITS; a step short of an open end), its start
    DEFAULTS."""
    b = bound(name, APP_LIMITS)
    return gr.Slider(b.lo, b.hi - step if b.hi_open else b.hi, value=DEFAULTS[name], step=step, **kwargs)


def _settings() -> dict:
    """The decoding settings, each with its limits and its default."""
    c = {}
    with gr.Row():
        c["gamma"] = _slider("gamma", 1, label="γ (draft length)")
        c["K"] = _slider("K", 1, label="K (dropout paths)")
    with gr.Row():
        c["p_drop"] = _slider("p_drop", 0.05, label="p_drop", info="dropout on the LM-head input")
        c["temperature"] = _slider("temperature", 0.05, label="temperature", info="0 = greedy")
    with gr.Row():
        c["criterion"] = gr.Dropdown(
            CRITERION_CHOICES,
            value=DEFAULTS["criterion"],
            label="criterion",
            info="DropMatch on the K paths (reads the dropout paths), or a relative that reads the target only or "
            "compares draft and target (each rule's family: the inspector's every-rule table)",
            scale=2,
            min_width=300,  # on a phone the menu takes the row and the knob goes below: no clipped names
            elem_id="criterion",
        )
        # A textbox, not gr.Number: a Number shows and sends 0 when empty, and 0 is a real knob (typical's epsilon 0
        # accepts every draft) where empty means the rule's default.
        c["knob"] = gr.Textbox(
            "", label="knob", placeholder="default", info="a relative's setting; empty = its default", elem_id="knob"
        )
    with gr.Row():
        c["mode"] = gr.Radio(list(MODES), value=DEFAULTS["mode"], label="mode", info="or: lossless OR criterion")
        c["span_gate"] = gr.Checkbox(
            DEFAULTS["span_gate"],
            label="span gate",
            info="relax only inside comments, strings and whitespace (a chat turn: never on a digit)",
            elem_id="span-gate",
        )
    with gr.Row():
        c["max_new_tokens"] = _slider("max_new_tokens", 1, label="max new tokens", elem_id="max-new-tokens")
        seeds = RANGES["seed"]
        c["seed"] = gr.Number(value=DEFAULTS["seed"], precision=0, minimum=seeds.lo, maximum=seeds.hi, label="seed")
    with gr.Accordion("Engine", open=False):
        c["draft_quant"] = gr.Radio(
            draft_quant_choices(),  # on ZeroGPU only the draft loaded at start
            value=DEFAULTS["draft_quant"],
            label="draft weights",
            info="int8 / int4: the draft's linear layers in 8 or 4 bits (faster on a CPU; int4 on a CPU only; the "
            "target still verifies every token, so lossless stays exact)",
        )
    return c


def _controls() -> dict:
    """Prompt, examples, model pair, the buttons and the decoding settings."""
    c = {}
    with gr.Row(equal_height=False, elem_id="controls"):
        with gr.Column(scale=3):
            c["prompt"] = gr.Textbox(
                label="Prompt",
                lines=5,
                max_length=APP_PROMPT_CHARS,
                placeholder="Type a prompt, or pick an example below.",
                elem_id="prompt",
            )
            with gr.Row():
                c["chat"] = gr.Checkbox(value=True, label="Chat format", info="wrap the prompt in the chat template")
                c["pair"] = gr.Dropdown(PAIR_CHOICES, value=default_pair(), label="Model pair", info=PAIR_INFO, scale=2)
            examples = runs.examples()
            c["examples"] = gr.Examples(
                [[e["prompt"], e["chat"]] for e in examples],
                [c["prompt"], c["chat"]],
                example_labels=[e["label"] for e in examples],
                label="Examples (each opens its recorded runs at once; Run decodes it live)",
            )
            with gr.Row():
                c["run"] = gr.Button("▶ Run", variant="primary", elem_id="run-btn")
                c["stop"] = gr.Button("■ Stop", variant="stop", elem_id="stop-btn", interactive=False)
                c["recorded"] = gr.Button("Open recorded example", elem_id="recorded-btn")
            if zero_gpu():  # what a run asks of the visitor's daily GPU quota, before it is pressed
                at_start = runs.gpu_seconds(default_pair(), "", configs(DEFAULTS), True)
                gr.Markdown(
                    f"{gpu_request_note(at_start, zero_gpu_factor(), 'a run at these settings')} More tokens ask "
                    "for more; the status line says what each run asks for.",
                    elem_classes="dm-note",
                    elem_id="gpu-note",
                )
        with gr.Column(scale=2, elem_classes="dm-settings"):
            c |= _settings()
    return c


def _answer() -> dict:
    """What the first screen shows: the two coloured outputs (what the colours mean one tap above them), the token
    hovers' data and the status line below them."""
    o = {}
    # open on a desktop, folded on a phone (assets/app.html opens it where the page is wide)
    gr.HTML(
        f"<details class='dm-legend-box'><summary>What the colours mean</summary>{viz.legend_html()}</details>",
        padding=False,
        elem_id="legend",
    )
    with gr.Row(equal_height=True):
        for name in RUNS:
            o[name] = gr.HighlightedText(
                label=output_label(name),
                color_map=viz.text_color_map(),
                show_legend=False,
                show_inline_category=False,
                combine_adjacent=False,
                elem_id=f"out-{name.lower()}",
                elem_classes="dm-output",
            )
    o["hovers"] = gr.HTML(
        "", elem_id="dm-hovers", visible="hidden"
    )  # data for the tokens' hover text (assets/app.html)
    o["status"] = gr.Markdown("Pick an example and press **Run**, or open the recorded example.", elem_id="status")
    gr.Markdown(CHANGE, elem_classes="dm-note", elem_id="to-controls")
    return o


def _inspector() -> dict:
    """The plain texts and the token inspector."""
    o = {}
    with gr.Accordion("Plain text, to copy", open=False, elem_id="plain"), gr.Row():
        for name in RUNS:
            o[f"plain_{name}"] = gr.Textbox(
                label=f"{name} text", lines=3, interactive=False, buttons=["copy"], elem_id=f"plain-{name.lower()}"
            )
    # the id on a Column: Gradio's Group writes its elem_id on two nested elements (two elements with one id)
    with gr.Column(elem_id="inspector"), gr.Group():
        o["caption"] = gr.Markdown("**Token inspector** · click any token above.", elem_classes="dm-caption")
        with gr.Row():
            o["heat"] = gr.Plot(
                viz.message_figure(CLICK, "Top-N probabilities per head"), show_label=False, elem_id="insp-heatmap"
            )
        with gr.Row():
            # min_width: on a phone the two charts stack instead of sharing 390 px
            o["js"] = gr.Plot(
                viz.message_figure(CLICK, "The test of the rule that ran"),
                show_label=False,
                scale=2,
                min_width=340,
                elem_id="insp-js",
            )
            o["votes"] = gr.Plot(
                viz.message_figure(CLICK, "What the rule read"),
                show_label=False,
                scale=3,
                min_width=340,
                elem_id="insp-votes",
            )
        o |= compare.panel()
    return o


def main() -> dict:
    """Everything above the tabs, the answer first (the two outputs, then the prompt and settings that made them),
    and the session state (the traces shown, the step-through position)."""
    state = {"traces": gr.State({}), "step_pos": gr.State([0, 0])}
    return {**state, **_answer(), **_controls(), **_inspector()}


def tabs(above: dict) -> Parts:
    """The Explore tabs (inside the app's gr.Tabs): maps, metrics, step-through, files. Returns every part."""
    t = dict(above)
    with gr.Tab("Accept / reject map"):
        t |= compare.controls()
        with gr.Row():
            for n in RUNS:
                t[f"map_{n}"] = gr.Plot(
                    viz.message_figure("No rounds yet.", f"{n}: accept / reject per round"),
                    show_label=False,
                    min_width=340,
                    elem_id=f"map-{n.lower()}",
                )
    with gr.Tab("Metrics"):
        t["table"] = gr.Dataframe(
            label="Metrics (dropmatch.metrics), each with its definition",
            wrap=True,
            interactive=False,
            max_height=2000,
            pinned_columns=1,
            elem_id="metrics",
            column_widths=["170px", "96px", "96px", "520px"],  # px: on a phone the table scrolls, words stay whole
        )
        t["acceptance"] = gr.Plot(viz.message_figure("No rounds yet.", ""), show_label=False, elem_id="acceptance")
    with gr.Tab("Step through"):
        with gr.Row():
            t["step_run"] = gr.Radio(list(RUNS), value=RUNS[0], label="run", scale=2)
            t["prev"] = gr.Button("◀ Previous", elem_id="step-prev")
            t["next"] = gr.Button("Next ▶", variant="primary", elem_id="step-next")
        t["step_fig"] = gr.Plot(viz.round_figure(None, 0, 0), show_label=False, elem_id="step-fig")
        t["step_md"] = gr.Markdown(viz.round_story(None, 0, 0), elem_classes="dm-story")
    with gr.Tab("Files"), gr.Row():
        t["files"] = gr.File(
            label="Downloads: traces as JSON, per-token tables as CSV",
            file_count="multiple",
            interactive=False,
            elem_id="downloads",
        )
        t["upload"] = gr.File(
            label="Open trace JSON (one or both runs)", file_count="multiple", file_types=[".json"], elem_id="upload"
        )
    return parts(t)


MAP_EVERY_S = 2.0  # while a run streams, the accept / reject maps are redrawn at most this often
STOPS = Stops()  # the sessions whose Explore Stop was pressed (the Analysis tab's Stop has its own)


# ---- handlers: each returns {component: value} for what it changes ------------------------------
def views(
    v: Parts, traces: dict, note: str, live: bool = False, maps: bool = True, measured: dict | None = None
) -> dict:
    """Both coloured texts, both accept/reject maps (unless `maps` is False), the metrics table and figure, the
    status, the state. `measured`: each run's metrics by name (viz.summary.measure), computed here where absent.

    While a run streams (`live`), the metrics table and figure wait for the end: each round stays cheap.
    """
    cut, names = divergence(traces), run_names(traces)
    out = {"status": note, "traces": traces}
    for n in RUNS:
        out[n] = viz.spans(traces[n], cut)[0] if traces.get(n) else []
        if maps:
            out[f"map_{n}"] = viz.reason_heatmap(traces.get(n), f"{names[n]}: accept / reject per round")
    if not live:
        measured = measured if measured is not None else measure(traces)
        shown = {names[n]: measured[n] for n in RUNS if n in measured}
        out["table"] = viz.metrics_frame({names[n]: traces.get(n) for n in RUNS}, measured=shown)
        out["acceptance"] = viz.acceptance_figure(traces, measured)
    return updates(v, out)


def step_view(v: Parts, traces: dict, run_name: str, t: int = 0, stage: int = 0) -> dict:
    trace = (traces or {}).get(run_name)
    return updates(
        v,
        {
            "step_md": viz.round_story(trace, t, stage),
            "step_fig": viz.round_figure(trace, t, stage),
            "step_pos": [t, stage],
        },
    )


def step(v: Parts, traces: dict, run_name: str, pos, delta: int) -> dict:
    trace = (traces or {}).get(run_name)
    if trace is None or not trace.rounds:
        raise UserError(f"No {run_name} trace yet: run a prompt or open a trace first.")
    t, stage = viz.move(trace, int(pos[0]), int(pos[1]), delta)
    return step_view(v, traces, run_name, t, stage)


def finished(v: Parts, traces: dict, note: str, measured: dict | None = None) -> dict:
    """Every run output once a run ends or traces are opened: views, downloads, the step view at round 1."""
    first = next((n for n in RUNS if n in traces), RUNS[0])
    return {
        **views(v, traces, note, measured=measured),
        v["files"]: runs.downloads(traces),
        **step_view(v, traces, first),
        v["step_run"]: first,
        v["recolour"]: compare.OWN,
    }


@takes_settings
def check_run(prompt, chat, pair, *, settings: dict) -> list[dict]:
    """Run's validator (Gradio runs it before the request joins the queue, for the page and the API alike): one
    gr.validate per input, in RUN_INPUTS order, a bad one with its message under its control; nothing else on the
    page changes, and the request never waits in the queue to be refused."""
    problems = {}
    for name, check, value in (
        ("prompt", check_prompt, prompt),
        ("chat", check_chat, chat),
        ("pair", check_pair, pair),
    ):
        try:
            check(value)
        except UserError as err:
            problems[name] = err.message
    for name in SETTINGS:
        if name in RANGES:
            try:
                check_setting(name, settings[name], APP_LIMITS)
            except ValueError as err:
                problems[name] = str(err)
    if not problems:
        try:
            configs(settings)
        except UserError as err:  # the rule, its knob or the mode: under the control the message names
            said = next((n for n in SETTINGS if err.message.startswith(n)), None)
            problems[said or ("knob" if settings.get("knob") not in (None, "") else "criterion")] = err.message
    return [gr.validate(name not in problems, problems.get(name, "")) for name in RUN_INPUTS]


@takes_settings
def run(v: Parts, prompt, chat, pair, session: str | None = None, *, settings: dict):
    """The chosen rule (DropMatch or a relative) and lossless on the same prompt, draft and seed, streamed side by
    side round by round, until both are done or the session's Stop is pressed (then the partial runs are shown, as
    after Stop). Run stays off while the run streams; the event's last step turns it back on."""
    prompt, cfgs = runs.validate(prompt, settings)
    chat = check_chat(chat)
    STOPS.clear(session)
    busy = {v["stop"]: stop_button(True), v["run"]: gr.Button(interactive=False)}
    asks = f" · {gpu_request_note(runs.gpu_seconds(pair, prompt, cfgs, chat), zero_gpu_factor())}" if zero_gpu() else ""
    yield {v["status"]: f"**Loading the model pair…**{asks}", v["recolour"]: compare.OWN, **busy}
    clock, traces, measured, drawn = time.perf_counter(), {}, {}, float("-inf")
    try:
        with closing(runs.rounds(pair, prompt, cfgs, chat)) as stream:
            for name, trace in stream:
                # only the run that advanced has a new state: its metrics once, the other run's kept
                traces[name], measured[name] = trace, compute(trace)
                if session in STOPS:
                    yield stopped(v, traces)
                    return
                now = time.perf_counter()
                maps = now - drawn >= MAP_EVERY_S  # the texts every round; the maps (plotly, costly) less often
                drawn = now if maps else drawn
                yield views(v, traces, status_line(traces, "Running", now - clock, measured), live=True, maps=maps)
    finally:
        STOPS.clear(session)
    yield finished(v, traces, status_line(traces, "Done", time.perf_counter() - clock, measured), measured)


def run_handler(v: Parts):
    """/run's handler: `run` with the visitor's session (Gradio passes a gr.Request to a parameter typed so)."""

    @takes_settings
    def run_in_session(prompt, chat, pair, request: gr.Request, *, settings: dict):
        yield from run(v, prompt, chat, pair, session_of(request), **settings)

    run_in_session.__doc__ = run.__doc__
    return run_in_session


def stop_handler(v: Parts):
    """Stop's handler: marks the session, so its run ends at its next round; Stop turns off at once."""

    def stop(request: gr.Request) -> dict:
        STOPS.mark(session_of(request))
        return {v["stop"]: stop_button(False)}

    return stop


def shown(v: Parts, traces: dict, state: str, note: str = "") -> dict:
    """Traces that arrive whole (after Stop, or opened): their metrics once, then every run output."""
    measured = measure(traces)
    return finished(v, traces, status_line(traces, state, measured=measured) + note, measured)


def stopped(v: Parts, traces: dict) -> dict:
    """After Stop: the partial traces get their downloads and step view."""
    return shown(v, traces, "Stopped") if traces else {v["status"]: "Stopped"}


def check_files(files) -> list[dict]:
    """The upload's validator: a file that is not a consistent trace is refused under the upload box, its message
    naming the field, and the views shown stay as they were."""
    try:
        runs.read_traces(files)
    except UserError as err:
        return [gr.validate(False, err.message)]
    return [gr.validate(True, "")]


def open_files(v: Parts, files) -> dict:
    """Re-open downloaded traces (or a /trace result); a bad file is a clear gr.Error."""
    return shown(v, runs.read_traces(files), "Opened from file")


def open_example(v: Parts, prompt, chat) -> dict:
    """A picked example: its recorded runs at once (no model needed), as the first screen opens; Run decodes it
    live with the settings they restore."""
    traces = runs.recorded_example(prompt, chat)
    if traces is None:  # an example not recorded: its prompt stays in the box (no trace to restore over it)
        return {v["status"]: "Example loaded: press **Run** to decode it.", v["traces"]: {}}
    return shown(v, traces, "Recorded example (no model needed)", recorded_note(traces))


def with_controls(v: Parts, opened: dict) -> dict:
    """What an opening handler shows, and in the same update the labels, prompt and settings of the traces it
    opened: a value typed into a control as soon as the runs show is not overwritten by a later step."""
    traces = opened.get(v["traces"]) or {}
    names = run_names(traces)  # an output's text from the handler, its label (as run_labels gives it) beside it
    both = {v[n]: gr.update(value=opened[v[n]], label=output_label(names[n])) for n in RUNS if v[n] in opened}
    return {**opened, **restored(v, traces), **both}


def open_first_screen(v: Parts) -> dict:
    """The page's first screen: the recorded example with the prompt and settings that made it."""
    return with_controls(v, open_recorded(v))


def pick_example(v: Parts, prompt, chat) -> dict:
    """A picked example's recorded runs with the prompt and settings that made them."""
    return with_controls(v, open_example(v, prompt, chat))


def open_recorded(v: Parts) -> dict:
    """The recorded example (no model needed), and where it was decoded: a live run elsewhere can part from it."""
    traces = runs.recorded()
    failed = start_failure()  # a pair that did not load as the app started: said where the visitor looks first
    note = recorded_note(traces) + (f" · **{failed}**" if failed else "")
    return shown(v, traces, "Recorded example (no model needed)", note)


def recorded_note(traces: dict) -> str:
    """Where recorded runs were decoded, and whether Run here should give the same tokens: the settings they restore
    decide everything but bf16's rounding, which differs from one CPU (or engine) to another. The same tokens are
    promised only where the trace names the same CPU model, bf16 path and threads (a trace recorded before traces
    named the model is read as decoded elsewhere)."""
    trace = traces[RUNS[0]]
    env = trace.environment
    if (trace.target_id, trace.draft_id) != PAIRS[default_pair()]:
        return (
            f" · decoded with {trace.target_id} + {trace.draft_id}; Run decodes it live with the {default_pair()} pair"
        )
    if not env:
        return " · decoded on an unnamed machine; Run decodes it live"
    model = f", {env['cpu_model']}" if env.get("cpu_model") else ""
    threads = f", {env['threads']} threads" if env.get("threads") else ""
    engine = env.get("engine", "torch")
    where = f"{env.get('dtype')} on {env.get('device')} ({env.get('cpu')}{model}{threads}, {engine} engine)"
    here = {"device": default_device(), "cpu": cpu_name(), "engine": "torch"}
    here |= cpu_environment() if here["device"] == "cpu" else {}
    if all(env.get(k, "torch" if k == "engine" else None) == v for k, v in here.items()):  # older traces name no model
        return f" · decoded in {where}, as here: Run decodes the same tokens"
    return (
        f" · decoded in {where}; Run decodes it live here, and can part from it at a near-tie (two tokens within a "
        "rounding step of each other go the other way when bf16 rounds differently on another CPU or thread count)"
    )


def inspect(v: Parts, traces: dict, run_name: str, index, rule: str = compare.OWN, knob=None) -> dict:
    """Caption, the three inspector figures and every rule's verdict for the token at span `index` of one run's
    output (a relative's knob as the map's controls set it)."""
    trace = (traces or {}).get(run_name)
    if trace is None:
        raise UserError("Run a prompt or open a trace first.")
    _, records = viz.spans(trace, divergence(traces))
    if isinstance(index, (list, tuple)):
        index = index[0]
    if not isinstance(index, int) or not 0 <= index < len(records):
        raise UserError(f"No token at index {index!r} in the {run_name} output.")
    rec = trace.records[records[index]]
    ev = viz.evidence_record(trace, rec)
    return updates(
        v,
        {
            "caption": f"**{display_name(trace)}** · {viz.caption(trace, rec)}",
            "heat": viz.distribution_heatmap(
                ev, rec if ev is not rec else None, read=trace.config.get("method") == "dropmatch"
            ),
            # the test of the rule that ran (DropMatch: the JS test and the votes; a relative or lossless: its own)
            "js": viz.rule_test_figure(trace, rec),
            "votes": viz.rule_inputs_figure(trace, rec),
            "rules": viz.rules_html(trace, ev, compare.knobs(rule, knob)),
            "selected": [run_name, trace.records.index(ev), ev.round, ev.pos],
        },
    )


def selector(v: Parts, run_name: str):
    """A .select handler for one run's coloured text (a closure: Gradio reads its gr.SelectData hint)."""

    def handler(traces: dict, rule: str, knob, evt: gr.SelectData) -> dict:
        return inspect(v, traces, run_name, evt.index, rule, knob)

    return handler


def output_label(name: str) -> str:
    """An output's label: one short line on a phone (the status line's note says to tap a token)."""
    return f"{name} output"


def relaxed_label(v: Parts, criterion: str) -> dict:
    """As soon as a rule is picked: the first output's label names it (DropMatch, or the relative), and the knob box
    shows the rule's default knob (a DropMatch criterion takes none: the box empties)."""
    rule = RULES[criterion]
    if rule.knob is None:
        knob = gr.update(value="", placeholder="none: a relative's setting")
    else:  # the value as it is (an opened trace may have just put its knob there)
        knob = gr.update(placeholder=f"default: {rule.knob.said()}")
    return {v[RUNS[0]]: gr.HighlightedText(label=output_label(rule.title)), v["knob"]: knob}


def run_labels(v: Parts, traces: dict) -> dict:
    """Both outputs' labels (and the step-through's run choice) name the runs shown (after a run, or traces opened
    from a file); their plain texts; each token's hover line (why its colour, q, p, rank), as data for the page's
    script."""
    out, hovers, cut, names = {}, {}, divergence(traces), run_names(traces)
    for n in RUNS:
        trace, name = traces.get(n), names[n]
        out[v[n]] = gr.HighlightedText(label=output_label(name))
        out[v[f"plain_{n}"]] = gr.Textbox(trace.text if trace else "", label=f"{name} text")
        hovers[f"out-{n.lower()}"] = viz.span_hovers(trace, cut) if trace else []
    first = next((n for n in RUNS if n in traces), RUNS[0])  # as `finished` sets it: one update may carry both
    out[v["step_run"]] = gr.Radio(choices=[(names[n], n) for n in RUNS], value=first)
    out[v["hovers"]] = f"<div data-hovers='{html.escape(json.dumps(hovers), quote=True)}'></div>"
    return out


def stop_button(active: bool) -> gr.Button:
    """Stop can be pressed only while a run streams."""
    return gr.Button(interactive=active)


def idle_buttons(v: Parts) -> dict:
    """Once a run's event has ended (done, stopped or refused mid-way): Run on, Stop off."""
    return {v["run"]: gr.Button(interactive=True), v["stop"]: stop_button(False)}


def restored(v: Parts, traces: dict) -> dict:
    """After traces are opened: the labels, and the prompt and settings that produced them in the controls."""
    trace = next((traces[n] for n in RUNS if traces.get(n)), None)
    if trace is None:
        return run_labels(v, traces or {})
    cfg = trace.config
    # a trace recorded before the engine options says nothing of its draft: that control stays as it is
    settings = {name: cfg[name] for name in SETTINGS if name in cfg and (name != "draft_quant" or cfg[name])}
    if isinstance(settings.get("knob"), (list, tuple)):  # a pair of knobs, as the knob box writes it: "8/0.5"
        settings["knob"] = RULES[cfg["criterion"]].knob.text(settings["knob"])
    return {**run_labels(v, traces), **updates(v, {"prompt": trace.prompt, "chat": trace.chat, **settings})}


def _step_by(v: Parts, delta: int, traces: dict, run_name: str, pos) -> dict:
    """The Previous (-1) and Next (+1) buttons."""
    return step(v, traces, run_name, pos, delta)


# ---- events -------------------------------------------------------------------------------------
def wire(v: Parts, demo: gr.Blocks) -> None:
    """Every Explore event, with its endpoint name: /run (streams), /open_recorded, /open_files, /trace (gr.api);
    the page opens on the recorded example."""
    out, labels = pick(v, RUN_WIRING), pick(v, (*RUNS, *(f"plain_{n}" for n in RUNS), "hovers", "step_run"))
    relabel = {"fn": bind(run_labels, v), "inputs": v["traces"], "outputs": labels, "api_visibility": "private"}
    idle = {
        "fn": bind(idle_buttons, v),
        "outputs": pick(v, ("run", "stop")),
        "api_visibility": "private",
        "queue": False,
    }
    restore = {
        "fn": bind(restored, v),
        "inputs": v["traces"],
        "api_visibility": "private",
        "outputs": [*labels, *pick(v, ("prompt", "chat", *SETTINGS))],
    }
    # preprocess=False: the inputs arrive as sent, and the library's checks name a bad one (a slider's own check
    # would fail with a bare "Error" on "abc" or "nan")
    go = v["run"].click(  # Stop turns on with the run's first update: a refused run leaves it off
        run_handler(v),
        pick(v, RUN_INPUTS),
        [*out, v["stop"], v["run"]],
        api_name="run",
        concurrency_id="model",
        # Gradio's tracker on the status line alone: while the request waits behind another visitor's it says its
        # place in the queue there ("queue: 2/3"), and the outputs stay readable while they stream
        show_progress="full",
        show_progress_on=v["status"],
        preprocess=False,
        validator=check_run,
    )
    # Run turns back on only here, after the run's event has ended in the page: a Run pressed any time after that
    # starts a run (the page ignores a Run pressed while its last run is still pending). The page follows an event
    # that failed (a prompt too long in tokens, a pair that cannot load) with its .failure steps only, not its .then
    go.then(**relabel).then(**idle)
    go.failure(**idle)
    # Stop only marks the session (no queue: at once, even behind a long round); the run ends itself at its next round
    v["stop"].click(stop_handler(v), None, v["stop"], api_visibility="private", queue=False)
    v["recorded"].click(bind(open_recorded, v), None, out, api_name="open_recorded").then(**restore)
    controls = [c for c in restore["outputs"] if c not in out]  # the step run's choice is in both
    picked = {"fn": bind(pick_example, v), "inputs": pick(v, ("prompt", "chat")), "outputs": [*out, *controls]}
    v["examples"].load_input_event.then(**picked, api_visibility="private")
    # the tracker on the upload box alone: a refused file is said under it, and no output is marked with an error
    v["upload"].upload(
        bind(open_files, v),
        v["upload"],
        out,
        api_name="open_files",
        validator=check_files,
        show_progress_on=v["upload"],
    ).success(**restore)
    demo.load(bind(open_first_screen, v), None, [*out, *controls], api_visibility="private")
    v["criterion"].change(bind(relaxed_label, v), v["criterion"], [labels[0], v["knob"]], api_visibility="private")
    # a rule picked by hand starts at its default knob (an opened trace sets rule and knob together: no .input there)
    v["criterion"].input(lambda: "", None, v["knob"], api_visibility="private", queue=False)
    for name in RUNS:
        v[name].select(
            selector(v, name),
            pick(v, ("traces", "recolour", "rule_knob")),
            pick(v, INSPECTOR),
            api_visibility="private",
        )
    compare.wire(v)
    step_in = pick(v, ("traces", "step_run", "step_pos"))
    for button, delta in (("prev", -1), ("next", 1)):
        # always_last: a click while the last step is still on its way runs after it, from the step it reached (the
        # default "once" dropped it)
        v[button].click(
            bind(_step_by, v, delta), step_in, pick(v, STEP), api_visibility="private", trigger_mode="always_last"
        )
    v["step_run"].change(bind(step_view, v), pick(v, ("traces", "step_run")), pick(v, STEP), api_visibility="private")
    gr.api(runs.trace_api, api_name="trace", concurrency_id="model")
