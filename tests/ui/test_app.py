"""The app end to end through gradio_client on the real embedded pair (bf16, 16 tokens), plus its handlers directly.

Outputs are read by name: a client's result through the endpoint's output names (explore.RUN_OUTPUTS,
analysis.SWEEP_OUTPUTS, analysis.LIVE_OUTPUTS), a handler's {component: value} dict through its tab's parts.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import gradio as gr
import pandas as pd
import pytest
from gradio_client import handle_file
from served import served

import app
import viz
from dropmatch.lab.sweep import load_sweep
from dropmatch.tables import power, verdict
from ui import analysis, common, compare, explore, runs
from viz.summary import divergence, traces_from_data
from viz.sweep import FIGURES, relevant
from viz.theme import DIVERGENCE_LABEL, REASON_LABELS, one_line

pytestmark = pytest.mark.slow  # the real embedded pair (and, here, a browser)

SETTINGS = dict(
    chat=False,
    pair="embedded",
    gamma=4,
    K=5,
    p_drop=0.3,
    criterion="js+majority",
    mode="or",
    temperature=0.0,
    max_new_tokens=16,
    seed=0,
    knob=None,
)
PROMPT = "def fibonacci(n):\n"
LABELS = set(REASON_LABELS.values()) | {DIVERGENCE_LABEL}


def named(result, names: tuple[str, ...]) -> dict:
    """A gradio_client result (one value per visible output) by the endpoint's output names."""
    assert len(result) == len(names), f"expected the outputs {names}, got {len(result)} values"
    return dict(zip(names, result))


def title(fig) -> str:
    """A figure's title as one line, however a phone's width broke it."""
    return one_line(fig.layout.title.text)


def by_name(parts, out: dict) -> dict:
    """A handler's {component: value} dict by the tab's part names; every key must be one of its parts."""
    names = {component: name for name, component in parts.items()}
    assert set(out) <= set(names), "a handler returned a component that is not one of its tab's parts"
    return {names[component]: value for component, value in out.items()}


@pytest.fixture(scope="module")
def sweep_parts():
    """The Analysis tab's parts, built (not launched)."""
    with gr.Blocks():
        return analysis.layout()


@pytest.fixture(scope="module")
def client():
    with served() as c:
        yield c


@pytest.fixture(scope="module")
def streamed(client):
    """One Run through /run: every streamed output, and the seconds to the first one with tokens."""
    start = time.perf_counter()
    job = client.submit(PROMPT, *SETTINGS.values(), api_name="/run")
    outputs, first_round = [], None
    for out in job:
        outputs.append(out)
        text = named(out, explore.RUN_OUTPUTS)["DropMatch"]
        if first_round is None and isinstance(text, list) and text:
            first_round = time.perf_counter() - start
    return outputs, first_round


@pytest.fixture(scope="module")
def api_traces(client):
    return client.predict(PROMPT, **SETTINGS, api_name="/trace")


def plotly_json(value) -> dict:
    assert isinstance(value, dict) and value["type"] == "plotly"
    return json.loads(value["plot"])


def test_a_client_is_told_the_outputs_in_the_order_they_are_read(client, view):
    """/run's API description lists, in order, components of the types RUN_OUTPUTS names (the order clients read)."""
    returns = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/run"]["returns"]
    told = [r["component"].lower() for r in returns]  # gradio names them "Highlightedtext", "Plot", ...
    assert told == [type(view[name]).__name__.lower() for name in explore.RUN_OUTPUTS]
    labels = {r["label"] for r in returns}
    assert {view[name].label for name in ("DropMatch", "lossless") if view[name].label} <= labels


def test_run_streams_both_outputs_figures_and_metrics(streamed):
    outputs, first_round = streamed
    assert first_round is not None
    print(f"\nfirst streamed round after {first_round:.2f} s")
    final = named(outputs[-1], explore.RUN_OUTPUTS)
    for text in (final["DropMatch"], final["lossless"]):
        assert text and {span["class_or_confidence"] for span in text} <= LABELS
    for fig in (final["map_DropMatch"], final["map_lossless"], final["acceptance"], final["step_fig"]):
        assert plotly_json(fig)["data"]
    assert final["table"]["headers"] == ["metric", "DropMatch", "lossless", "definition"]
    assert final["table"]["data"][0][0].startswith("τ")
    assert final["status"].startswith("**Done**")
    assert sorted(p.rsplit("/", 1)[-1] for p in final["files"]) == [
        "dropmatch_tokens.csv",
        "dropmatch_trace.json",
        "lossless_tokens.csv",
        "lossless_trace.json",
    ]
    assert "Round 1 of" in final["step_md"] and final["step_run"] == "DropMatch"
    texts = [named(o, explore.RUN_OUTPUTS)["DropMatch"] for o in outputs]
    rounds = [t for t in texts if isinstance(t, list) and t]
    assert len(rounds) >= 3, "the outputs should stream round by round"


def test_trace_endpoint_matches_the_streamed_run(streamed, api_traces):
    traces = traces_from_data(api_traces)
    assert set(traces) == {"DropMatch", "lossless"}
    assert api_traces["compare"]["first_divergence"] == divergence(traces)
    final = named(streamed[0][-1], explore.RUN_OUTPUTS)
    dm_text = [s["token"] for s in final["DropMatch"] if s["class_or_confidence"] != DIVERGENCE_LABEL]
    assert dm_text == [r.text for r in traces["DropMatch"].records if r.emitted]
    assert len(traces["DropMatch"].token_ids) == SETTINGS["max_new_tokens"]
    assert all(r.top for r in traces["DropMatch"].records if r.kind == "draft")


def test_inspector_for_every_emitted_token(api_traces, view):
    traces = traces_from_data(api_traces)
    K = SETTINGS["K"]
    _, index = viz.spans(traces["DropMatch"], divergence(traces))
    for i in range(len(index)):
        out = by_name(view, explore.inspect(view, traces, "DropMatch", i))
        assert tuple(out) == explore.INSPECTOR
        caption, heat, js, votes = out["caption"], out["heat"], out["js"], out["votes"]
        rec = traces["DropMatch"].records[index[i]]
        if rec.kind != "bonus":  # every rule's verdict where the draft (or the draft a correction replaced) sat
            assert "Every rule at draft" in out["rules"] and "js+majority <b>(this run)</b>" in out["rules"]
            assert out["selected"][0] == "DropMatch"
        assert caption.startswith("**DropMatch**") and REASON_LABELS[rec.reason] in caption
        if rec.kind == "bonus":
            assert not heat.data and "No dropout paths" in heat.layout.annotations[0].text
        else:
            assert len(heat.data[0].y) == K + 3 and heat.layout.meta["draft_column"] is not None
            assert len(js.data[0].y) == K and sum(votes.data[0].y) == K
    handler = explore.selector(view, "lossless")
    out = by_name(
        view, handler(traces, compare.OWN, None, gr.SelectData(None, {"index": 0, "value": ["x", "exact match"]}))
    )
    assert out["caption"].startswith("**lossless**")
    with pytest.raises(gr.Error, match="No token at index"):
        explore.inspect(view, traces, "DropMatch", 10_000)


def test_step_through_handlers(api_traces, view):
    traces = traces_from_data(api_traces)
    out = by_name(view, explore.step(view, traces, "DropMatch", [0, 0], 1))
    assert tuple(out) == explore.STEP
    assert out["step_pos"] == [0, 1] and "K paths" in out["step_md"] and out["step_fig"].data
    out = by_name(view, explore.step(view, traces, "DropMatch", [0, 4], -1))
    assert out["step_pos"] == [0, 3]
    with pytest.raises(gr.Error, match="No lossless trace"):
        explore.step(view, {}, "lossless", [0, 0], 1)


def test_handlers_return_only_what_they_change(api_traces, view):
    traces = traces_from_data(api_traces)
    live = by_name(view, explore.views(view, traces, "**Running**", live=True))
    assert set(live) == {"DropMatch", "lossless", "map_DropMatch", "map_lossless", "status", "traces"}
    assert by_name(view, explore.stopped(view, {})) == {"status": "Stopped"}
    done = by_name(view, explore.stopped(view, traces))
    assert set(done) == set(explore.RUN_WIRING) and done["status"].startswith("**Stopped**")
    assert done["traces"] is traces and done["step_run"] == "DropMatch" and done["step_pos"] == [0, 0]


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


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_new_tokens": "abc"}, r"max new tokens must be an integer in \[1, 256\]; got 'abc'"),
        ({"p_drop": "nan"}, r"p_drop must lie in \[0, 1\); got 'nan'"),
        ({"knob": "x"}, r"epsilon must lie in \[0, 1\]; got 'x'"),
    ],
)
def test_run_endpoint_names_a_bad_input_where_a_slider_would_just_say_error(client, changes, message):
    settings = {**SETTINGS, **changes} | ({"criterion": "typical"} if "knob" in changes else {})
    with pytest.raises(Exception, match=message):
        client.predict(PROMPT, *settings.values(), api_name="/run")


def test_open_files_and_recorded_example(client, tmp_path, api_traces):
    bundle = tmp_path / "both.json"
    bundle.write_text(json.dumps(api_traces), encoding="utf-8")
    out = named(client.predict([handle_file(str(bundle))], api_name="/open_files"), explore.RUN_OUTPUTS)
    assert out["DropMatch"] and out["lossless"] and out["status"].startswith("**Opened from file**")
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}', encoding="utf-8")
    with pytest.raises(Exception, match="bad.json: not a DropMatch trace"):
        client.predict([handle_file(str(bad))], api_name="/open_files")
    recorded = named(client.predict(api_name="/open_recorded"), explore.RUN_OUTPUTS)
    emitted = runs.recorded()["DropMatch"].token_ids
    tokens = [s for s in recorded["DropMatch"] if s["class_or_confidence"] != DIVERGENCE_LABEL]
    assert len(tokens) == len(emitted) and "Recorded example" in recorded["status"]


def test_recorded_sweep_opens_without_a_model(client, sweep_parts):
    assert analysis.SWEEP_OUTPUTS == (
        "note",
        "compare",
        *FIGURES,
        "matched",
        "measure",
        "verdict",
        "score_curves",
        "kinds",
        "power",
        "summary",
        "files",
        "by_kind",
    )  # the order clients rely on (a later part goes last)
    out = named(client.predict("sweep/humaneval", api_name="/open_sweep"), analysis.SWEEP_OUTPUTS)
    cells = load_sweep(analysis.RECORDED["sweep"]).query("suite == 'humaneval'")
    assert f"{cells['prompt_id'].nunique()} prompts" in out["note"] and "no model needed" in out["note"]
    assert "pass@1" in out["compare"] and "title=" in out["summary"] and "tau_pooled" in out["summary"]
    assert sorted(p.rsplit("/", 1)[-1] for p in out["files"]) == ["report.html", "table.csv"]
    opened = by_name(sweep_parts, analysis.open_recorded_sweep(sweep_parts, "sweep/humaneval"))
    assert set(opened) == set(analysis.SWEEP_WIRING)
    shown = [opened[name].visible for name in FIGURES]
    assert shown == [name in relevant(cells) for name in FIGURES] and any(shown)
    with pytest.raises(gr.Error, match="No recorded sweep named"):
        analysis.open_recorded_sweep(sweep_parts, "nope")


def test_a_recorded_view_is_computed_once_per_state_of_its_records(tmp_path, monkeypatch):
    """Every visitor sees the same recorded sweep, and the word problems' views take seconds: they are computed once
    and shared, and computed again when a recording adds cells to the directory."""
    for name in ("cells.jsonl", "sweep.json"):
        (tmp_path / name).write_bytes((analysis.RECORDED["sweep"] / name).read_bytes())
    monkeypatch.setitem(analysis.RECORDED, "sweep", tmp_path)
    made = []
    monkeypatch.setattr(analysis, "content", lambda df: made.append(len(df)) or {"rows": len(df)})
    analysis._recorded_view.cache_clear()
    first = analysis.recorded_view("sweep/humaneval")
    assert analysis.recorded_view("sweep/humaneval") is first and len(made) == 1  # shared, not recomputed
    lines = (tmp_path / "cells.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "cells.jsonl").write_text("".join(lines[:-1]), encoding="utf-8")  # the records change
    again = analysis.recorded_view("sweep/humaneval")
    assert len(made) == 2 and again[3]["rows"] == len(again[2]) == len(first[2]) - 1
    with pytest.raises(gr.Error, match="No recorded sweep named"):
        analysis.recorded_view("nope")
    analysis._recorded_view.cache_clear()  # leave no view of this test's directory for the next


def test_a_recorded_sweep_without_its_report_lists_only_what_exists(tmp_path):
    assert analysis.recorded_files(tmp_path) is None
    (tmp_path / analysis.TABLE).write_text("suite\n", encoding="utf-8")
    assert analysis.recorded_files(tmp_path) == [
        str(tmp_path / analysis.TABLE)
    ]  # no report.html yet: no missing file offered


def test_live_sweep_streams_cell_by_cell(client):
    assert analysis.LIVE_OUTPUTS == (*analysis.SWEEP_OUTPUTS[:-1], "suite", "by_kind")  # a later part goes last
    job = client.submit("mini_spec_bench", 1, "p_drop", "0.3", 8, "embedded", api_name="/sweep")
    outputs = [named(out, analysis.LIVE_OUTPUTS) for out in job]
    notes = [out["note"] for out in outputs]
    assert any("1/2 cells" in n for n in notes) and notes[-1].startswith("**Live sweep done**")
    assert outputs[0]["suite"] is None  # the recorded-sweep choice is cleared while a live sweep shows
    files = outputs[-1]["files"]
    assert sorted(p.rsplit("/", 1)[-1] for p in files) == ["report.html", "table.csv"]
    table = pd.read_csv(next(p for p in files if p.endswith(".csv")))
    assert sorted(table["method"]) == ["dropmatch", "lossless"] and (table["n_tokens"] == 8).all()
    assert "title=" in outputs[-1]["summary"]


def test_a_visitors_files_are_cleared_from_the_server_after_a_day(tmp_path, monkeypatch):
    """A server that runs for weeks (a Space) keeps no visitor's files for good: each request's folder lies under one
    root, and folders older than KEPT_S go as the next one is made; Gradio's copies are cleared at the same age."""
    monkeypatch.setattr(common, "SCRATCH", tmp_path / "scratch")
    old, young = common.scratch_folder("run"), common.scratch_folder("sweep")
    day_ago = time.time() - common.KEPT_S - 60
    os.utime(old, (day_ago, day_ago))
    made = common.scratch_folder("run")
    assert not old.exists() and young.exists() and made.parent == tmp_path / "scratch" and made.name.startswith("run-")
    files = runs.downloads(runs.recorded())
    assert files and all(Path(f).parent.parent == tmp_path / "scratch" for f in files)
    assert app.build_demo().delete_cache == (3600, common.KEPT_S)


def test_a_live_sweep_cleared_from_the_server_says_so(tmp_path):
    gone = [str(tmp_path / "sweep-gone"), "mini_spec_bench"]
    with pytest.raises(gr.Error, match="no longer on the server .* run it again"):
        analysis.redraw_tradeoff(gone, "score")
    with pytest.raises(gr.Error, match="no longer on the server"):
        analysis.plan_power(gone, "2/164", "", 1, 0.12)


def test_live_sweep_refuses_too_large_a_sweep(client):
    with pytest.raises(Exception, match="at most 32 cells"):
        client.predict("mini_spec_bench", 8, "p_drop", "0,0.1,0.2,0.4,0.5", 8, "embedded", api_name="/sweep")


def test_a_relative_runs_on_the_relaxed_side_at_its_knob(client, view):
    out = client.predict(
        PROMPT, **{**SETTINGS, "criterion": "top-k", "knob": 3, "max_new_tokens": 8}, api_name="/trace"
    )
    traces = traces_from_data(out)
    relaxed = traces["DropMatch"]
    assert relaxed.config["method"] == "relative" and relaxed.config["knob"] == 3
    assert {r.reason for r in relaxed.records if r.kind == "draft" and r.accepted} <= {"exact", "top-k"}
    shown = by_name(view, explore.finished(view, traces, "Done"))  # named for the rule it ran, everywhere
    assert shown["table"].columns[1] == "top-k, k 3"
    assert title(shown["map_DropMatch"]).startswith("top-k, k 3")
    labels = by_name(view, explore.run_labels(view, traces))
    assert labels["step_run"].choices[0] == ("top-k, k 3", "DropMatch")
    assert labels["DropMatch"].label.startswith("top-k")
    recoloured = by_name(view, compare.recolour(view, traces, "typical", 0.3, None))
    assert title(recoloured["map_DropMatch"]).startswith(
        "top-k, k 3: what typical acceptance (Medusa) at epsilon 0.3 decides"
    )
    with pytest.raises(Exception, match=r"k must be an integer in \[1, 1000\]"):
        client.predict(PROMPT, **{**SETTINGS, "criterion": "top-k", "knob": 0.5}, api_name="/trace")


def test_the_maps_recolour_by_any_rule_and_the_panel_follows(api_traces, view):
    traces = traces_from_data(api_traces)
    picked = by_name(view, explore.inspect(view, traces, "DropMatch", 1))["selected"]
    out = by_name(view, compare.recolour(view, traces, "typical", 0.3, picked))
    assert set(out) == {"map_DropMatch", "map_lossless", "rules"}
    assert "at epsilon 0.3 decides" in title(out["map_DropMatch"]) and "epsilon 0.3" in out["rules"]
    for empty in ("", None):  # the knob box left empty (as the page sends it): the rule's default, said so
        default = by_name(view, compare.recolour(view, traces, "typical", empty, picked))["map_DropMatch"]
        assert "typical acceptance (Medusa) at epsilon 0.09 (its default) decides" in title(default)
    top_k = by_name(view, compare.recolour(view, traces, "top-k", "", picked))["map_DropMatch"]
    assert "at k 2 (its default)" in title(top_k) and top_k.data  # drawn, not an error
    own = by_name(view, compare.recolour(view, traces, compare.OWN, None, picked))
    assert "accept / reject per round" in title(own["map_DropMatch"])
    with pytest.raises(gr.Error, match="epsilon must lie"):
        compare.recolour(view, traces, "typical", 7, picked)


def test_the_power_planner_plans_the_sweep_shown_and_a_typed_discordance(client):
    """The recorded verdict at the bar (2/164): DropMatch 0.3 lost 16 and gained 14 of 164, so it needs 9,652
    problems to see the loss; a typed pilot's 30/164 gives the same; bad input is one clear message."""
    over_http = client.predict("2/164", "30/164", 1, 0.12, None, api_name="/plan_power")  # beside the first sweep
    assert "For the discordance typed in" in over_http and ">9,652<" in over_http
    source = [str(analysis.RECORDED["verdict"]), "humaneval"]
    shown = analysis.plan_power(source, "2/164", "30/164", 1, 0.12)
    typed_part, sweep_part = shown.split("For the sweep shown")
    assert ">9,652<" in typed_part
    dm = next(r for r in re.findall(r"<tr>.*?</tr>", sweep_part) if ">DropMatch js+majority<" in r and ">0.3<" in r)
    assert ">16<" in dm and ">14<" in dm and ">9,652<" in dm  # its own 16 lost, 14 gained
    assert 'title="problems_to_detect: ' in shown  # the definition one hover away
    assert "ρ: 95% high" not in shown  # a problem is its own cluster on HumanEval: no interval to show
    words = analysis.plan_power([str(analysis.RECORDED["word"]), "word-problems"], "2/164", "", 1, 0.12)
    row = next(r for r in re.findall(r"<tr>.*?</tr>", words) if ">DropMatch js+majority<" in r and ">0.3<" in r)
    cells = dict(re.findall(r'<td data-label="([^"]+)"[^>]*>([^<]*)</td>', row))
    rho = [float(cells[f"ρ{end}"].replace(",", "")) for end in (": 95% low", " within a cluster", ": 95% high")]
    assert rho == sorted(rho) and rho[0] < rho[2]  # templates cluster: ρ with its interval over resampled templates
    assert 'title="rho_high: ' in words and 'title="detectable_floor: ' in words
    floor, own = (
        float(cells[k]) for k in ("detectable loss, however many a cluster", "smallest loss detectable (80% power)")
    )
    assert 0 < floor < own  # more problems of these templates would help, down to that floor
    assert "however many a cluster" not in shown  # HumanEval's problems are their own clusters: no floor
    typed = analysis.plan_power(None, "2/164", "30/164", 4, 0.12)
    assert "For the sweep shown" not in typed and "problems, with these samples each" in typed
    assert "power against the loss" not in typed  # no size to judge at
    at = analysis.plan_power(None, "2/164", "0.1", 85, 0.1, 117)  # 117 templates of 85 problems
    cells = dict(re.findall(r'<td data-label="([^"]+)"[^>]*>([^<]*)</td>', at))
    assert float(cells["smallest loss detectable (80% power)"]) == pytest.approx(
        power.detectable(117 * 85 / 9.4, 0.1), rel=5e-3
    )
    assert float(cells["detectable loss, however many a cluster"]) == pytest.approx(
        power.detectable(1170, 0.1), rel=5e-3
    )
    for bad in (-5, 0):
        with pytest.raises(gr.Error, match="the problems to judge at must be a whole number above 0"):
            analysis.plan_power(None, "2/164", "0.1", 1, 0.1, bad)
    with pytest.raises(gr.Error, match="a share between 0 and 1"):
        analysis.plan_power(source, "2", "", 1, 0.12)
    with pytest.raises(gr.Error, match="samples a problem must be at least 1"):
        analysis.plan_power(source, "2/164", "", 0, 0.12)
    with pytest.raises(gr.Error, match="Open a scored sweep"):
        analysis.plan_power(None, "2/164", " ", 1, 0.12)


def test_the_recorded_verdict_shows_its_tables_curves_kinds_and_anchors():
    folder, suite, part = analysis.recorded_table("verdict/humaneval")
    c = analysis.content(part)
    assert "best_tau_non_inferior" in c["verdict"] and "non_inferior" in c["verdict"]
    assert "diff_low" in c["verdict"] and "a_only" in c["verdict"]
    assert "DropMatch at the calibration's anchors" in c["verdict"]  # assets/calibration/humaneval.json
    assert c["score_curves"] is not None and c["kinds"] is not None
    assert c["by_kind"] is None  # HumanEval's problems are of one kind
    rows = c["kinds"].layout.meta["rows"]  # at T = 0 a rule read for greedy decoding says so here too
    assert "typical (greedy reading) 0.3" in rows and not any(r.startswith("typical 0") for r in rows)


def test_the_sampled_verdict_pairs_each_problem_and_seed():
    folder, suite, part = analysis.recorded_table("sampled/humaneval")
    assert part["seed"].nunique() >= 1 and (part["method"] == "truncation").any()
    whole, _ = verdict.complete(part)
    table = verdict.against_lossless(whole)
    problems = whole.loc[whole["method"] == "lossless", "prompt_id"].nunique()
    seeds = whole.groupby("prompt_id")["seed"].nunique()
    assert (table["problems"] == problems).all() and (table["pairs"] == seeds.sum()).all()
    assert {"top-k-sampling", "min-p", "typical", "fly"} <= set(table["rule"])
    assert "a_only" in analysis.content(part)["verdict"]  # the paired table is shown


def test_a_suite_recorded_in_parts_draws_its_whole_settings_only():
    folder, suite, part = analysis.recorded_table("verdict/humaneval")
    first = part[part["method"] == "lossless"].head(3)
    partial = first.assign(method="relative", criterion="typical", knob=0.99, key=first["key"] + "|partial")
    c = analysis.content(pd.concat([part, partial]))
    assert "typical 0.99 (3 of 164)" in c["verdict"]  # named as in progress
    assert "0.99" not in str(c["tradeoff"].to_dict() if c["tradeoff"] else "") and "typical 0.99" not in str(c["kinds"])
    assert "0.99" in c["summary"]  # the summary still lists it, with its count


def test_a_relatives_inspector_says_its_rule_did_not_read_the_dropout_paths(noisy_pair, view):
    from dropmatch import DecodeConfig
    from dropmatch.decode import generate

    settings = {"evidence": True, "max_new_tokens": 12}
    traces = {
        "DropMatch": generate(
            noisy_pair, "def add(a, b):", DecodeConfig(method="relative", criterion="typical", **settings)
        ),
        "lossless": generate(noisy_pair, "def add(a, b):", DecodeConfig(method="lossless", **settings)),
    }
    out = by_name(view, explore.inspect(view, traces, "DropMatch", 0))
    assert out["heat"].data and "this run's rule did not read them" in title(out["heat"])


def test_a_pair_knob_and_the_span_gate_run_through_the_api(client, view):
    """Relaxed top-K/delta takes its two knobs as the knob box writes them; the span gate switches the relaxed side
    alone (lossless beside it runs no rule), and an opened trace puts both back in their controls."""
    settings = {**SETTINGS, "criterion": "relaxed-top-k", "knob": "4/1.5", "span_gate": True, "max_new_tokens": 8}
    traces = traces_from_data(client.predict(PROMPT, **settings, api_name="/trace"))
    relaxed, lossless = traces["DropMatch"], traces["lossless"]
    assert relaxed.config["knob"] in ([4, 1.5], (4, 1.5)) and relaxed.config["span_gate"] is True
    assert lossless.config["span_gate"] is False and lossless.config["knob"] is None
    assert all(r.gated is not None for r in relaxed.records if r.kind == "draft")
    shown = by_name(view, explore.finished(view, traces, "Done"))
    assert shown["table"].columns[1] == "relaxed-top-k, K 4, delta 1.5"
    restored = by_name(view, explore.restored(view, traces))
    assert restored["knob"] == "4/1.5" and restored["span_gate"] is True
    with pytest.raises(Exception, match="K/delta takes two numbers, written 8/0.5"):
        client.predict(PROMPT, **{**settings, "knob": "4"}, api_name="/trace")
