"""What a request must be before it joins the queue (Run's and the upload's validators), the limits on one run's
work, the API's coercions, and the GPU time a request asks a ZeroGPU Space for; no model."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import math
import sys
from datetime import timedelta
from importlib.resources import files
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest

from dropmatch.config import SETTINGS, DecodeConfig
from dropmatch.lab import live
from ui import analysis, common, explore, runs
from ui.common import APP_RUN_TOKENS, DEFAULTS, UserError, check_chat, check_prompt, check_prompt_tokens

START = {name: DEFAULTS.get(name) for name in SETTINGS}


def refused(prompt="def f(x):", chat=True, pair="embedded", **changes) -> dict[str, str]:
    """{input: message} for every input Run's validator marks bad."""
    marks = explore.check_run(prompt, chat, pair, **(START | changes))
    assert len(marks) == len(explore.RUN_INPUTS) and all(m["__type__"] == "validate" for m in marks)
    return {name: m["message"] for name, m in zip(explore.RUN_INPUTS, marks) if not m["is_valid"]}


@pytest.mark.parametrize(
    "request_, field, message",
    [
        ({"prompt": "  "}, "prompt", "Type a prompt"),
        ({"prompt": "x" * 4001}, "prompt", "4001 characters; the limit is 4000"),
        ({"prompt": "ok \ud800 no"}, "prompt", r"lone surrogate, '\\ud800', at character 4"),
        ({"chat": "maybe"}, "chat", "chat must be true or false; got 'maybe'"),
        ({"pair": "mine"}, "pair", "model pair must be one of embedded, hub; got 'mine'"),
        ({"K": 99}, "K", r"K must be an integer in \[1, 32\]; got 99"),
        ({"max_new_tokens": 1000}, "max_new_tokens", r"max new tokens must be an integer in \[1, 256\]"),
        ({"criterion": "typical", "knob": "7"}, "knob", r"epsilon must lie in \[0, 1\]"),
        ({"knob": "0.3"}, "knob", "takes no knob"),
        ({"criterion": "median"}, "criterion", "criterion must be one of"),
    ],
)
def test_run_refuses_a_bad_request_under_the_input_it_names(request_, field, message):
    import re

    marks = refused(**request_)
    assert list(marks) == [field] and re.search(message, marks[field])


def test_run_lets_a_good_request_through_with_an_empty_knob_or_a_relatives_own():
    assert refused() == {} and refused(knob="") == {} and refused(criterion="typical", knob="0.3") == {}
    assert refused(chat="false") == {} and refused(chat=0) == {}


def test_chat_as_an_api_caller_sends_it():
    assert check_chat("false") is False and check_chat("True") is True and check_chat(1) is True
    for bad in ("maybe", None, 2, 0.5):
        with pytest.raises(UserError, match="chat must be true or false"):
            check_chat(bad)


def test_a_run_holds_at_most_its_tokens_prompt_and_new_together():
    check_prompt_tokens(APP_RUN_TOKENS - 256, 256)
    with pytest.raises(UserError, match=f"The prompt is 900 tokens and asks for 256 new ones; .* {APP_RUN_TOKENS}"):
        check_prompt_tokens(900, 256)
    assert check_prompt("a\u0301" * 1000) == "a\u0301" * 1000  # legal text: the token count decides, with the pair


def test_a_long_prompt_of_combining_marks_is_refused_before_decoding(noisy_pair, monkeypatch):
    monkeypatch.setattr(runs, "model_pair", lambda pair, draft_quant="none": noisy_pair)
    prompt = "a" + "\u0301" * 3000  # 3,001 characters: within the character limit, thousands of tokens
    cfgs = common.configs(START | {"draft_quant": "none"})
    with pytest.raises(UserError, match=r"The prompt is \d+ tokens and asks for 48 new ones"):
        next(runs.rounds("embedded", prompt, cfgs, False))


def test_the_gpu_time_asked_for_follows_the_request():
    small = {n: DecodeConfig(max_new_tokens=8) for n in ("a", "b")}
    large = {n: DecodeConfig(max_new_tokens=256) for n in ("a", "b")}
    short, long_ = runs.gpu_seconds("embedded", "hi", small, True), runs.gpu_seconds("embedded", "x" * 4000, large, 1)
    assert common.GPU_S_START < short < long_ and all(isinstance(s, int) for s in (short, long_))
    assert long_ > runs.gpu_seconds("embedded", "hi", large, True)  # the prompt's prefill counts too
    assert common.gpu_duration(512, 0) == math.ceil(common.GPU_S_START + 512 * common.GPU_S_PER_TOKEN)


def source_functions(module: str, *names: str) -> SimpleNamespace:
    """Functions of a module, built from its source without importing it, annotations left out (`spaces.zero.wrappers`
    imports ZeroGPU's torch patches, which need a CUDA build of torch)."""
    tree = ast.parse(Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8"))
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in names]
    for node in found:
        node.returns = None
        for arg in (*node.args.args, node.args.vararg, node.args.kwarg):
            if arg is not None:
                arg.annotation = None
    namespace = {"timedelta": timedelta}
    exec(compile(ast.Module(body=found, type_ignores=[]), module, "exec"), namespace)
    return SimpleNamespace(**{name: namespace[name] for name in names})


@pytest.fixture
def zerogpu_asks(monkeypatch):
    """What the `spaces` package asks ZeroGPU's scheduler for, in seconds, for a GPU function decorated with
    `duration` and called with `args`: its own steps (static_duration calls `duration` with the call's arguments,
    process_duration, get_duration_seconds scales by the GPU's factor, schedule() rounds), on the ZeroGPU GPU whose
    factor is largest (the RTX Pro 6000 in spaces 0.51.3), which zero_gpu_factor then reads as well."""
    pytest.importorskip("spaces")
    from spaces.config import Config
    from spaces.zero import client, config

    wrappers = source_functions("spaces.zero.wrappers", "static_duration", "process_duration")

    slowest = max(
        json.loads(files("spaces.zero").joinpath(config.CONFIGS_FILENAME).read_text()),
        key=lambda c: c["duration_factor"],
    )
    monkeypatch.setattr(config, "get_config", lambda: slowest)
    monkeypatch.setattr(common, "spaces", sys.modules["spaces"])
    monkeypatch.setattr(Config, "zero_gpu", True)  # for zero_gpu_factor; nothing is decorated while it is set

    def asks(duration, *args) -> int:
        seconds = wrappers.static_duration(duration, *args)
        assert isinstance(seconds, int), f"{duration.__name__} gave {seconds!r}"
        return round(client.get_duration_seconds(wrappers.process_duration(seconds), None))

    asks.factor = slowest["duration_factor"]
    return asks


def gpu_args(prompt: str, max_new_tokens: int) -> tuple:
    """`runs.decode`'s arguments for a request as the page sends it."""
    return ("hub", prompt, common.configs(START | {"max_new_tokens": max_new_tokens}), True)


def test_a_run_asks_zerogpu_for_well_under_an_anonymous_visitors_quota(zerogpu_asks):
    """ZeroGPU refuses a request larger than the visitor's quota left (about 120 s a day without an account), and
    counts it scaled by its GPU's factor: the app's run, and the longest it serves, stay well under it."""
    assert zerogpu_asks.factor > 1
    first = runs.examples()[0]["prompt"]
    asked = {n: zerogpu_asks(runs.gpu_seconds, *gpu_args(first, n)) for n in (48, 256)}
    longest = zerogpu_asks(runs.gpu_seconds, *gpu_args("x" * common.APP_PROMPT_CHARS, 256))
    assert asked[48] <= common.ANONYMOUS_QUOTA_S / 3 and asked[256] <= longest <= 0.75 * common.ANONYMOUS_QUOTA_S
    note = common.gpu_request_note(runs.gpu_seconds(*gpu_args(first, 48)), common.zero_gpu_factor())
    assert note.startswith(f"On this Space a run asks ZeroGPU for {asked[48]} s of GPU time;")


def test_the_duration_functions_take_their_gpu_functions_arguments():
    """ZeroGPU calls a duration function with the GPU function's own arguments (spaces' static_duration)."""
    for duration, gpu_function in ((runs.gpu_seconds, runs.decode), (analysis.sweep_seconds, analysis.decode_sweep)):
        assert list(inspect.signature(duration).parameters) == list(inspect.signature(gpu_function).parameters)


def test_a_live_sweep_asks_for_its_plans_work(zerogpu_asks, tmp_path):
    """The sweep's request follows its plan (prompts x settings x tokens, and each cell's prefill): the tab's starting
    plan fits an anonymous visitor's quota, a larger plan asks for more."""
    start = live.plan("mini_spec_bench", 3, "p_drop", "0,0.3,0.5", 32)
    larger = live.plan("mini_spec_bench", 3, "p_drop", "0,0.3,0.5", 64)
    assert (start.cells, start.tokens) == (12, 12 * 32)
    due = live.todo(start, tmp_path)
    assert analysis.sweep_seconds(start, "hub", due) == common.gpu_duration(start.tokens, start.prompt_chars)
    asked = zerogpu_asks(analysis.sweep_seconds, start, "hub", due)
    larger_asks = zerogpu_asks(analysis.sweep_seconds, larger, "hub", live.todo(larger, tmp_path))
    assert asked <= common.ANONYMOUS_QUOTA_S and larger_asks > asked


def test_zerogpu_gets_the_duration_function(monkeypatch):
    asked = []

    class Spaces:
        @staticmethod
        def GPU(duration):  # noqa: N802 (the spaces package's name)
            asked.append(duration)
            return lambda fn: fn

    monkeypatch.setattr(common, "spaces", Spaces)
    common.gpu(duration=runs.gpu_seconds)(lambda: None)
    assert asked == [runs.gpu_seconds]


def test_an_upload_that_is_not_a_trace_is_refused_under_the_upload_box(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hello": 1}), encoding="utf-8")
    (mark,) = explore.check_files([str(bad)])
    assert mark["is_valid"] is False and mark["message"].startswith("bad.json: not a DropMatch trace")
    good = runs.example_files(0)
    assert explore.check_files([str(p) for p in good.values()]) == [gr.validate(True, "")]


def test_picking_a_rule_shows_its_default_knob_and_a_dropmatch_criterion_empties_the_box(view):
    names = {component: name for name, component in view.items()}
    typical = {names[c]: u for c, u in explore.relaxed_label(view, "typical").items()}
    assert typical["knob"]["placeholder"] == "default: epsilon 0.09" and "value" not in typical["knob"]
    dm = {names[c]: u for c, u in explore.relaxed_label(view, "js+majority").items()}
    assert dm["knob"]["value"] == ""


@pytest.mark.parametrize(
    "files, message",
    [
        (5, "not a file: 5"),
        ({"path": 1}, 'not a file: {"path": 1}'),
        ([None], "not a file: null"),
        ("missing.json", "missing.json: no such file"),
        ([".", "missing.json"], ".: no such file"),
    ],
)
def test_what_is_not_a_trace_file_is_refused_under_the_upload_box(files, message):
    (mark,) = explore.check_files(files)
    assert mark["is_valid"] is False and message in mark["message"] and "\n" not in mark["message"]


def test_no_file_says_how_an_api_caller_sends_one():
    (mark,) = explore.check_files(None)
    assert mark["is_valid"] is False and "gradio_client.handle_file(path)" in mark["message"]
