"""What every tab shares: model pairs, app limits, validation to a UserError (a gr.Error that leaves no traceback in
the log), the pair loader, ZeroGPU, named parts."""

from __future__ import annotations

import inspect
import math
import os
import shutil
import socket
import tempfile
import threading
import time
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
    DRAFT_QUANTS,
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
    "span_gate": False,
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
    or a function of `fn`'s arguments that gives them (ZeroGPU calls it with the same arguments, before each call)."""
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


# The GPU time a request asks ZeroGPU for (gpu_duration), from what it costs on ZeroGPU's reference GPU, an H200 slice
# (ZeroGPU scales every request by its GPU's factor: zero_gpu_factor). A visitor's daily quota must hold the request
# scaled (about 120 s without an account), so a run stays well under it. Estimates, until `python -m
# dropmatch.lab.gpucheck` (side_by_side: both runs' seconds a token, a round a token on random weights) measures them:
# - GPU_S_PER_TOKEN, per new token of each run: a round of the bf16 pair in eager PyTorch (gamma 5 steps of the 0.5B
#   draft, one forward of the 1.5B target, K dropout paths and the criteria on its head) takes tens of milliseconds,
#   bound by kernel launches, under 80; it emits at least one token, 2 to 6 in the recorded examples (tau). So 0.08 s
#   covers a run whose every round emits one token, and twice the typical cost.
# - GPU_S_PER_CHAR, per prompt character: each run prefills the prompt in both models, at most APP_RUN_TOKENS tokens
#   (well under a second on the GPU); 4 s at APP_PROMPT_CHARS, with room for the tokenizer and the chat template.
# - GPU_S_START: ZeroGPU forks a worker (or reuses an idle one) and moves the pair onto the GPU (about 4 GB in bf16),
#   CUDA runs its first kernels, and the heads are checked there.
GPU_S_START, GPU_S_PER_TOKEN, GPU_S_PER_CHAR = 10, 0.08, 0.001
ANONYMOUS_QUOTA_S = 120  # a visitor without a Hugging Face account: about 2 minutes of ZeroGPU a day


def gpu_duration(tokens: int, chars: int) -> int:
    """Whole seconds of GPU to ask ZeroGPU for: the start, `tokens` new tokens to decode and `chars` prompt characters
    to prefill (GPU_S_*), rounded up."""
    return math.ceil(GPU_S_START + tokens * GPU_S_PER_TOKEN + chars * GPU_S_PER_CHAR)


def zero_gpu_factor() -> float:
    """How ZeroGPU scales the seconds a GPU function asks for on the GPU this Space runs on: the `spaces` package's
    `duration_factor`: 1.5 on the RTX Pro 6000 half of which a default slot gets, 1 on an H200 slice. It scales both
    the time the slot lasts and the request checked against the visitor's quota; 1 off ZeroGPU."""
    if not zero_gpu():
        return 1.0
    try:
        from spaces.zero.config import get_config
    except ImportError:
        return 1.0
    return float(get_config().get("duration_factor", 1.0))


def gpu_request_note(seconds: int, factor: float = 1.0, what: str = "a run") -> str:
    """The page's line on the GPU time a request asks a ZeroGPU Space for: `seconds` (what its GPU function asks,
    e.g. runs.gpu_seconds) times the GPU's `factor` (zero_gpu_factor), rounded as ZeroGPU rounds it."""
    return (
        f"On this Space {what} asks ZeroGPU for {round(seconds * factor)} s of GPU time; ZeroGPU refuses a request "
        f"larger than what is left of the visitor's daily quota (about {ANONYMOUS_QUOTA_S} s without a Hugging Face "
        "account)."
    )


def draft_quant_choices() -> list[str]:
    """The draft weights the page offers (DRAFT_QUANTS); on ZeroGPU only the draft loaded as the app starts (the app's
    default): another would load inside the GPU slot, on the visitor's quota, in a worker that forgets it."""
    return [DEFAULTS["draft_quant"]] if zero_gpu() else list(DRAFT_QUANTS)


class Stops:
    """The sessions whose Stop was pressed while their run streams (Explore and the live sweep each keep their own).
    Stop only marks its session here; the run itself ends at its next round (or cell), showing what it did, and
    finishes as a run that is done does. (Gradio's own `cancels` left the cancelled run pending in the page for a
    second or more after "Stopped" showed, and a Run pressed then was dropped, or ran into a late "Error".) A run
    clears its session's mark as it starts and as it ends, so nothing of one run is left for the next."""

    def __init__(self):
        self._marked: set[str] = set()
        self._lock = threading.Lock()

    def mark(self, session: str | None) -> None:
        with self._lock:
            self._marked.add(session)

    def clear(self, session: str | None) -> None:
        with self._lock:
            self._marked.discard(session)

    def __contains__(self, session: str | None) -> bool:
        with self._lock:
            return session in self._marked


def session_of(request: gr.Request | None) -> str | None:
    """The visitor's session (one page, or one API client); None where a handler is called directly."""
    return getattr(request, "session_hash", None) if request is not None else None


SCRATCH = Path(tempfile.gettempdir()) / "dropmatch-explorer"  # every request's files, one folder a request
KEPT_S = 24 * 3600  # how long a visitor's files stay on the server: a run's downloads, a live sweep's folder


def scratch_folder(kind: str) -> Path:
    """A fresh folder for one request's files, under SCRATCH. Folders older than KEPT_S are removed first, so a
    server that runs for weeks (a Space) does not keep every visitor's files; Gradio serves its own copy of what a
    handler returns, and clears those at the same age (`app.build_demo`'s delete_cache)."""
    SCRATCH.mkdir(parents=True, exist_ok=True)
    cutoff = time.time() - KEPT_S
    for old in SCRATCH.iterdir():
        try:
            stale = old.stat().st_mtime < cutoff
        except FileNotFoundError:  # another request removed it first
            continue
        if stale:
            shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=SCRATCH))


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
        # the lossless side in OR mode whatever the first side's: "replace" drops the lossless test, which is all
        # lossless decoding has (its records then had no accepting rule, and the run stopped on an internal error)
        lossless = replace(relaxed, method="lossless", knob=None, mode=MODES[0], span_gate=False)
        return {RUNS[0]: relaxed, RUNS[1]: lossless}


API_TYPES = {"knob": float | str | None}  # a number, or a pair written as text ("8/0.5"), as the knob box sends it


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
            annotation=API_TYPES.get(name) or (fields[name] if DEFAULTS.get(name) is None else type(DEFAULTS[name])),
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
    """The cached pair in bfloat16 (on CUDA where present), its draft as `draft_quant`; a bad request or a pair that
    cannot load is a clear gr.Error. On ZeroGPU its heads are not checked here, where CUDA is only emulated on the CPU
    (the GPU functions check them, on the GPU), and only the draft loaded as the app starts is served."""
    check_pair(pair)
    if pair == "hub" and not hub_ready():
        other = " Use the embedded pair." if embedded.available() else ""
        raise UserError(
            f"The hub pair needs huggingface.co (or its files in the local cache), which this machine "
            f"cannot reach.{other}"
        )
    if zero_gpu() and draft_quant not in draft_quant_choices():
        raise UserError(
            f"This ZeroGPU Space serves the draft it loaded as it started ({DEFAULTS['draft_quant']}); the "
            f"{draft_quant} draft would load inside the GPU slot, on your quota."
        )
    try:
        models = load_pair(
            *PAIRS[pair], dtype="bfloat16", device=default_device(), draft_quant=draft_quant, check=not zero_gpu()
        )
    except (ValueError, OSError) as err:
        raise UserError(f"Cannot load the {pair} pair: {err}") from None
    if (pair, draft_quant) == (default_pair(), DEFAULTS["draft_quant"]):
        _START_FAILURE.clear()  # loaded now: what kept it from loading as the app started is past
    return models


_START_FAILURE: list[str] = []  # why the default pair did not load as the app started, while it stays unloaded


def start_failed(pair: str, reason: str) -> None:
    """Keep why the default pair did not load as the app started (app.load_default), for the page to say."""
    _START_FAILURE[:] = [f"The {pair} pair did not load as the app started: {reason}"]


def start_failure() -> str | None:
    """Why the default pair did not load as the app started, as a sentence for the page; None once it has loaded (or
    while it loads, or where nothing failed)."""
    return _START_FAILURE[0] if _START_FAILURE else None


def is_files(value) -> bool:
    """A file input's value as Gradio's client and page send it: none, a file ({"path": ...}), or a list of them."""
    items = value if isinstance(value, list) else [value]
    return value is None or all(isinstance(v, dict) and isinstance(v.get("path"), str) for v in items)


def strict_inputs(demo: gr.Blocks) -> gr.Blocks:
    """Refuse what Gradio 6.31 drops without a word or refuses without saying why: `Blocks.validate_inputs` checks an
    event for too few input values only and drops extra positional ones, and a file input's value that is not a file
    fails its data model with a bare HTTP 400 before the event's validator can say why. Too many values is a gr.Error
    naming how many the endpoint takes; a value that is not a file reaches the validator as no file, which refuses it
    with its message. (It wraps a Gradio method on this demo: check it again when Gradio is upgraded;
    tests/ui/test_hostile.py does.)"""
    check = demo.validate_inputs

    def validate_inputs(block_fn, inputs: list) -> None:
        if len(inputs) > len(block_fn.inputs) and not block_fn.is_validator_function:
            name = f"/{block_fn.api_name}" if block_fn.api_name else "This event"
            most = len(block_fn.inputs)
            raise UserError(f"{name} takes at most {most} argument{'s' * (most != 1)}; got {len(inputs)}")
        for i, block in enumerate(block_fn.inputs[: len(inputs)]):
            if isinstance(block, gr.File) and not is_files(inputs[i]):
                inputs[i] = None
        check(block_fn, inputs)

    demo.validate_inputs = validate_inputs
    return demo
