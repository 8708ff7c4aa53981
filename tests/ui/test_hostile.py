"""A battery of hostile inputs to /trace and /run, through gradio_client on the served app with the tiny pair: every
bad value is refused with a message that names its field (never Gradio's bare error, never decoded silently), and
the coercions an API caller relies on hold ("false" is false)."""

from __future__ import annotations

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError
from served import served

from dropmatch.config import SETTINGS
from ui import runs
from ui.common import DEFAULTS

pytestmark = pytest.mark.server

GOOD = {"prompt": "def f(x):", "chat": True, "pair": "embedded"} | {n: DEFAULTS.get(n) for n in SETTINGS}
GOOD |= {"max_new_tokens": 4, "draft_quant": "none"}
# (changes, a word the refusal must contain: the field's name or what the message calls it)
BATTERY = [
    ({"prompt": ""}, "prompt"),
    ({"prompt": "   "}, "prompt"),
    ({"prompt": 123}, "prompt"),
    ({"prompt": "x" * 4001}, "characters"),
    ({"prompt": "ok \ud800"}, "surrogate"),
    ({"prompt": "a" + "\u0301" * 3000}, "tokens"),
    ({"chat": "maybe"}, "chat"),
    ({"chat": 2}, "chat"),
    ({"chat": None}, "chat"),
    ({"pair": "mine"}, "model pair"),
    ({"pair": 5}, "model pair"),
    ({"gamma": 0}, "gamma"),
    ({"gamma": 17}, "gamma"),
    ({"gamma": "abc"}, "gamma"),
    ({"gamma": 2.5}, "gamma"),
    ({"gamma": "nan"}, "gamma"),
    ({"K": 0}, "K"),
    ({"K": 33}, "K"),
    ({"K": "x"}, "K"),
    ({"p_drop": -0.1}, "p_drop"),
    ({"p_drop": 1.0}, "p_drop"),
    ({"p_drop": "nan"}, "p_drop"),
    ({"p_drop": "inf"}, "p_drop"),
    ({"criterion": "median"}, "criterion"),
    ({"criterion": ""}, "criterion"),
    ({"criterion": 5}, "criterion"),
    ({"mode": "xor"}, "mode"),
    ({"temperature": -1}, "temperature"),
    ({"temperature": 6}, "temperature"),
    ({"temperature": "hot"}, "temperature"),
    ({"max_new_tokens": 0}, "max new tokens"),
    ({"max_new_tokens": 257}, "max new tokens"),
    ({"max_new_tokens": "many"}, "max new tokens"),
    ({"seed": -1}, "seed"),
    ({"seed": 2**31}, "seed"),
    ({"seed": "s"}, "seed"),
    ({"knob": "0.3"}, "knob"),
    ({"criterion": "typical", "knob": "7"}, "epsilon"),
    ({"criterion": "typical", "knob": "abc"}, "epsilon"),
    ({"criterion": "top-k", "knob": "0.5"}, "k must"),
    ({"criterion": "fuzzy-js", "knob": "-1"}, "threshold"),
    ({"draft_quant": "int3"}, "draft"),
    ({"draft_quant": 5}, "draft"),
]


def classify(client: Client, endpoint: str, changes: dict, word: str) -> str:
    """ "clear" (refused, the message names the field), "generic" (refused without saying why) or "accepted"."""
    try:
        client.predict(**(GOOD | changes), api_name=endpoint)
    except Exception as err:  # noqa: BLE001 (the client raises its own error types, each with the server's message)
        return "clear" if word.lower() in str(err).lower() else f"generic: {str(err)[:200]}"
    return "accepted"


@pytest.fixture(scope="module")
def client(noisy_pair):
    with pytest.MonkeyPatch.context() as patch, served() as c:
        patch.setattr(runs, "model_pair", lambda pair, draft_quant="none": noisy_pair)
        yield c


@pytest.mark.parametrize("endpoint", ["/trace", "/run"])
def test_every_hostile_input_is_refused_with_its_field_named(client, endpoint):
    found = {str(changes): classify(client, endpoint, changes, word) for changes, word in BATTERY}
    assert {k: v for k, v in found.items() if v != "clear"} == {}


def test_what_an_api_caller_sends_for_a_flag_means_what_it_says(client):
    for sent, meant in (("false", False), ("true", True), (False, False), (0, False)):
        out = client.predict(**(GOOD | {"chat": sent}), api_name="/trace")
        assert out["DropMatch"]["chat"] is meant and out["lossless"]["chat"] is meant


def test_too_many_positional_arguments_are_refused_naming_how_many_the_endpoint_takes(client):
    """Gradio drops positional values past an endpoint's inputs (it checks for too few only); the app refuses them."""
    args = [GOOD[name] for name in ("prompt", "chat", "pair", *SETTINGS)]
    for extra in (["one too many"], [1, 2, 3]):
        with pytest.raises(
            AppError, match=rf"/trace takes at most {len(args)} arguments; got {len(args) + len(extra)}"
        ):
            client.predict(*args, *extra, api_name="/trace")


@pytest.mark.parametrize("sent", ["story_dropmatch.json", ["story_dropmatch.json"], 5])
def test_open_files_with_what_is_not_a_file_says_how_to_send_one(client, sent):
    with pytest.raises(AppError, match=r"gradio_client\.handle_file\(path\)"):
        client.predict(sent, api_name="/open_files")
