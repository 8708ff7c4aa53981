"""The Explore tab's handlers without a model (or on the tiny pair): an opened trace restores its prompt and settings,
labels and hovers; a streamed run computes each trace's metrics once per state."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

import viz
from dropmatch import metrics
from dropmatch.config import SETTINGS
from dropmatch.lab import word_problems
from dropmatch.trace import Trace
from ui import explore, runs
from ui.common import DEFAULTS, UserError
from viz.summary import RUNS, divergence, run_names

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"


def test_an_opened_trace_puts_its_prompt_and_settings_back_in_the_controls(view):
    traces = runs.recorded()
    names = {component: name for name, component in view.items()}
    out = {names[c]: value for c, value in explore.restored(view, traces).items()}
    trace = traces["DropMatch"]
    assert out["prompt"] == trace.prompt and out["chat"] is trace.chat is False
    assert {k: out[k] for k in SETTINGS} == {k: trace.config[k] for k in SETTINGS}
    if DEFAULTS["draft_quant"] != "none":  # on a CPU the first screen is what Run decodes at the starting values
        assert {k: trace.config[k] for k in SETTINGS} == {k: DEFAULTS.get(k) for k in SETTINGS}
    old = {n: Trace.from_json(DATA / f"story_{n.lower()}.json") for n in RUNS}
    assert old["DropMatch"].config["draft_quant"] is None  # recorded before the option: that control is kept as is
    assert "draft_quant" not in {names[c] for c in explore.restored(view, old)}
    assert "DropMatch output" in out["DropMatch"].label and out["plain_lossless"].value == traces["lossless"].text
    hovers = json.loads(out["hovers"].split("data-hovers='")[1].split("'>")[0].replace("&quot;", '"'))
    assert len(hovers["out-dropmatch"]) == len(trace.token_ids) + 1  # every token, and the divergence marker
    assert any(line.startswith("exact match · q ") for line in hovers["out-dropmatch"])


def test_the_recorded_example_says_where_it_was_decoded(view, monkeypatch):
    names = {component: name for name, component in view.items()}
    out = {names[c]: value for c, value in explore.open_recorded(view).items()}
    assert "decoded in bfloat16 on cpu" in out["status"]
    recorded = runs.recorded()
    for trace in recorded.values():  # what this machine would write (the recorded example may predate the model)
        trace.environment |= {"cpu_model": "GenuineIntel 6/207/2", "cpu_bf16": "native"}
    monkeypatch.setattr(explore, "cpu_name", lambda: recorded["DropMatch"].environment["cpu"])
    monkeypatch.setattr(explore, "default_device", lambda: "cpu")
    threads = recorded["DropMatch"].environment["threads"]
    cpu = {"cpu_model": "GenuineIntel 6/207/2", "cpu_bf16": "native", "threads": threads}
    monkeypatch.setattr(explore, "cpu_environment", lambda: cpu)
    here = explore.recorded_note(recorded)
    assert "as here: Run decodes the same tokens" in here and "near-tie" not in here  # the CPU it was recorded on
    assert f"GenuineIntel 6/207/2, {threads} threads" in here
    others = {"threads": str(int(threads) + 1), "cpu_model": "GenuineIntel 6/143/8", "cpu_bf16": "emulated"}
    for key, other in others.items():  # the same CPU name, rounding otherwise
        monkeypatch.setattr(explore, "cpu_environment", lambda changed=cpu | {key: other}: changed)
        assert "near-tie" in explore.recorded_note(recorded), key
    monkeypatch.setattr(explore, "cpu_environment", lambda: cpu)
    for trace in recorded.values():  # a trace from before traces named the model: it cannot promise the same tokens
        del trace.environment["cpu_model"], trace.environment["cpu_bf16"]
    assert "near-tie" in explore.recorded_note(recorded)
    elsewhere = {n: Trace.from_json(DATA / f"story_{n.lower()}.json") for n in RUNS}
    elsewhere["DropMatch"].environment["cpu"] = "another CPU"
    assert "near-tie" in explore.recorded_note(elsewhere) and "another CPU" in explore.recorded_note(elsewhere)


def count_calls(monkeypatch, fn) -> list:
    """Every name bound to `fn` in the loaded modules (`from ... import fn` included) replaced by a wrapper that
    counts: the list returned grows by one per call."""
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return fn(*args, **kwargs)

    for module in list(sys.modules.values()):
        for name, value in list(getattr(module, "__dict__", {}).items()):
            if value is fn:
                monkeypatch.setattr(module, name, counted)
    return calls


def test_a_streamed_run_computes_each_traces_metrics_once_per_state(view, noisy_pair, monkeypatch):
    monkeypatch.setattr(runs, "model_pair", lambda pair, draft_quant="none": noisy_pair)
    monkeypatch.setattr(explore, "MAP_EVERY_S", 0.0)  # every round draws all it draws while streaming
    calls = count_calls(monkeypatch, metrics.compute)
    settings = {"gamma": 4, "K": 5, "p_drop": 0.3, "criterion": "js+majority", "mode": "or", "temperature": 0.0}
    settings |= {"max_new_tokens": 24, "seed": 0, "knob": None}
    counts, outputs = [], []
    for out in explore.run(view, "def f(x):", False, "embedded", **settings, draft_quant="none"):
        outputs.append(out)
        counts.append(len(calls))
        calls.clear()
    traces = outputs[-1][view["traces"]]
    explore.run_labels(view, traces)  # what the page runs next: the labels, hovers and plain texts
    rounds = counts[1:-1]
    assert counts[0] == 0 and len(rounds) >= 6  # "Loading", then one update per round of either run
    assert rounds == [1] * len(rounds)  # only the run that advanced, once
    assert counts[-1] + len(calls) == 0  # the end shows the metrics of the last rounds
    names = run_names(traces)  # and they are the final ones: the table as computed afresh
    fresh = viz.metrics_frame({names[n]: traces[n] for n in RUNS})
    pd.testing.assert_frame_equal(outputs[-1][view["table"]], fresh)


def test_stop_ends_the_sessions_run_at_its_next_round_and_only_its_own(view, noisy_pair, monkeypatch):
    """Stop marks its session; that session's run shows what it decoded as stopped and ends (a run pressed later
    starts afresh); another session's run goes on."""
    monkeypatch.setattr(runs, "model_pair", lambda pair, draft_quant="none": noisy_pair)
    settings = {"gamma": 4, "K": 5, "p_drop": 0.3, "criterion": "js+majority", "mode": "or", "temperature": 0.0}
    settings |= {"max_new_tokens": 24, "seed": 0, "knob": None, "draft_quant": "none"}
    mine = explore.run(view, "def f(x):", False, "embedded", "mine", **settings)
    other = explore.run(view, "def f(x):", False, "embedded", "other", **settings)
    first = next(mine)
    assert first[view["run"]].interactive is False and first[view["stop"]].interactive is True
    next(mine), next(other), next(other)
    explore.STOPS.mark("mine")
    last = list(mine)
    assert len(last) == 1 and last[0][view["status"]].startswith("**Stopped**"), "the next round ends the run"
    assert 0 < len(last[0][view["traces"]]["DropMatch"].token_ids) < 24
    assert "mine" not in explore.STOPS, "nothing of a stopped run is left for the session's next one"
    rest = list(other)
    assert rest[-1][view["status"]].startswith("**Done**") and len(rest) > 3, "another session's run goes on"
    explore.STOPS.mark("mine")  # a Stop that came after its run had ended
    again = list(explore.run(view, "def f(x):", False, "embedded", "mine", **settings))
    assert again[-1][view["status"]].startswith("**Done**"), "a new run starts afresh"


def test_run_and_trace_take_every_setting_by_name():
    """/run's and /trace's inputs are the settings by name, defaulted as the controls start (what clients call)."""
    for handler, first in (
        (explore.run, ["v", "prompt", "chat", "pair", "session"]),
        (explore.run_handler({}), ["prompt", "chat", "pair", "request"]),  # the visitor's session: not an input
        (runs.trace_api, ["prompt", "chat", "pair"]),
    ):
        params = inspect.signature(handler).parameters
        assert list(params) == [*first, *SETTINGS]
        assert {name: params[name].default for name in SETTINGS} == {name: DEFAULTS.get(name) for name in SETTINGS}


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"max_new_tokens": "abc"}, r"max new tokens must be an integer in \[1, 256\]; got 'abc'"),
        ({"max_new_tokens": 1000}, r"max new tokens must be an integer in \[1, 256\]"),
        ({"p_drop": "nan"}, r"p_drop must lie in \[0, 1\); got 'nan'"),
        ({"gamma": 2.5}, "gamma must be an integer"),
        ({"criterion": "median"}, "criterion must be one of"),
        ({"criterion": "typical", "knob": "x"}, r"epsilon must lie in \[0, 1\]; got 'x'"),
        ({"knob": "0.3"}, r"DropMatch \(js\+majority\) takes no knob; leave the knob empty"),
    ],
)
def test_a_bad_setting_is_one_clear_error_before_anything_loads(changes, message):
    settings = {name: DEFAULTS.get(name) for name in SETTINGS} | changes
    with pytest.raises(UserError, match=message):
        runs.validate("def f(x):", settings)
    cfgs = runs.validate("def f(x):", {name: DEFAULTS.get(name) for name in SETTINGS} | {"knob": ""})[1]
    assert cfgs["DropMatch"].knob is None and cfgs["lossless"].method == "lossless"  # an empty box: no knob


def test_every_example_opens_its_recorded_runs_at_the_apps_defaults(view):
    names = {component: name for name, component in view.items()}
    defaults = runs.configs({name: DEFAULTS.get(name) for name in SETTINGS})
    for example in runs.examples():
        traces = runs.recorded_example(example["prompt"], example["chat"])
        assert traces is not None, f"{example['label']!r} has no recorded runs: python -m ui.runs records them"
        for name in RUNS:  # what Run decodes from the restored settings
            assert traces[name].prompt == example["prompt"] and traces[name].chat == example["chat"]
            assert traces[name].config == defaults[name].to_dict()
            assert traces[name].finish is not None and traces[name].token_ids
        out = {names[c]: value for c, value in explore.open_example(view, example["prompt"], example["chat"]).items()}
        assert out["traces"] == traces and out["status"].startswith("**Recorded example")
        restored = {names[c]: value for c, value in explore.restored(view, traces).items()}
        assert restored["prompt"] == example["prompt"] and restored["draft_quant"] == DEFAULTS["draft_quant"]


def test_recording_an_unknown_example_says_which_exist_and_decodes_nothing(monkeypatch):
    monkeypatch.setattr(runs, "default_pair", lambda: pytest.fail("decoded before checking the labels"))
    with pytest.raises(ValueError, match="no example labelled 'Nope'.*Math word problem"):
        runs.record_examples(["Math word problem", "Nope"])


def test_the_word_problem_example_is_one_of_the_projects_own():
    """The example's problem comes from the project's generator (no other project's text ships here)."""
    example = next(e for e in runs.examples() if e["label"] == "Math word problem")
    assert example["prompt"].removesuffix(" Think step by step.") in {p.text for p in word_problems.problems(20)}


def test_a_prompt_that_is_no_example_opens_nothing(view):
    names = {component: name for name, component in view.items()}
    assert runs.recorded_example("def f(x):", False) is None
    example = runs.examples()[0]
    assert runs.recorded_example(example["prompt"], not example["chat"]) is None  # the chat format is part of it
    out = {names[c]: value for c, value in explore.open_example(view, "def f(x):", False).items()}
    assert out["traces"] == {} and "press **Run**" in out["status"]


def test_a_run_in_replace_mode_decodes_both_sides(view, noisy_pair, monkeypatch):
    """Replace is the relaxed side's mode: the lossless side keeps its test (it has no other), so both decode."""
    monkeypatch.setattr(runs, "model_pair", lambda pair, draft_quant="none": noisy_pair)
    settings = {"gamma": 4, "K": 5, "p_drop": 0.3, "criterion": "js+majority", "mode": "replace", "temperature": 0.0}
    settings |= {"max_new_tokens": 12, "seed": 0, "knob": None, "draft_quant": "none"}
    cfgs = runs.configs(settings)
    assert (cfgs["DropMatch"].mode, cfgs["lossless"].mode) == ("replace", "or")
    last = list(explore.run(view, "def f(x):", False, "embedded", None, **settings))[-1]
    traces = last[view["traces"]]
    assert last[view["status"]].startswith("**Done**") and all(len(t.token_ids) == 12 for t in traces.values())


def test_the_first_screen_and_a_picked_example_set_the_controls_with_the_runs(view):
    """One update carries the runs, the status and the prompt and settings that made them: a value typed as soon as
    "Recorded example" shows is not overwritten by a later step (it was: a restore step came after)."""
    names = {component: name for name, component in view.items()}
    for out in (
        explore.open_first_screen(view),
        explore.pick_example(view, runs.examples()[1]["prompt"], runs.examples()[1]["chat"]),
    ):
        got = {names[c]: value for c, value in out.items()}
        trace = got["traces"]["DropMatch"]
        assert got["status"].startswith("**Recorded example")
        text = got["DropMatch"]  # the coloured text, under the label that names the run
        assert text["value"] == viz.spans(trace, divergence(got["traces"]))[0] and text["label"] == "DropMatch output"
        assert got["prompt"] == trace.prompt and got["max_new_tokens"] == trace.config["max_new_tokens"]
        assert got["step_run"].value == "DropMatch" and got["step_pos"] == [0, 0]
