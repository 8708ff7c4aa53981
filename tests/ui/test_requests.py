"""What a request must be before it joins the queue (Run's and the upload's validators), the limits on one run's
work, the API's coercions, and the GPU time a request asks a ZeroGPU Space for; no model."""

from __future__ import annotations

import json

import gradio as gr
import pytest

from dropmatch.config import SETTINGS, DecodeConfig
from ui import common, explore, runs
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
    assert 30 <= short < long_ <= 240
    assert long_ > runs.gpu_seconds("embedded", "hi", large, True)  # the prompt's prefill counts too


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
