"""The Explore tab's work without components: both runs decoded side by side, the /trace API, trace files in and out."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path

from dropmatch.config import SETTINGS, DecodeConfig
from dropmatch.decode import Request, stream_many
from dropmatch.metrics import compare, token_table
from dropmatch.models import check_heads, encode_prompt
from dropmatch.schema import MAX_BYTES, parse_json
from dropmatch.trace import RoundRecord, TokenRecord, Trace
from ui.common import (
    APP_PROMPT_CHARS,
    APP_VOCAB,
    DEFAULTS,
    ROOT,
    UserError,
    check_chat,
    check_pair,
    check_prompt,
    check_prompt_tokens,
    configs,
    default_pair,
    gpu,
    gpu_duration,
    model_pair,
    scratch_folder,
    takes_settings,
    user_errors,
)
from viz.summary import RUNS, measure, traces_from_data

EXAMPLES = ROOT / "assets/examples.json"
EXAMPLE_TRACES = ROOT / "assets/traces/examples"  # each example's two runs at the app's defaults
FIRST_SCREEN = "English story"  # the example the page opens on: recorded at the app's defaults, so Run reproduces it


def validate(prompt, settings: dict) -> tuple[str, dict[str, DecodeConfig]]:
    """The prompt and the two configs from the settings by name, or a clear gr.Error before anything loads."""
    return check_prompt(prompt), configs(settings)


def user_steps(steps: Iterator) -> Iterator:
    """The steps of a decode, with a ValueError raised while decoding (a setting the pair cannot run) as the visitor's
    clear error."""
    while True:
        try:
            s = next(steps)
        except StopIteration:
            return
        except ValueError as err:
            raise UserError(str(err)) from None
        yield s


def gpu_seconds(pair: str, prompt: str, cfgs: dict[str, DecodeConfig], chat) -> int:
    """The GPU time a request asks ZeroGPU for (`decode`'s duration; ZeroGPU calls it with decode's arguments and
    checks the visitor's quota against it): every run's new tokens and the prompt's prefill (common.gpu_duration),
    18 s at the app's 48 tokens, 55 s at most (256 tokens, a 4,000-character prompt)."""
    return gpu_duration(sum(c.max_new_tokens for c in cfgs.values()), len(prompt))


@dataclass(frozen=True)
class Step:
    """What one yield of the GPU function adds to a run's trace, in place of the whole trace: on ZeroGPU each yield is
    pickled from the GPU worker to the process that serves the page, and the whole trace grows with every round."""

    token_ids: list[int]  # the ids the round emitted
    records: list[TokenRecord]  # its token records
    rounds: list[RoundRecord]  # its round record
    text_kept: int  # the text's first characters that stay (a character cut short may complete, or go)
    text_added: str  # and what follows them
    finish: str | None
    head: Trace | None = None  # a run's first step: the fields that do not change (config, prompt, environment, ...)


def step(trace: Trace, sent: tuple[int, int, int, str] | None) -> Step:
    """What `trace` holds beyond what was sent of it: (token ids, records, rounds, text), None at first."""
    n_ids, n_records, n_rounds, text = sent or (0, 0, 0, "")
    kept = len(os.path.commonprefix([text, trace.text]))
    return Step(
        token_ids=trace.token_ids[n_ids:],
        records=trace.records[n_records:],
        rounds=trace.rounds[n_rounds:],
        text_kept=kept,
        text_added=trace.text[kept:],
        finish=trace.finish,
        head=replace(trace, token_ids=[], text="", records=[], rounds=[], finish=None) if sent is None else None,
    )


def grow(trace: Trace | None, s: Step) -> Trace:
    """`trace` (the step's head at first) with the step added, in place."""
    trace = trace if trace is not None else replace(s.head, token_ids=[], records=[], rounds=[])
    trace.token_ids.extend(s.token_ids)
    trace.records.extend(s.records)
    trace.rounds.extend(s.rounds)
    trace.text = trace.text[: s.text_kept] + s.text_added
    trace.finish = s.finish
    return trace


@gpu(duration=gpu_seconds)
def decode(pair: str, prompt: str, cfgs: dict[str, DecodeConfig], chat) -> Iterator[tuple[str, Step]]:
    """The GPU function: load the pair, check its heads (once per process: on ZeroGPU, once per worker, on the GPU),
    and decode every run on the same prompt, draft and seed as one batch (`stream_many`: one draft forward per step
    and one target forward per round for both runs; the run that finishes first waits, done), yielding (name, what
    the round added) for each run after each round; a prompt that would make a run longer than APP_RUN_TOKENS is
    refused before any decoding."""
    name = check_pair(pair or default_pair())
    models = model_pair(name, next(iter(cfgs.values())).draft_quant)
    with user_errors(f"Cannot decode with the {name} pair: "):
        check_heads(models)
    with user_errors():
        ids = encode_prompt(models.tokenizer, prompt, chat)  # the limit's count, before any decoding
        check_prompt_tokens(len(ids), max(c.max_new_tokens for c in cfgs.values()))
    names, requests = list(cfgs), [Request(prompt, cfg, bool(chat)) for cfg in cfgs.values()]
    sent: dict[str, tuple[int, int, int, str]] = {}  # how much of each run's trace was sent
    for s in user_steps(stream_many(models, requests, batch=len(requests))):
        run, trace = names[s.index], s.trace
        added = step(trace, sent.get(run))
        sent[run] = (len(trace.token_ids), len(trace.records), len(trace.rounds), trace.text)
        yield run, added


def rounds(pair: str, prompt: str, cfgs: dict[str, DecodeConfig], chat) -> Iterator[tuple[str, Trace]]:
    """Every run decoded round by round (`decode`), yielding (name, trace): each run's trace rebuilt here, in the
    process that serves the page, from what each round added."""
    traces: dict[str, Trace] = {}
    with closing(decode(pair, prompt, cfgs, chat)) as steps:  # a stopped run stops the GPU function too
        for name, s in steps:
            traces[name] = grow(traces.get(name), s)
            yield name, traces[name]


@takes_settings
def trace_api(prompt: str, chat: bool = True, pair: str | None = None, *, settings: dict) -> dict:
    """Decode with the chosen rule (DropMatch, or a relative at `knob`) and lossless; return both full traces,
    their metrics and their comparison (chat: the prompt in the chat template, as the page's checkbox starts)."""
    prompt, cfgs = validate(prompt, settings)
    traces = dict(rounds(pair, prompt, cfgs, check_chat(chat)))
    out: dict = {name: t.to_dict() for name, t in traces.items()}
    out["metrics"] = measured = measure(traces)
    out["compare"] = compare(traces["DropMatch"], traces["lossless"], measured["DropMatch"], measured["lossless"])
    return out


def downloads(traces: dict[str, Trace]) -> list[str]:
    """Each trace as JSON (Trace.to_json) and its per-token table as CSV, in a fresh temporary folder."""
    folder = scratch_folder("run")
    paths = []
    for name, trace in traces.items():
        json_path, csv_path = folder / f"{name.lower()}_trace.json", folder / f"{name.lower()}_tokens.csv"
        trace.to_json(json_path)
        token_table(trace).to_csv(csv_path, index=False)
        paths += [str(json_path), str(csv_path)]
    return paths


def read_traces(files) -> dict[str, Trace]:
    """Traces from downloaded files (or a saved /trace result): a path or a list of paths, as the upload gives them,
    each checked where it enters (a file, its size, nesting, schema, token ids within the app's vocabulary, the prompt
    within the Prompt box's limit, one run of each name); a value that is not a path, a bad file, or none, is a clear
    gr.Error."""
    upload = "Upload a trace JSON file (downloaded from this app, or returned by /trace); through the API, send it as "
    upload += "gradio_client.handle_file(path)."
    traces = {}
    for path in list(files) if isinstance(files, (list, tuple)) else [] if files is None else [files]:
        if not isinstance(path, (str, Path)):
            raise UserError(f"not a file: {json.dumps(path, default=repr)[:60]}. {upload}")
        name = Path(path).name or str(path)
        try:
            if not Path(path).is_file():
                raise ValueError("no such file; upload the trace JSON file itself")
            if Path(path).stat().st_size > MAX_BYTES:
                raise ValueError(
                    f"the file has {Path(path).stat().st_size:,} bytes; a trace file may have at most {MAX_BYTES:,}"
                )
            found = traces_from_data(parse_json(Path(path).read_bytes()), APP_VOCAB)
            if twice := sorted(set(found) & set(traces)):
                raise ValueError(f"a second {twice[0]} run: an upload opens at most one of each ({' and '.join(RUNS)})")
            if long := [t.prompt for t in found.values() if len(t.prompt) > APP_PROMPT_CHARS]:
                raise ValueError(f"prompt: has {len(long[0]):,} characters; the app's limit is {APP_PROMPT_CHARS:,}")
            traces.update(found)
        except ValueError as err:
            raise UserError(f"{name}: {err}") from None
        except OSError as err:  # its words, not its path: the message names the file as the caller did
            raise UserError(f"{name}: cannot be read ({err.strerror or 'an error reading it'})") from None
    if not traces:
        raise UserError(upload)
    return traces


def recorded() -> dict[str, Trace]:
    """The example the page opens on (FIRST_SCREEN): both runs of one prompt, recorded with the controls' starting
    values, no model needed."""
    index = next(i for i, e in enumerate(examples()) if e["label"] == FIRST_SCREEN)
    return {name: Trace.from_json(path) for name, path in example_files(index).items()}


def examples() -> list[dict]:
    """The example prompts under the prompt box: label, prompt, chat."""
    return json.loads(EXAMPLES.read_text(encoding="utf-8"))


def example_files(index: int) -> dict[str, Path]:
    return {name: EXAMPLE_TRACES / f"{index:02d}_{name.lower()}.json" for name in RUNS}


def recorded_example(prompt: str, chat) -> dict[str, Trace] | None:
    """The recorded runs of the example with this prompt and chat format (no model needed); None for any other
    prompt, or an example not recorded."""
    for i, example in enumerate(examples()):
        files = example_files(i)
        if (
            example["prompt"] == prompt
            and bool(example["chat"]) == bool(chat)
            and all(f.exists() for f in files.values())
        ):
            return {name: Trace.from_json(path) for name, path in files.items()}
    return None


def record_examples(labels: list[str] | None = None) -> list[Path]:
    """Decode every example (or those with these labels) at the app's defaults on the default pair, as Run would, and
    write both runs' traces."""
    every = examples()
    if unknown := sorted(set(labels or ()) - {e["label"] for e in every}):
        raise ValueError(f"no example labelled {unknown[0]!r}; the examples: {', '.join(e['label'] for e in every)}")
    settings = {name: DEFAULTS.get(name) for name in SETTINGS}
    EXAMPLE_TRACES.mkdir(parents=True, exist_ok=True)
    written = []
    for i, example in enumerate(every):
        if labels and example["label"] not in labels:
            continue
        traces = dict(rounds(default_pair(), example["prompt"], configs(settings), example["chat"]))
        for name, path in example_files(i).items():
            traces[name].to_json(path)
            written.append(path)
    return written


if __name__ == "__main__":  # python -m ui.runs ["label" ...]: record the examples' traces (all, or those named)
    try:
        for path in record_examples(sys.argv[1:]):
            print(path.relative_to(ROOT))
    except ValueError as err:
        raise SystemExit(f"python -m ui.runs: {err}") from None
