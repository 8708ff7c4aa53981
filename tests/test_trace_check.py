"""Trace files are checked once, where they enter: every bad file is one clear message naming the field, and
whatever passes the check can be drawn by every view without an error (a fuzz test over mutated traces)."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import gradio as gr
import pytest

import viz
from dropmatch.schema import parse_json
from dropmatch.trace import Trace
from ui.common import UserError
from viz.rules import rule_heatmap, rules_html
from viz.summary import status_line, traces_from_data

STORY = json.loads((Path(__file__).resolve().parent / "data/traces/story_dropmatch.json").read_text("utf-8"))
VOCAB = 151_936


def draw_everything(trace: Trace, records: list[int]) -> None:
    """Every view the app builds from a trace, for the whole trace and for the given records."""
    viz.spans(trace, 3)
    viz.reason_heatmap(trace, "t")
    viz.metrics_frame({"DropMatch": trace, "lossless": trace})
    viz.acceptance_figure({"DropMatch": trace})
    status_line({"DropMatch": trace, "lossless": trace}, "Done")
    for i in records:
        rec = trace.records[i]
        for stage in range(len(viz.STAGES)):
            viz.round_story(trace, rec.round, stage)
        viz.round_figure(trace, rec.round)
        ev = viz.evidence_record(trace, rec)
        viz.caption(trace, rec)
        viz.distribution_heatmap(ev, rec if ev is not rec else None)
        viz.js_figure(ev)
        viz.votes_figure(ev)
        rules_html(trace, ev, {"typical": 0.3})
    rule_heatmap(trace, "typical", 0.3, "t")
    rule_heatmap(trace, "js", None, "t")


def mutated(path: list, value) -> dict:
    data = copy.deepcopy(STORY)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is DROP:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


DROP = object()


@pytest.mark.parametrize(
    "path, value, message",
    [
        (["config"], "oops", "config: expected an object"),
        (["config", "gamma"], 99, "config: gamma must be an integer in [1, 16]"),
        (["config", "colour"], "red", "config: got an unexpected keyword argument 'colour'"),
        (["records", 3, "round"], "a", 'records[3].round: expected an integer, got "a"'),
        (["records", 3, "text"], None, "records[3].text: expected a string, got null"),
        (["records", 3, "reason"], "psychic", "records[3].reason: a draft record's reason is one of"),
        (["records", 3, "token_id"], 10**9, "records[3].token_id (a token id): must lie in [0, 151935]"),
        (["records", 3, "token_id"], -5, "records[3].token_id (a token id): must lie in [0, 151935]"),
        (["records", 3, "p"], 1.5, "records[3].p: must lie in [0.0, 1.0]"),
        (["records", 3, "js_paths"], [0.1, 0.2], "records[3].js_paths: holds 2 values for K = 5 paths"),
        (["records", 3, "votes"], [[5, 9]], "records[3].votes[0]: expected [token id, count of at most K = 5]"),
        (["records", 3, "pos"], 9, "records[3].pos: must lie in [1, 6]"),
        (["records", 3, "weird"], 1, "records[3]: unknown field 'weird'"),
        (["records", 3, "kind"], DROP, "records[3].kind: missing"),
        (["records", 0, "top", "ids"], [1, 2], "records[0].top: its lists must all hold one value per token id"),
        (["rounds", 2, "round"], 7, "rounds[2].round: rounds must be numbered 0, 1, 2, ... in order"),
        (["rounds", 2, "t_total"], float("inf"), "rounds[2].t_total: expected a finite number"),
        (["rounds"], [], "rounds: the trace holds no rounds"),
        (["token_ids", 0], 42, "token_ids: must be the emitted records' tokens, in order"),
        (["finish"], "tired", "finish: must be one of eos, length, stop or null"),
        (["records"], STORY["records"] * 2, "records must run round by round"),
        (["records"], STORY["records"][:-1], "round 8 has no correction, bonus or target record to close it"),
    ],
)
def test_each_violation_is_one_message_naming_the_field(path, value, message):
    with pytest.raises(ValueError) as err:
        Trace.from_dict(mutated(path, value), vocab=VOCAB)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_size_depth_and_syntax_are_refused_before_reading():
    with pytest.raises(ValueError, match="nests far more than"):
        parse_json("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nests more than 12 levels"):
        parse_json("[" * 20 + "]" * 20)
    with pytest.raises(ValueError, match="may have at most 100"):
        parse_json("x" * 101, max_bytes=100)
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_json('{"records": ')
    with pytest.raises(ValueError, match="not a text file"):
        parse_json(b"\xff\xfe{}")


def test_the_recorded_example_passes_and_a_bundle_names_its_file_problem():
    assert Trace.from_dict(copy.deepcopy(STORY), vocab=VOCAB).token_ids == STORY["token_ids"]
    with pytest.raises(ValueError, match=r"^not a DropMatch trace: records\[3\].round: expected an integer"):
        traces_from_data({"DropMatch": mutated(["records", 3, "round"], "a")})


POOL = ["a", "", None, True, -5, 0, 1, 7, 10**9, 0.5, -0.5, 1e300, [], [1, 2], {}, {"x": 1}, [[1, 2]]]


def paths_of(value, prefix=()) -> list[tuple]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in [(*prefix, k), *paths_of(v, (*prefix, k))]]
    if isinstance(value, list):
        return [p for i, v in enumerate(value[:3]) for p in [(*prefix, i), *paths_of(v, (*prefix, i))]]
    return []


def test_fuzz_mutated_traces_are_refused_clearly_or_drawn_without_error():
    rng = random.Random(0)
    paths = paths_of(STORY)
    refused = drawn = 0
    for _ in range(250):
        path = list(rng.choice(paths))
        value = DROP if rng.random() < 0.15 and isinstance(path[-1], str) else rng.choice(POOL)
        data = mutated(path, value)
        try:
            trace = Trace.from_dict(data, vocab=VOCAB)
        except ValueError as err:
            text = str(err)
            assert text and "\n" not in text and len(text) < 400, (path, value, text)
            refused += 1
            continue
        record = path[1] if path[0] == "records" and len(path) > 1 else 0
        if drawn < 15:  # drawing costs about a second; 15 accepted mutations cover the views
            draw_everything(trace, sorted({0, record, len(trace.records) - 1}))
        drawn += 1
    assert refused > 120 and drawn > 15  # both sides of the boundary were exercised


def test_an_expected_error_shows_in_the_page_without_a_traceback_in_the_log():
    err = UserError("bad input")
    assert isinstance(err, gr.Error) and err.print_exception is False and err.message == "bad input"
