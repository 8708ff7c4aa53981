"""A hostile battery of self-contradictory trace files: each case edits a recorded trace so that it still parses and
types, but its own numbers contradict it (a reason its evidence refutes, a skipped draft in the output, a round's
costs against its records, ...). Where the app opens files, every case is refused with one clear line naming the
field and the record; a file that holds together still opens, with the same metrics; and every trace the decoder
writes, in every mode, passes the same check."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from dropmatch import metrics
from dropmatch.config import DecodeConfig
from dropmatch.decode import Decoder, generate
from dropmatch.models import encode_prompt
from dropmatch.trace import Trace
from ui import runs
from ui.common import UserError

ROOT = Path(__file__).resolve().parents[1]
BASES = {
    name: json.loads((ROOT / f"tests/data/traces/story_{name}.json").read_text("utf-8"))
    for name in ("dropmatch", "lossless")
}
VOCAB = 151_936


def resync(data: dict) -> None:
    """token_ids and text as the emitted records say, so that only the edit before it contradicts the file."""
    emitted = [r for r in data["records"] if r["emitted"]]
    data["token_ids"] = [r["token_id"] for r in emitted]
    data["text"] = "".join(r["text"] for r in emitted)


def edit(*changes: tuple, sync: bool = False) -> Callable[[dict], None]:
    """Set each (path..., value); `sync`: then rewrite token_ids and text from the emitted records."""

    def apply(data: dict) -> None:
        for *path, value in changes:
            target = data
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
        if sync:
            resync(data)

    return apply


def drop_record(i: int, round_: int, drafts: int, k: int) -> Callable[[dict], None]:
    """Delete record i (a skipped draft) and make its round's costs agree with the records left."""

    def apply(data: dict) -> None:
        del data["records"][i]
        data["rounds"][round_] |= {
            "draft_forwards": drafts,
            "path_positions": drafts,
            "head_products": drafts + 1 + k * drafts,
        }

    return apply


def js_inside_out(data: dict) -> None:
    """Record 1 (reason js) with paths that barely spread (threshold 0.01) and a draft far from them (0.6)."""
    data["records"][1] |= {"js_paths": [0.01] * 5, "threshold": 0.01, "js_draft": 0.6}


def no_token_ids(data: dict) -> None:
    """A skipped draft marked emitted, with token_ids and text left out so no list contradicts it."""
    data["records"][28]["emitted"] = True
    del data["token_ids"], data["text"]


def ends_early(data: dict) -> None:
    data["config"]["max_new_tokens"] = 64


# (name, base, edit, what the refusal must say). Record indices of story_dropmatch: 1 js-accepted (' been', target
# argmax 264), 3 exact with all five votes for it, 5 a bonus, 19 exact with its votes tied, 27 rejected, 28 skipped,
# 29 its round's correction, 31 js-accepted with no path voting for it. story_lossless: 1 rejected, 5 its correction,
# 8 skipped.
BATTERY = [
    # a record's reason against its own evidence
    (
        "js reason, draft outside the paths' spread",
        "dropmatch",
        edit(("records", 1, "js_draft", 0.6)),
        "records[1].reason (round 0, pos 2): 'js'",
    ),
    (
        "js reason, threshold not the paths' max",
        "dropmatch",
        edit(("records", 1, "threshold", 0.01)),
        "records[1].threshold (round 0, pos 2)",
    ),
    ("js reason, consistent numbers refute it", "dropmatch", js_inside_out, "records[1].reason (round 0, pos 2): 'js'"),
    (
        "majority reason, another token leads",
        "dropmatch",
        edit(("records", 1, "reason", "majority")),
        "records[1].reason (round 0, pos 2): 'majority'",
    ),
    (
        "majority reason, the vote is tied",
        "dropmatch",
        edit(("records", 31, "reason", "majority")),
        "records[31].reason (round 5, pos 2): 'majority'",
    ),
    (
        "naive reason, in a run whose rule never gives it",
        "dropmatch",
        edit(("records", 31, "reason", "naive")),
        "records[31].reason (round 5, pos 2): a dropmatch run accepts a draft as exact / tie / js / majority; got "
        "'naive'",
    ),
    (
        "tie reason, not the target's top-1",
        "dropmatch",
        edit(("records", 1, "reason", "tie")),
        "records[1].reason (round 0, pos 2): 'tie'",
    ),
    (
        "exact reason, not the target's argmax",
        "dropmatch",
        edit(("records", 1, "reason", "exact")),
        "records[1].target_",
    ),
    (
        "exact reason in a lossless file, off the argmax",
        "lossless",
        edit(("records", 1, "reason", "exact"), ("records", 1, "accepted", True)),
        "records[1].target_",
    ),
    (
        "a relative's reason in a DropMatch run",
        "dropmatch",
        edit(("records", 1, "reason", "typical")),
        "records[1].reason (round 0, pos 2)",
    ),
    (
        "a DropMatch reason in a lossless run",
        "lossless",
        edit(("records", 1, "reason", "js"), ("records", 1, "accepted", True)),
        "records[1].reason (round 0, pos 2)",
    ),
    (
        "exact reason in replace mode",
        "dropmatch",
        edit(("config", "mode", "replace")),
        "records[0].reason (round 0, pos 1)",
    ),
    # the lossless test's flag
    (
        "lossless false on the target's argmax",
        "dropmatch",
        edit(("records", 0, "lossless", False)),
        "records[0].lossless (round 0, pos 1)",
    ),
    (
        "lossless true off the argmax",
        "dropmatch",
        edit(("records", 1, "lossless", True)),
        "records[1].lossless (round 0, pos 2)",
    ),
    (
        "lossless true on a rejected draft",
        "dropmatch",
        edit(("records", 27, "lossless", True)),
        "records[27].lossless (round 4, pos 4)",
    ),
    (
        "a draft without its lossless verdict",
        "dropmatch",
        edit(("records", 0, "lossless", None)),
        "records[0].lossless (round 0, pos 1)",
    ),
    (
        "lossless verdict on a bonus token",
        "dropmatch",
        edit(("records", 5, "lossless", True)),
        "records[5].lossless (round 0, pos 6)",
    ),
    # the run's rule's verdict
    (
        "accepted by a rule that said no",
        "dropmatch",
        edit(("records", 1, "verdicts", "js+majority", False)),
        "records[1].verdicts.js+majority (round 0, pos 2)",
    ),
    (
        "rejected though the rule said yes",
        "dropmatch",
        edit(("records", 27, "verdicts", "js+majority", True)),
        "records[27].verdicts.js+majority (round 4, pos 4)",
    ),
    # the paths' votes
    (
        "majority not the most-voted token",
        "dropmatch",
        edit(("records", 3, "majority", 12)),
        "records[3].majority (round 0, pos 4)",
    ),
    (
        "no majority where one token leads",
        "dropmatch",
        edit(("records", 3, "majority", None)),
        "records[3].majority (round 0, pos 4)",
    ),
    (
        "a majority on a tied vote",
        "dropmatch",
        edit(("records", 19, "majority", 806)),
        "records[19].majority (round 3, pos 2)",
    ),
    (
        "votes that do not count the path tokens",
        "dropmatch",
        edit(("records", 3, "votes", [[369, 4], [12, 1]])),
        "records[3].votes (round 0, pos 4)",
    ),
    (
        "path tokens that the votes do not count",
        "dropmatch",
        edit(("records", 7, "path_tokens", [1899] * 5)),
        "records[7].votes (round 1, pos 2)",
    ),
    (
        "a path's top-1 ranked below first",
        "dropmatch",
        edit(("records", 3, "path_rank", [2, 1, 1, 1, 1])),
        "records[3].path_rank[0] (round 0, pos 4)",
    ),
    (
        "paths' evidence on a bonus token",
        "dropmatch",
        edit(("records", 5, "votes", [[13, 5]])),
        "records[5].votes (round 0, pos 6)",
    ),
    # the target's numbers
    (
        "the argmax ranked below first",
        "dropmatch",
        edit(("records", 5, "target_rank", 2)),
        "records[5].target_rank (round 0, pos 6)",
    ),
    (
        "p above the target's top-1 probability",
        "dropmatch",
        edit(("records", 1, "p", 0.9)),
        "records[1].p (round 0, pos 2)",
    ),
    (
        "a greedy bonus that is not the argmax",
        "dropmatch",
        edit(("records", 5, "token_id", 14), sync=True),
        "records[5].token_id (round 0, pos 6)",
    ),
    (
        "a greedy correction that is not the argmax",
        "lossless",
        edit(("records", 5, "token_id", 999), sync=True),
        "records[5].token_id (round 0, pos 2)",
    ),
    (
        "a correction scored apart from its rejection",
        "dropmatch",
        edit(("records", 27, "target_argmax", 14)),
        "records[29].target_argmax (round 4, pos 4)",
    ),
    (
        "top-N target row against p",
        "dropmatch",
        edit(("records", 3, "top", "target", 0, 0.5)),
        "records[3].top.target (round 0, pos 4)",
    ),
    (
        "top-N ids without the draft token",
        "dropmatch",
        edit(("records", 3, "top", "ids", 0, 7)),
        "records[3].top.ids (round 0, pos 4)",
    ),
    # a round's records together
    (
        "a skipped draft marked emitted",
        "dropmatch",
        edit(("records", 28, "emitted", True), sync=True),
        "records[28].emitted (round 4, pos 5)",
    ),
    ("a skipped draft emitted, token_ids left out", "dropmatch", no_token_ids, "token_ids"),
    (
        "an accepted draft left out mid-run",
        "dropmatch",
        edit(("records", 0, "emitted", False), sync=True),
        "records[0].emitted (round 0, pos 1)",
    ),
    (
        "a correction left out mid-run",
        "dropmatch",
        edit(("records", 29, "emitted", False), sync=True),
        "records[29].emitted (round 4, pos 4)",
    ),
    (
        "accepted after the round's rejection",
        "dropmatch",
        edit(("records", 28, "reason", "exact"), ("records", 28, "accepted", True)),
        "records[28]",
    ),
    (
        "two rejections in one round",
        "lossless",
        edit(("records", 8, "reason", "rejected")),
        "records[8].reason (round 1, pos 3)",
    ),
    (
        "skipped with no rejection before it",
        "dropmatch",
        edit(("records", 27, "reason", "skipped")),
        "records[27].reason (round 4, pos 4)",
    ),
    (
        "a bonus after a rejection",
        "dropmatch",
        edit(("records", 29, "kind", "bonus"), ("records", 29, "reason", "bonus")),
        "records[29]",
    ),
    (
        "a correction at the wrong position",
        "dropmatch",
        edit(("records", 29, "pos", 5)),
        "records[29].pos (round 4, pos 5)",
    ),
    (
        "a correction after every draft accepted",
        "dropmatch",
        edit(("records", 5, "kind", "correction"), ("records", 5, "reason", "correction")),
        "records[5]",
    ),
    (
        "a target-only record in a drafting run",
        "dropmatch",
        edit(("records", 5, "kind", "target"), ("records", 5, "reason", "target")),
        "records[5].kind (round 0, pos 6)",
    ),
    # a round's costs against its records
    (
        "draft forwards against the drafts",
        "dropmatch",
        edit(("rounds", 2, "draft_forwards", 4)),
        "rounds[2].draft_forwards",
    ),
    (
        "path positions against the records",
        "dropmatch",
        edit(("rounds", 2, "path_positions", 3)),
        "rounds[2].path_positions",
    ),
    (
        "head products against the positions",
        "dropmatch",
        edit(("rounds", 2, "head_products", 30)),
        "rounds[2].head_products",
    ),
    ("a round that drafts fewer than it could", "dropmatch", drop_record(28, 4, 4, 5), "rounds[4].draft_forwards"),
    # the run's length
    ("more tokens than max_new_tokens", "dropmatch", edit(("config", "max_new_tokens", 40)), "token_ids"),
    ("finish length before the limit", "dropmatch", ends_early, "finish"),
    # what the check refused already (kept, so the counts cover them)
    ("token_ids out of order", "dropmatch", edit(("token_ids", 0, 1012), ("token_ids", 1, 1030)), "token_ids"),
    ("text that the pieces do not join to", "dropmatch", edit(("records", 12, "text", "ERMAN")), "text"),
    ("a probability above 1", "dropmatch", edit(("records", 3, "q", 1.5)), "records[3].q: must lie in [0.0, 1.0]"),
    (
        "NaN in a divergence",
        "dropmatch",
        edit(("records", 3, "js_draft", float("nan"))),
        "records[3].js_draft: expected a finite number or null, got NaN",
    ),
    ("infinity in a time", "dropmatch", edit(("rounds", 1, "t_total", float("inf"))), "rounds[1].t_total"),
    ("a negative count", "dropmatch", edit(("rounds", 1, "draft_forwards", -1)), "rounds[1].draft_forwards"),
    (
        "a string for a flag",
        "dropmatch",
        edit(("records", 3, "emitted", "yes")),
        "records[3].emitted: expected true or false",
    ),
    (
        "path tokens for 4 of K 5 paths",
        "dropmatch",
        edit(("records", 3, "path_tokens", [369] * 4)),
        "records[3].path_tokens: holds 4 values for K = 5 paths",
    ),
    (
        "a duplicated round",
        "dropmatch",
        lambda d: d["rounds"].insert(2, copy.deepcopy(d["rounds"][2])),
        "rounds[3].round",
    ),
    ("rounds out of order", "dropmatch", lambda d: d["rounds"].insert(1, d["rounds"].pop(2)), "rounds[1].round"),
    ("gamma out of range", "dropmatch", edit(("config", "gamma", 0)), "config: gamma"),
    ("an unknown criterion", "dropmatch", edit(("config", "criterion", "psychic")), "config: criterion"),
]


def opened(tmp_path: Path, name: str, change: Callable[[dict], None]) -> dict:
    """Open a mutated copy of a recorded trace where the app opens files: its traces, or the refusal's message."""
    data = copy.deepcopy(BASES[name])
    change(data)
    path = tmp_path / "mutated.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return runs.read_traces([str(path)])


def classify(tmp_path: Path, name: str, change: Callable[[dict], None], fragment: str) -> str:
    """clear (refused, naming the problem), generic (refused without naming it), silent (opened), crash (anything
    else raised)."""
    try:
        opened(tmp_path, name, change)
    except UserError as err:
        message = err.message
        return "clear" if fragment in message and "\n" not in message else f"generic: {message}"
    except Exception as err:  # noqa: BLE001 (what a case raises is what is being measured)
        return f"crash: {type(err).__name__}: {err}"
    return "silent"


@pytest.mark.parametrize("name, change, fragment", [c[1:] for c in BATTERY], ids=[c[0] for c in BATTERY])
def test_each_self_contradictory_file_is_refused_naming_its_field(tmp_path, name, change, fragment):
    assert classify(tmp_path, name, change, fragment) == "clear"


def test_the_battery_holds_forty_cases_or_more_each_named_once():
    assert len(BATTERY) >= 40 and len({c[0] for c in BATTERY}) == len(BATTERY)


@pytest.mark.parametrize("name", BASES)
def test_a_file_that_holds_together_opens_with_the_same_metrics(tmp_path, name):
    (trace,) = opened(tmp_path, name, lambda data: None).values()
    m = metrics.compute(trace)
    rounds = {"dropmatch": 9, "lossless": 21}[name]
    assert (m["n_tokens"], m["target_forwards"]) == (48, rounds) and m["tau"] == pytest.approx(48 / rounds)
    assert m == metrics.compute(Trace.from_dict(copy.deepcopy(BASES[name]), vocab=VOCAB))


MODES = [
    {"method": "target"},
    {"method": "lossless"},
    {"method": "lossless", "evidence": True},
    {"method": "lossless", "temperature": 1.0},
    {"method": "dropmatch"},
    {"method": "dropmatch", "evidence": True},
    {"method": "dropmatch", "criterion": "majority-strict", "evidence": True},
    {"method": "dropmatch", "criterion": "naive", "mode": "replace"},
    {"method": "dropmatch", "criterion": "majority", "mode": "replace", "evidence": True},
    {"method": "dropmatch", "temperature": 1.0},
    {"method": "dropmatch", "temperature": 1.0, "evidence": True},
    {"method": "dropmatch", "p_drop": 0.0},
    {"method": "relative", "criterion": "typical"},
    {"method": "relative", "criterion": "top-k", "evidence": True},
    {"method": "relative", "criterion": "fly"},
    {"method": "relative", "criterion": "cascade-token", "temperature": 1.0},
    {"method": "relative", "criterion": "cascade-opt", "mode": "replace", "evidence": True},
    {"method": "relative", "criterion": "ears", "temperature": 0.7},
    {"method": "truncation", "criterion": "min-p", "temperature": 1.0},
]


@pytest.mark.parametrize("settings", MODES, ids=lambda s: " ".join(f"{k}={v}" for k, v in s.items()))
def test_what_the_decoder_writes_in_every_mode_passes_the_check(noisy_pair, settings):
    config = DecodeConfig(**({"gamma": 4, "max_new_tokens": 30, "seed": 3} | settings))
    trace = generate(noisy_pair, "def f(x):", config)
    assert Trace.from_dict(json.loads(trace.to_json())) == trace


@pytest.mark.parametrize("settings", [{"method": "dropmatch"}, {"method": "relative", "criterion": "mars"}])
def test_what_a_gpu_run_writes_passes_the_check(noisy_pair, settings):
    """On a GPU every drafted position is checked in one head product and the records keep those a CPU run checks
    (Decoder.at_once): their costs and verdicts pass the same check (run here on the CPU)."""
    config = DecodeConfig(**({"gamma": 4, "max_new_tokens": 30, "seed": 3} | settings))
    decoder = Decoder(noisy_pair, config, encode_prompt(noisy_pair.tokenizer, "def f(x):", False), "def f(x):")
    decoder.at_once = True
    *_, trace = decoder.rounds()
    assert Trace.from_dict(json.loads(trace.to_json())) == trace


def test_an_end_token_that_cuts_the_last_round_short_passes(tiny_pair):
    config = DecodeConfig(method="dropmatch", gamma=4, max_new_tokens=30, seed=3, evidence=True)
    free = generate(tiny_pair, "def f(x):", config)
    emitted = [r for r in free.records if r.emitted]
    first = {}  # each token's first place in the output: an end token stops the run there
    for i, r in enumerate(emitted):
        first.setdefault(r.token_id, i)
    stop = next(  # a draft whose round goes on with another accepted draft, so the end token cuts the round short
        r.token_id
        for i, (r, after) in enumerate(zip(emitted, emitted[1:]))
        if first[r.token_id] == i and r.kind == after.kind == "draft" and r.round == after.round
    )
    trace = generate(dataclasses.replace(tiny_pair, eos_ids=frozenset({stop})), "def f(x):", config)
    cut = [r for r in trace.round_records(len(trace.rounds) - 1) if r.accepted and not r.emitted]
    assert trace.finish == "eos" and cut  # the last round's accepted drafts after the end token are left out
    assert Trace.from_dict(json.loads(trace.to_json())) == trace
