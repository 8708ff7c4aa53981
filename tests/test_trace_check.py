"""Trace files are checked once, where they enter: every bad file is one clear message naming the field, and
whatever passes the check can be drawn by every view without an error (a fuzz test over mutated traces). A file
that contradicts itself (a reason against its decision, a text against its tokens, a verdict for no rule, two runs
of one name) is refused the same way, and every trace recorded in the repository still loads."""

from __future__ import annotations

import copy
import dataclasses
import json
import random
from pathlib import Path

import gradio as gr
import pytest

import viz
from dropmatch.criteria import ACCEPT_REASONS, DRAFT_REASONS, RULES
from dropmatch.schema import parse_json
from dropmatch.trace import TOP, Trace
from ui import runs
from ui.common import APP_PROMPT_CHARS, UserError
from viz.rules import rule_heatmap, rules_html
from viz.summary import status_line, traces_from_data

ROOT = Path(__file__).resolve().parents[1]
STORY = json.loads((ROOT / "tests/data/traces/story_dropmatch.json").read_text("utf-8"))
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


def recorded_traces() -> list[Path]:
    """Every trace file in the repository: a JSON object with records at its top (tests/data/golden_tiny.json holds
    decodes without their timings or text, a golden file rather than a trace; a sweep's files hold no records)."""
    found = [*ROOT.glob("assets/traces/**/*.json"), *(ROOT / "tests/data").rglob("*.json")]
    return sorted(p for p in found if "records" in json.loads(p.read_text("utf-8")))


RECORDED = recorded_traces()


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_recorded_trace_loads_in_the_library_and_where_the_app_opens_it(path):
    trace = Trace.from_json(path)
    assert list(runs.read_traces([str(path)]).values()) == [trace]


def test_the_recorded_traces_are_found_and_each_example_opens_its_two_runs_together():
    assert len(RECORDED) >= 12 and ROOT / "tests/data/traces/story_dropmatch.json" in RECORDED
    for i in range(len(runs.examples())):
        assert set(runs.read_traces([str(p) for p in runs.example_files(i).values()])) == {"DropMatch", "lossless"}


def test_the_check_reads_the_vocabularies_the_decoder_writes():
    assert set(TOP) == {f.name for f in dataclasses.fields(Trace)}  # the top level holds the trace's fields only
    assert set(ACCEPT_REASONS) < set(DRAFT_REASONS)  # an accepted draft's reasons; the rest reject it


CONTRADICTIONS = [
    (
        ["records", 0, "target_rank"],
        2,
        "records[0].target_rank (round 0, pos 1): the token is the target's argmax, so its rank is 1; got 2",
    ),
    (
        ["records", 0, "target_argmax"],
        264,
        "records[0].target_argmax (round 0, pos 1): a greedy exact match is the target's argmax",
    ),
    (
        ["records", 0, "accepted"],
        False,
        "records[0].accepted (round 0, pos 1): reason 'exact' accepts the draft, so accepted must be true",
    ),
    (
        ["records", 1, "accepted"],
        None,
        "records[1].accepted (round 0, pos 2): reason 'js' accepts the draft, so accepted must be true",
    ),
    (
        ["records", 27, "reason"],
        "typical",
        "records[27].accepted (round 4, pos 4): reason 'typical' accepts the draft, so accepted must",
    ),
    (
        ["records", 27, "accepted"],
        True,
        "records[27].accepted (round 4, pos 4): reason 'rejected' rejects the draft, so accepted must",
    ),
    (
        ["records", 28, "accepted"],
        True,
        "records[28].accepted (round 4, pos 5): reason 'skipped' rejects the draft, so accepted must",
    ),
    (
        ["records", 5, "accepted"],
        True,
        "records[5].accepted (round 0, pos 6): only a draft is accepted or rejected; a bonus record",
    ),
    (["text"], STORY["text"] + " The end.", "text: must be what the emitted records' texts join to"),
    (["text"], STORY["text"].replace(" fish", " fush", 1), "text: must be what the emitted records' texts join to"),
    (["records", 12, "text"], "ERMAN", "text: must be what the emitted records' texts join to"),
    (["n_prompt_tokens"], -1, "n_prompt_tokens: must be at least 0, got -1"),
    (
        ["records", 0, "verdicts", "psychic"],
        True,
        "records[0].verdicts (round 0, pos 1): 'psychic' is neither a rule in the registry",
    ),
    (
        ["records", 1, "verdicts", "lossless"],
        False,
        "records[1].verdicts (round 0, pos 2): 'lossless' is neither a rule in the registry",
    ),
    (["colour"], "red", "unknown field 'colour' at the top level of the trace"),
]


@pytest.mark.parametrize("path, value, message", CONTRADICTIONS)
def test_each_contradiction_is_one_message_naming_the_field(path, value, message):
    with pytest.raises(ValueError) as err:
        Trace.from_dict(mutated(path, value), vocab=VOCAB)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_what_the_decoder_writes_still_passes():
    """Not contradictions: a sampled exact match of any rank (the lossless test is a draw), a lazy run's verdicts
    named by their reasons, the end token an `eos` run's text leaves out, and U+FFFD where bytes form no character."""
    sampled = mutated(["config", "temperature"], 1.0)
    sampled["records"][0] |= {"target_rank": 3, "target_argmax": 264, "p_argmax": 0.5}  # d drawn, not the argmax
    lazy = mutated(["records", 1, "verdicts"], {"js": True, "majority": False})
    last = [r for r in STORY["records"] if r["emitted"]][-1]["text"]
    ended = mutated(["finish"], "eos") | {"text": STORY["text"].removesuffix(last)}
    cut = mutated(["text"], STORY["text"] + "\ufffd")
    for data in (sampled, lazy, ended, mutated(["finish"], "eos"), cut):
        Trace.from_dict(data, vocab=VOCAB)


def test_two_runs_of_one_name_in_one_upload_are_refused(tmp_path):
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    for path in (first, second):
        path.write_text(json.dumps(STORY), encoding="utf-8")
    with pytest.raises(UserError) as err:
        runs.read_traces([str(first), str(second)])
    assert (
        err.value.message
        == "second.json: a second DropMatch run: an upload opens at most one of each (DropMatch and lossless)"
    )


def test_a_prompt_longer_than_the_prompt_box_is_refused_where_the_app_opens_it(tmp_path):
    path = tmp_path / "long.json"
    path.write_text(json.dumps(mutated(["prompt"], "x" * (APP_PROMPT_CHARS + 1))), encoding="utf-8")
    Trace.from_json(path)  # the library has no prompt limit: the app's Prompt box has
    with pytest.raises(UserError) as err:
        runs.read_traces([str(path)])
    assert (
        err.value.message
        == f"long.json: prompt: has {APP_PROMPT_CHARS + 1:,} characters; the app's limit is {APP_PROMPT_CHARS:,}"
    )


TRACES = {path: json.loads(path.read_text("utf-8")) for path in RECORDED}
NOT_NAMES = ["colour", "lossless", "psychic", "js-majority", "Exact", "metrics", "score", "fuzzy_js"]


def contradict(rng: random.Random, data: dict) -> str:
    """Make a recorded (greedy) trace contradict itself in place, one of the ways the check refuses: a greedy exact
    match off the target's top-1, an accepted flag against its reason, an edited text, a count out of range, a verdict
    for no rule, an unknown top-level field. Returns the field its message must name."""
    records = data["records"]
    kind = rng.choice(["exact", "accepted", "text", "count", "verdict", "top-level"])
    if kind == "exact":
        off = [i for i, r in enumerate(records) if r["kind"] == "draft" and r["token_id"] != r["target_argmax"]]
        if off and rng.random() < 0.3:  # a draft that is not the target's argmax, called an exact match
            i = rng.choice(off)
            records[i] |= {"reason": "exact", "accepted": True}
            return f"records[{i}].target_"
        i = rng.choice([i for i, r in enumerate(records) if r["reason"] == "exact"])
        if rng.random() < 0.5:
            records[i]["target_rank"] = rng.randint(2, 1000)
            return f"records[{i}].target_rank"
        records[i]["target_argmax"] = rng.choice([t for t in range(VOCAB - 5, VOCAB) if t != records[i]["token_id"]])
        return f"records[{i}].target_argmax"
    if kind == "accepted":
        i = rng.randrange(len(records))
        r = records[i]
        if r["kind"] != "draft":
            r["accepted"] = rng.choice([True, False])
        elif rng.random() < 0.5:
            r["accepted"] = rng.choice([None, r["reason"] not in ACCEPT_REASONS])
        else:
            r["reason"] = rng.choice(["rejected", "skipped"] if r["accepted"] else ACCEPT_REASONS)
        return f"records[{i}].accepted"
    if kind == "text":
        text = data["text"]
        chars = [i for i, c in enumerate(text) if c != "\ufffd"]
        at, new = rng.choice(chars), rng.choice(["a", " ", "\n", "é", "世", "0", "<"])
        how = rng.choice(["insert", "delete", "replace", "whole", "record"])
        if how == "record":
            i = rng.choice([i for i, r in enumerate(records) if r["emitted"]])
            records[i]["text"] += new
        elif how == "whole":
            data["text"] = rng.choice(["", new, text[::-1]])
        else:
            new = rng.choice([c for c in "ab #é世" if c != text[at]])
            data["text"] = text[:at] + {"insert": new + text[at], "delete": "", "replace": new}[how] + text[at + 1 :]
        return "text"
    if kind == "count":
        low = -rng.randint(1, 10**6)
        j, i = rng.randrange(len(data["rounds"])), rng.randrange(len(records))
        voted = [i for i, r in enumerate(records) if r.get("votes")]
        how = rng.choice(["prompt", "round costs", "round", "record round", "pos", "rank", "votes"])
        if how == "prompt":
            data["n_prompt_tokens"] = low
            return "n_prompt_tokens"
        if how == "round costs":
            name = rng.choice(["draft_forwards", "head_products", "path_positions"])
            data["rounds"][j][name] = low
            return f"rounds[{j}].{name}"
        if how == "round":
            data["rounds"][j]["round"] = low
            return f"rounds[{j}].round"
        if how == "votes" and voted:
            i = rng.choice(voted)
            records[i]["votes"][0][1] = rng.choice([0, low])
            return f"records[{i}].votes[0]"
        name = {"record round": "round", "pos": "pos", "rank": "target_rank"}.get(how, "pos")
        records[i][name] = rng.choice([0, low])
        return f"records[{i}]" if name == "round" else f"records[{i}].{name}"
    if kind == "verdict":
        i = rng.randrange(len(records))
        name = rng.choice([*NOT_NAMES, "".join(rng.choices("abcdefghij-+", k=rng.randint(1, 8)))])
        if name in {*RULES, *ACCEPT_REASONS}:
            name = "never-a-rule"
        records[i]["verdicts"] = (records[i].get("verdicts") or {}) | {name: rng.random() < 0.5}
        return f"records[{i}].verdicts"
    name = rng.choice([*NOT_NAMES, "".join(rng.choices("abcdefghijklmnop_", k=rng.randint(1, 12)))])
    name = name if name not in TOP else "not_a_field"
    data[name] = rng.choice(POOL)
    return repr(name)


def test_fuzz_contradictions_are_each_refused_with_one_message_naming_the_field(tmp_path):
    """Each contradiction above and 120 random ones of the same kinds over every recorded trace, then two runs of one
    name and over-long prompts where the app opens files: every one refused, by a ValueError (the app's: a UserError)
    whose message names the field; none slips through, none raises anything else."""
    rng = random.Random(0)
    cases = [(mutated(path, value), message.split(":")[0]) for path, value, message in CONTRADICTIONS]
    for _ in range(120):
        data = copy.deepcopy(TRACES[rng.choice(RECORDED)])
        cases.append((data, contradict(rng, data)))
    refused = 0
    for data, field in cases:
        with pytest.raises(ValueError) as err:
            Trace.from_dict(data, vocab=VOCAB)
        text = str(err.value)
        assert err.type is ValueError and field in text and "\n" not in text and len(text) < 400, (field, text)
        refused += 1
    for n in range(20):
        side = rng.choice(["DropMatch", "lossless"])
        paths = [p for p in RECORDED if p.name.endswith(f"_{side.lower()}.json")]
        if n % 2:
            files, field = [rng.choice(paths), rng.choice(paths)], f"a second {side} run"
        else:
            long = tmp_path / f"long{n}.json"
            data = TRACES[rng.choice(paths)] | {"prompt": "y" * rng.randint(APP_PROMPT_CHARS + 1, 3 * APP_PROMPT_CHARS)}
            long.write_text(json.dumps(data), encoding="utf-8")
            files, field = [long], "prompt: has"
        with pytest.raises(UserError) as err:
            runs.read_traces([str(p) for p in files])
        assert field in err.value.message and "\n" not in err.value.message, (field, err.value.message)
        refused += 1
    assert refused == len(cases) + 20 == 155


def test_two_runs_of_one_name_in_one_bundle_are_refused():
    bundle = {"a": copy.deepcopy(STORY), "b": copy.deepcopy(STORY)}
    with pytest.raises(ValueError, match="two DropMatch runs in one file: a file holds at most one of each"):
        traces_from_data(bundle)
