"""What every tab shares: model pairs, app limits, validation to a UserError (a gr.Error that leaves no traceback in
the log), the pair loader, ZeroGPU, named parts."""

from __future__ import annotations

import inspect
import os
import socket
import typing
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from functools import partial, update_wrapper
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlparse

import gradio as gr
from huggingface_hub import constants, try_to_load_from_cache

from dropmatch import embedded
from dropmatch.config import (
    MODES,
    PAPER_SETTING,
    SETTINGS,
    DecodeConfig,
)
from dropmatch.criteria import RULES
from dropmatch.models import DEFAULT_DRAFT, DEFAULT_TARGET, HUB_PAIR, default_device, load_pair
from viz.summary import RUNS

try:  # on a Space, app.py imported it first, before anything imported torch (ZeroGPU patches torch as it loads)
    import spaces
except ImportError:
    spaces = None

ROOT = Path(__file__).resolve().parents[1]
PAPER = "https://arxiv.org/abs/2603.03333"
PAIRS = {"embedded": (DEFAULT_TARGET, DEFAULT_DRAFT), "hub": HUB_PAIR}
# Short enough for a phone; the menu's info line says more (EMBEDDED_LABEL has the details).
PAIR_INFO = (
    "embedded: Qwen2.5-Coder 1.5B (Q4_K_M) + 0.5B (AWQ, Q4_K_M); hub: the bf16 originals, a different "
    "pair (needs huggingface.co)"
)
PAIR_CHOICES = [
    ("Embedded 4-bit pair (offline)", "embedded"),
    ("Hub bf16 originals (online)", "hub"),
]
# What this app serves, tighter than the library's ranges: a prompt's characters, and the tokens of one run (the
# `limits` the config's settings are checked within).
APP_PROMPT_CHARS = 4000
APP_LIMITS = {"max_new_tokens": (1, 256)}
# One run's work, in the pair's tokens: the prompt and the new tokens together (a prompt of combining marks is a few
# thousand characters but many thousand tokens, and its prefill alone held the only worker for minutes).
APP_RUN_TOKENS = 1024
APP_VOCAB = 151_936  # the logit width of both pairs the app serves (Qwen2.5-Coder): an opened trace's ids lie below it
# The controls' starting values, which /trace also defaults to: the paper's setting, greedy, 48 tokens.
# On a CPU the int4 draft by default: lossless all the same (the target verifies every token), and the fastest of
# the three drafts timed side by side (lossless 1.60x the stock draft's tokens/s, int8 1.33x: docs/results.md, "A lean
# draft"); on a GPU the stock draft (int4 is a CPU kernel here, int8 there has no kernel of its own).
DEFAULTS = {
    **PAPER_SETTING,
    "mode": MODES[0],
    "temperature": 0.0,
    "max_new_tokens": 48,
    "seed": 0,
    "draft_quant": "int4" if default_device() == "cpu" else "none",
}
# The criterion menu: (label, rule name) from the registry, DropMatch's criteria first, then its relatives.
CRITERION_CHOICES = [(rule.label, name) for name, rule in RULES.items()]

Parts = Mapping[str, Any]  # a tab's components by name, frozen once the layout is built


class UserError(gr.Error):
    """An expected error (bad input, a file that is not a trace, a pair that cannot load): one clear message in the
    page, and no traceback in the server's log."""

    def __init__(self, message: str):
        super().__init__(message, print_exception=False)


def parts(named: dict) -> Parts:
    """Freeze a layout's {name: component}."""
    return MappingProxyType(dict(named))


def pick(p: Parts, names: Iterable[str]) -> list:
    """The components named, in order: an event's inputs or outputs."""
    return [p[name] for name in names]


def updates(p: Parts, values: Mapping[str, Any]) -> dict:
    """{name: value} as the {component: value} dict a handler returns; outputs not named stay unchanged."""
    return {p[name]: value for name, value in values.items()}


def bind(fn, *parts_first):
    """`fn` with its first arguments given (a tab's parts), keeping its name and docstring for the API page.

    Its other parameters stay as they are: Gradio names an endpoint's inputs after them.
    """
    bound = partial(fn, *parts_first)
    bound.__name__, bound.__doc__ = fn.__name__, fn.__doc__
    return bound


def gpu(fn=None, *, duration=120):
    """Request a ZeroGPU slot for `fn` where the `spaces` package exists; unchanged elsewhere. `duration`: seconds,
    or a function of `fn`'s arguments that gives them (ZeroGPU calls it with the same arguments)."""
    if fn is None:
        return lambda f: gpu(f, duration=duration)
    return spaces.GPU(duration=duration)(fn) if spaces is not None else fn


def zero_gpu() -> bool:
    """Whether this is a ZeroGPU Space: the `spaces` package is installed and says so (its `Config.zero_gpu`, which
    reads SPACES_ZERO_GPU; that variable where a package does not hold the config)."""
    if spaces is None:
        return False
    config = getattr(getattr(spaces, "config", None), "Config", None)
    if config is not None:
        return bool(config.zero_gpu)
    return os.getenv("SPACES_ZERO_GPU", "").lower() in ("1", "t", "true")


@contextmanager
def user_errors(prefix: str = "") -> Iterator[None]:
    """A library ValueError inside becomes a UserError (a gr.Error) with the same message (after `prefix`)."""
    try:
        yield
    except ValueError as err:
        raise UserError(f"{prefix}{err}") from None


def check_prompt(prompt) -> str:
    """The prompt as typed, or a UserError: empty, longer than APP_PROMPT_CHARS, or not text (a lone surrogate)."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise UserError("Type a prompt or pick an example first.")
    if len(prompt) > APP_PROMPT_CHARS:
        raise UserError(f"The prompt has {len(prompt)} characters; the limit is {APP_PROMPT_CHARS}.")
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as err:
        raise UserError(
            f"The prompt has a character that is not text (a lone surrogate, {prompt[err.start]!r}, at character "
            f"{err.start + 1}); remove it."
        ) from None
    return prompt


def check_prompt_tokens(n_prompt: int, max_new_tokens: int) -> None:
    """One run's work within APP_RUN_TOKENS (prompt and new tokens together), or a UserError that says by how much."""
    if n_prompt + max_new_tokens > APP_RUN_TOKENS:
        raise UserError(
            f"The prompt is {n_prompt} tokens and asks for {max_new_tokens} new ones; a run here holds at most "
            f"{APP_RUN_TOKENS} tokens (prompt and new tokens together): shorten the prompt, or ask for fewer new "
            "tokens."
        )


def check_chat(chat) -> bool:
    """The chat-format flag: a bool, or what an API caller may send for one ("true" / "false", 1 / 0); anything else
    is a UserError (bool("false") would be True)."""
    if isinstance(chat, bool):
        return chat
    said = {"true": True, "false": False, "1": True, "0": False}.get(str(chat).strip().lower())
    if said is None:
        raise UserError(f"chat must be true or false; got {chat!r}")
    return said


def configs(settings: Mapping[str, Any]) -> dict[str, DecodeConfig]:
    """The two configs from the settings by name (SETTINGS; same draft, same seed, full evidence, within APP_LIMITS):
    the chosen rule (DropMatch or a relative, at `knob`, empty = its default) on the first side, lossless on the
    second; an empty draft_quant is the app's default."""
    raw = {**settings, "draft_quant": settings.get("draft_quant") or DEFAULTS["draft_quant"]}
    rule = RULES.get(raw.get("criterion"))
    if rule is not None and rule.knob is None and raw.get("knob") not in (None, ""):
        raise UserError(f"{rule.title} ({raw['criterion']}) takes no knob; leave the knob empty (a relative's setting)")
    with user_errors():
        relaxed = DecodeConfig.from_settings(limits=APP_LIMITS, evidence=True, **raw)
        return {RUNS[0]: relaxed, RUNS[1]: replace(relaxed, method="lossless", knob=None)}


def takes_settings(fn):
    """`fn(..., settings)` as a handler (or a gr.api endpoint) that takes one parameter per setting in place of
    `settings`: SETTINGS in order, each defaulted as the controls start (DEFAULTS) and typed as its default (the
    config's field where it starts empty), so Gradio names and types the endpoint's inputs after them; `fn` gets
    them as one {name: value} dict."""
    hints, fields = typing.get_type_hints(fn), typing.get_type_hints(DecodeConfig)
    first = [
        p.replace(annotation=hints.get(p.name, p.empty))
        for p in inspect.signature(fn).parameters.values()
        if p.name != "settings"
    ]
    named = [
        inspect.Parameter(
            name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=DEFAULTS.get(name),
            annotation=fields[name] if DEFAULTS.get(name) is None else type(DEFAULTS[name]),
        )
        for name in SETTINGS
    ]
    signature = inspect.Signature([*first, *named], return_annotation=hints.get("return", inspect.Signature.empty))

    def split(args, kwargs) -> tuple[list, dict]:
        given = signature.bind(*args, **kwargs)
        given.apply_defaults()
        return [given.arguments[p.name] for p in first], {name: given.arguments[name] for name in SETTINGS}

    if inspect.isgeneratorfunction(fn):  # Gradio streams what a generator function yields

        def handler(*args, **kwargs):
            head, settings = split(args, kwargs)
            yield from fn(*head, settings=settings)

    else:

        def handler(*args, **kwargs):
            head, settings = split(args, kwargs)
            return fn(*head, settings=settings)

    update_wrapper(handler, fn)
    handler.__signature__ = signature
    handler.__annotations__ = {p.name: p.annotation for p in signature.parameters.values() if p.annotation != p.empty}
    if "return" in hints:
        handler.__annotations__["return"] = hints["return"]
    return handler


def hub_ready(timeout: float = 3.0) -> bool:
    """The hub pair can load when both models are cached locally or the hub answers."""
    if all(isinstance(try_to_load_from_cache(repo, "config.json"), str) for repo in HUB_PAIR):
        return True
    if constants.HF_HUB_OFFLINE:
        return False
    try:
        socket.create_connection((urlparse(constants.ENDPOINT).hostname, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def default_pair() -> str:
    """The pair the app offers first: the embedded one where it is installed, else the hub's (a Space installs
    requirements.txt only and preloads the hub pair, `preload_from_hub` in the README's front matter)."""
    return "embedded" if embedded.available() else "hub"


def check_pair(pair) -> str:
    if not isinstance(pair, str) or pair not in PAIRS:
        raise UserError(f"model pair must be one of {', '.join(PAIRS)}; got {pair!r}")
    return pair


def model_pair(pair: str, draft_quant: str = "none"):
    """The cached pair in bfloat16 (on CUDA where present), its draft as `draft_quant`; every failure is a clear
    gr.Error."""
    check_pair(pair)
    if pair == "hub" and not hub_ready():
        other = " Use the embedded pair." if embedded.available() else ""
        raise UserError(
            f"The hub pair needs huggingface.co (or its files in the local cache), which this machine "
            f"cannot reach.{other}"
        )
    try:
        return load_pair(*PAIRS[pair], dtype="bfloat16", device=default_device(), draft_quant=draft_quant)
    except (ValueError, OSError) as err:
        raise UserError(f"Cannot load the {pair} pair: {err}") from None
