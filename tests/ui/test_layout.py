"""The Explore tab's handlers without a model: an opened trace restores its prompt and settings, labels and hovers."""

from __future__ import annotations

import copy
import json

import gradio as gr
import pytest

from ui import explore, runs


@pytest.fixture(scope="module")
def view():
    with gr.Blocks():
        above = explore.main()
        with gr.Tabs():
            return explore.tabs(above)


def test_an_opened_trace_puts_its_prompt_and_settings_back_in_the_controls(view):
    traces = runs.recorded()
    names = {component: name for name, component in view.items()}
    out = {names[c]: value for c, value in explore.restored(view, traces).items()}
    trace = traces["DropMatch"]
    assert out["prompt"] == trace.prompt and out["chat"] is trace.chat is False
    shown = [k for k in runs.SETTINGS if k != "draft_quant"]
    assert {k: out[k] for k in shown} == {k: trace.config[k] for k in shown}
    assert trace.config["draft_quant"] is None and "draft_quant" not in out  # recorded before the option: kept as is
    lean = copy.deepcopy(traces)
    lean["DropMatch"].config["draft_quant"] = "int8"
    assert {names[c]: value for c, value in explore.restored(view, lean).items()}["draft_quant"] == "int8"
    assert "DropMatch output" in out["DropMatch"].label and out["plain_lossless"].value == traces["lossless"].text
    hovers = json.loads(out["hovers"].split("data-hovers='")[1].split("'>")[0].replace("&quot;", '"'))
    assert len(hovers["out-dropmatch"]) == len(trace.token_ids) + 1  # every token, and the divergence marker
    assert hovers["out-dropmatch"][0].startswith("exact match · q ")


def test_the_recorded_example_says_where_it_was_decoded(view):
    names = {component: name for name, component in view.items()}
    out = {names[c]: value for c, value in explore.open_recorded(view).items()}
    assert "decoded in bfloat16 on cpu" in out["status"] and "near-tie" in out["status"]
