"""The app end to end through gradio_client on the real embedded pair (bf16, 16 tokens), plus its handlers directly."""

from __future__ import annotations

import json
import time

import gradio as gr
import pandas as pd
import pytest
from gradio_client import Client, handle_file

import app
from dropmatch.trace import Trace
from viz.summary import traces_from_data
from viz.theme import DIVERGENCE_LABEL, REASON_LABELS

SETTINGS = dict(chat=False, pair="embedded", gamma=4, K=5, p_drop=0.3, criterion="js+majority", mode="or",
                temperature=0.0, max_new_tokens=16, seed=0)
PROMPT = "def fibonacci(n):\n"
LABELS = set(REASON_LABELS.values()) | {DIVERGENCE_LABEL}


@pytest.fixture(scope="module")
def client():
    demo = app.build_demo()
    _, url, _ = demo.launch(prevent_thread_lock=True, quiet=True)
    try:
        yield Client(url, verbose=False)
    finally:
        demo.close()


@pytest.fixture(scope="module")
def streamed(client):
    """One Run through /run: every streamed output, and the seconds to the first one with tokens."""
    start = time.perf_counter()
    job = client.submit(PROMPT, *SETTINGS.values(), api_name="/run")
    outputs, first_round = [], None
    for out in job:
        outputs.append(out)
        if first_round is None and isinstance(out[0], list) and out[0]:
            first_round = time.perf_counter() - start
    return outputs, first_round


@pytest.fixture(scope="module")
def api_traces(client):
    return client.predict(PROMPT, **SETTINGS, api_name="/trace")


def plotly_json(value) -> dict:
    assert isinstance(value, dict) and value["type"] == "plotly"
    return json.loads(value["plot"])


def test_run_streams_both_outputs_figures_and_metrics(streamed):
    outputs, first_round = streamed
    assert first_round is not None
    print(f"\nfirst streamed round after {first_round:.2f} s")
    final = outputs[-1]
    dm_text, ll_text, dm_map, ll_map, table, acceptance, status, files, story, step_fig, step_run = final
    for text in (dm_text, ll_text):
        assert text and {span["class_or_confidence"] for span in text} <= LABELS
    for fig in (dm_map, ll_map, acceptance, step_fig):
        assert plotly_json(fig)["data"]
    assert table["headers"] == ["metric", "DropMatch", "lossless", "definition"]
    assert table["data"][0][0].startswith("τ")
    assert status.startswith("**Done**")
    assert sorted(p.rsplit("/", 1)[-1] for p in files) == [
        "dropmatch_tokens.csv", "dropmatch_trace.json", "lossless_tokens.csv", "lossless_trace.json"]
    assert "Round 1 of" in story and step_run == "DropMatch"
    rounds = [o for o in outputs if isinstance(o[0], list) and o[0]]
    assert len(rounds) >= 3, "the outputs should stream round by round"


def test_trace_endpoint_matches_the_streamed_run(streamed, api_traces):
    traces = traces_from_data(api_traces)
    assert set(traces) == {"DropMatch", "lossless"}
    assert api_traces["compare"]["first_divergence"] == app.divergence(traces)
    dm_text = [s["token"] for s in streamed[0][-1][0] if s["class_or_confidence"] != DIVERGENCE_LABEL]
    assert dm_text == [r.text for r in traces["DropMatch"].records if r.emitted]
    assert len(traces["DropMatch"].token_ids) == SETTINGS["max_new_tokens"]
    assert all(r.top for r in traces["DropMatch"].records if r.kind == "draft")


def test_inspector_for_every_emitted_token(api_traces):
    traces = traces_from_data(api_traces)
    K = SETTINGS["K"]
    _, index = app.viz.spans(traces["DropMatch"], app.divergence(traces))
    for i in range(len(index)):
        caption, heat, js, votes = app.inspect(traces, "DropMatch", i)
        rec = traces["DropMatch"].records[index[i]]
        assert caption.startswith("**DropMatch**") and REASON_LABELS[rec.reason] in caption
        if rec.kind == "bonus":
            assert not heat.data and "No dropout paths" in heat.layout.annotations[0].text
        else:
            assert len(heat.data[0].y) == K + 3 and heat.layout.meta["draft_column"] is not None
            assert len(js.data[0].y) == K and sum(votes.data[0].y) == K
    handler = app.on_select("lossless")
    caption, heat, _, _ = handler(traces, gr.SelectData(None, {"index": 0, "value": ["x", "exact match"]}))
    assert caption.startswith("**lossless**")
    with pytest.raises(gr.Error, match="No token at index"):
        app.inspect(traces, "DropMatch", 10_000)


def test_step_through_handlers(api_traces):
    traces = traces_from_data(api_traces)
    story, fig, pos = app.step(traces, "DropMatch", [0, 0], 1)
    assert pos == [0, 1] and "K paths" in story and fig.data
    _, _, pos = app.step(traces, "DropMatch", [0, 4], -1)
    assert pos == [0, 3]
    with pytest.raises(gr.Error, match="No lossless trace"):
        app.step({}, "lossless", [0, 0], 1)


@pytest.mark.parametrize(
    ("prompt", "changes", "message"),
    [
        ("", {}, "Type a prompt"),
        ("x" * 5000, {}, "the limit is 4000"),
        (PROMPT, {"criterion": "median"}, "criterion must be one of"),
        (PROMPT, {"max_new_tokens": 1000}, r"max new tokens must be an integer in \[1, 256\]"),
        (PROMPT, {"p_drop": 1.0}, r"p_drop must lie in \[0, 1\)"),
        (PROMPT, {"gamma": 2.5}, "gamma must be an integer"),
        (PROMPT, {"pair": "hub"}, "needs huggingface.co"),
    ],
)
def test_bad_input_is_a_clear_error(client, prompt, changes, message):
    with pytest.raises(Exception, match=message):
        client.predict(prompt, **{**SETTINGS, **changes}, api_name="/trace")


def test_run_endpoint_rejects_an_empty_prompt(client):
    with pytest.raises(Exception, match="Type a prompt"):
        client.predict("  ", *SETTINGS.values(), api_name="/run")


def test_open_files_and_recorded_example(client, tmp_path, api_traces):
    bundle = tmp_path / "both.json"
    bundle.write_text(json.dumps(api_traces), encoding="utf-8")
    out = client.predict([handle_file(str(bundle))], api_name="/open_files")
    assert out[0] and out[1] and out[6].startswith("**Opened from file**")
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}', encoding="utf-8")
    with pytest.raises(Exception, match="bad.json: not a DropMatch trace"):
        client.predict([handle_file(str(bad))], api_name="/open_files")
    recorded = client.predict(api_name="/open_recorded")
    emitted = Trace.from_json(app.RECORDED["DropMatch"]).token_ids
    tokens = [s for s in recorded[0] if s["class_or_confidence"] != DIVERGENCE_LABEL]
    assert len(tokens) == len(emitted) and "Recorded example" in recorded[6]


def test_recorded_sweep_opens_without_a_model(client):
    note, compare, *plots, table, files = client.predict("humaneval", api_name="/open_sweep")
    cells = app.load_sweep(app.SWEEP).query("suite == 'humaneval'")
    assert f"{cells['prompt_id'].nunique()} prompts" in note and "no model needed" in note
    assert "pass@1" in compare and "title=" in table and "tau_pooled" in table
    assert sorted(p.rsplit("/", 1)[-1] for p in files) == ["report.html", "table.csv"]
    shown = [plot.visible for plot in app.open_recorded_sweep("humaneval")[2:-2]]
    assert shown == [name in app.relevant(cells) for name in app.FIGURES] and any(shown)
    with pytest.raises(gr.Error, match="No recorded sweep named"):
        app.open_recorded_sweep("nope")


def test_live_sweep_streams_cell_by_cell(client):
    outputs = list(client.submit("mini_spec_bench", 1, "p_drop", "0.3", 8, "embedded", api_name="/sweep"))
    notes = [out[0] for out in outputs]
    assert any("1/2 cells" in n for n in notes) and notes[-1].startswith("**Live sweep done**")
    assert outputs[0][-1] is None  # the recorded-sweep choice is cleared while a live sweep shows
    files = outputs[-1][-2]
    assert sorted(p.rsplit("/", 1)[-1] for p in files) == ["report.html", "table.csv"]
    table = pd.read_csv(next(p for p in files if p.endswith(".csv")))
    assert sorted(table["method"]) == ["dropmatch", "lossless"] and (table["n_tokens"] == 8).all()
    assert "title=" in outputs[-1][-3]


def test_live_sweep_refuses_too_large_a_sweep(client):
    with pytest.raises(Exception, match="at most 32 cells"):
        client.predict("mini_spec_bench", 8, "p_drop", "0,0.1,0.2,0.4,0.5", 8, "embedded", api_name="/sweep")
