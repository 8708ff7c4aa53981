"""The per-token trace: plain-Python records, the single source of every metric, table and figure.

docs/algorithm.md ("What a trace records") describes each field.

A `Trace` holds one `TokenRecord` per drafted position and per emitted correction / bonus / target
token, and one `RoundRecord` per target verification forward (timings and costs). It round-trips
through JSON unchanged. A trace that comes from outside (a file, an API result) is checked once, in
`Trace.from_dict`: types, ranges, the consistency of records with rounds and of each record with itself (its
decision with its reason, its verdicts with the registry), and the text with the emitted records, every violation
one message naming the field, so nothing past it can fail on a bad file, or contradict itself on screen.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from dropmatch.config import ACCEPT_REASONS, CRITERION_NAMES, DRAFT_REASONS, RECORDED_STATISTICS, DecodeConfig
from dropmatch.schema import check_fields, check_value, parse_json

KINDS = ("draft", "correction", "bonus", "target")
FINISHES = ("eos", "length", "stop")
MAX_TOKEN_ID = 2**24  # no vocabulary is larger; the app checks against its pair's own size where it knows it


@dataclass(frozen=True)
class TokenRecord:
    """One drafted position (kind `draft`) or one token the target emitted (`correction`, `bonus`, `target`).

    reason: `exact` (the lossless test accepts), `naive` / `js` / `majority` (a DropMatch criterion accepts
    what lossless rejects; in replace mode, whatever the criterion accepts), `fuzzy` / `typical` / `top-k` /
    `mars` (a relative's rule accepts it, likewise), `rejected`, `skipped` (drafted
    after the first rejection, so not part of the output; the target still scored it, and in evidence mode
    its paths were computed too, for display), `correction`, `bonus`, `target` (target-only decoding).
    emitted: the token is part of the output
    (an accepted draft can be cut by EOS or the length limit). Fields about paths are None where the
    paths were not computed (lazy decisions skip positions that exact match already accepts).
    """

    round: int
    pos: int  # 1-based position inside the round; a correction sits at a+1, a bonus at k+1
    kind: str
    token_id: int
    text: str
    emitted: bool
    reason: str
    accepted: bool | None = None  # drafts only: inside the accepted prefix
    lossless: bool | None = None  # drafts only: the lossless test's decision at this position
    q: float | None = None  # draft model's probability of the token
    p: float | None = None  # unmasked target's probability of the token
    p_argmax: float | None = None  # unmasked target's probability of its own top-1 (the cost of a relaxed accept)
    target_argmax: int | None = None
    target_rank: int | None = None  # 1 = the target's top-1
    path_tokens: list[int] | None = None  # each path's top-1 (sampled at T > 0)
    votes: list[list[int]] | None = None  # [[token_id, count], ...], most votes first
    majority: int | None = None  # plurality token, None on a tie
    js_draft: float | None = None  # JS(q || centroid), nats
    js_paths: list[float] | None = None  # JS(p_i || centroid), nats
    threshold: float | None = None  # max_i JS(p_i || centroid)
    verdicts: dict[str, bool] | None = None  # the run's rule's components; in evidence mode every rule's decision
    rule_stats: dict[str, float | None] | None = None  # config.RECORDED_STATISTICS; null as in config.NULL_MEANS
    path_p: list[float] | None = None  # probability of the token under each path
    path_rank: list[int] | None = None  # its rank under each path (1 = top-1)
    top: dict | None = None  # {"ids", "texts", "draft", "target", "centroid", "paths"} over the union of top-N


@dataclass(frozen=True)
class RoundRecord:
    """One target verification forward: what it cost."""

    round: int
    draft_forwards: int
    head_products: int  # LM-head products of the target: unmasked positions + K per position with paths
    path_positions: int  # positions whose K paths were computed
    t_draft: float  # seconds
    t_target: float
    t_paths: float
    t_criteria: float
    t_total: float


@dataclass
class Trace:
    config: dict
    target_id: str
    draft_id: str | None
    prompt: str
    n_prompt_tokens: int
    token_ids: list[int] = field(default_factory=list)  # generated ids only
    text: str = ""
    records: list[TokenRecord] = field(default_factory=list)
    rounds: list[RoundRecord] = field(default_factory=list)
    finish: str | None = None  # "eos", "length", "stop" (a sweep's stop sequence) or None while running
    chat: bool = False  # the prompt was wrapped in the chat template
    environment: dict = field(default_factory=dict)  # where it was decoded: device, dtype, torch, CPU

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict, vocab: int = MAX_TOKEN_ID) -> Trace:
        """A trace from its dict, checked (`check`): a ValueError names the first field that is wrong. Its config
        is the checked one, with every setting filled in."""
        config = check(data, vocab)
        kwargs = {f.name: data[f.name] for f in fields(cls) if f.name in data} | {"config": config.to_dict()}
        kwargs["records"] = [TokenRecord(**r) for r in data["records"]]
        kwargs["rounds"] = [RoundRecord(**r) for r in data["rounds"]]
        kwargs.setdefault("draft_id", None)
        kwargs.setdefault("n_prompt_tokens", 0)
        return cls(**kwargs)

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict(), ensure_ascii=False)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    @classmethod
    def from_json(cls, source: str | Path) -> Trace:
        """Parse a JSON string, or read a file when given a path."""
        if isinstance(source, Path) or not str(source).lstrip().startswith("{"):
            source = Path(source).read_bytes()
        data = parse_json(source)
        if not isinstance(data, dict):
            raise ValueError("not a DropMatch trace: expected a JSON object")
        return cls.from_dict(data)

    def round_records(self, t: int) -> list[TokenRecord]:
        return [r for r in self.records if r.round == t]


# ---- the check at the boundary ------------------------------------------------------------------
TOP_N = {
    "ids": list[int],
    "texts": list[str],
    "draft": list[float],
    "target": list[float],
    "centroid": list[float],
    "paths": list[list[float]],
}  # a record's top-N distributions over the union of the heads' top tokens
TOP = {
    "config": dict,
    "target_id": str,
    "draft_id": str | None,
    "prompt": str,
    "n_prompt_tokens": int,
    "token_ids": list[int],
    "text": str,
    "records": list,
    "rounds": list,
    "finish": str | None,
    "chat": bool,
    "environment": dict[str, str],
}


def _at_least(value, lo, where: str) -> None:
    if value is not None and not value >= lo:
        raise ValueError(f"{where}: must be at least {lo}, got {value!r}")


def _within(values, lo, hi, where: str) -> None:
    for v in values if isinstance(values, list) else [values]:
        if v is not None and not lo <= v <= hi:
            raise ValueError(f"{where}: must lie in [{lo}, {hi}], got {v!r}")


def _check_record(r: dict, where: str, config: DecodeConfig, vocab: int) -> None:
    """One record's values: kinds, reasons, token ids, probabilities, ranks, divergences, the top-N lists."""
    if r["kind"] not in KINDS:
        raise ValueError(f"{where}.kind: must be one of {', '.join(KINDS)}, got {r['kind']!r}")
    allowed = DRAFT_REASONS if r["kind"] == "draft" else (r["kind"],)
    if r["reason"] not in allowed:
        raise ValueError(
            f"{where}.reason: a {r['kind']} record's reason is one of {', '.join(allowed)}, got {r['reason']!r}"
        )
    _within(r["pos"], 1, config.gamma + 1, f"{where}.pos")
    for i, vote in enumerate(r.get("votes") or []):
        if len(vote) != 2 or not 1 <= vote[1] <= config.K:
            raise ValueError(f"{where}.votes[{i}]: expected [token id, count of at most K = {config.K}], got {vote!r}")
    top = r.get("top")
    if top is not None:
        check_value(top, dict, f"{where}.top")
        if set(top) != set(TOP_N):
            raise ValueError(f"{where}.top: expected exactly the fields {', '.join(TOP_N)}")
        for name, hint in TOP_N.items():
            check_value(top[name], hint, f"{where}.top.{name}")
        for name in ("draft", "target", "centroid", "paths"):
            _within(
                [v for row in top[name] for v in row] if name == "paths" else top[name], 0.0, 1.0, f"{where}.top.{name}"
            )
        lengths = {len(top[k]) for k in ("ids", "texts", "draft", "target", "centroid")}
        if len(lengths) != 1 or any(len(row) != len(top["ids"]) for row in top["paths"]):
            raise ValueError(f"{where}.top: its lists must all hold one value per token id")
        if len(top["paths"]) != config.K:
            raise ValueError(f"{where}.top.paths: holds {len(top['paths'])} rows for K = {config.K} paths")
    ids = {
        "token_id": r["token_id"],
        "target_argmax": r.get("target_argmax"),
        "majority": r.get("majority"),
        "path_tokens": r.get("path_tokens"),
        "votes": [t for t, _ in r.get("votes") or []],
        "top.ids": (r.get("top") or {}).get("ids"),
    }
    for name, value in ids.items():
        _within(value, 0, vocab - 1, f"{where}.{name} (a token id)")
    for name in ("p", "q", "p_argmax", "path_p"):
        _within(r.get(name), 0.0, 1.0, f"{where}.{name}")
    for name in ("target_rank", "path_rank"):
        _within(r.get(name), 1, vocab, f"{where}.{name}")
    for name in ("js_draft", "threshold", "js_paths"):
        _within(r.get(name), 0.0, math.log(2) + 1e-6, f"{where}.{name} (JS in nats)")
    for name in ("path_tokens", "path_p", "path_rank", "js_paths"):
        if r.get(name) is not None and len(r[name]) != config.K:
            raise ValueError(f"{where}.{name}: holds {len(r[name])} values for K = {config.K} paths")
    stats = r.get("rule_stats") or {}
    unknown = sorted(set(stats) - set(RECORDED_STATISTICS))
    if unknown:
        raise ValueError(f"{where}.rule_stats: unknown statistic {unknown[0]!r}")
    _within([stats.get(n) for n in ("entropy", "kl_qp")], 0.0, math.inf, f"{where}.rule_stats")
    _within([stats.get(n) for n in ("js_pq", "tv")], 0.0, 1.0, f"{where}.rule_stats")
    _check_decision(r, where, config)


def _check_decision(r: dict, where: str, config: DecodeConfig) -> None:
    """A record's decision agrees with itself: a draft is accepted exactly when its reason is an acceptance reason
    (config.ACCEPT_REASONS), a greedy exact match is the target's top-1 (the lossless test at T = 0 is d = argmax; at
    T > 0 it is a draw, which any rank can pass), and its verdicts name registry rules (evidence mode) or a rule's
    components (named by their reasons)."""
    accepted, reason = r.get("accepted"), r["reason"]
    if r["kind"] != "draft" and accepted is not None:
        raise ValueError(f"{where}.accepted: only a draft is accepted or rejected; a {r['kind']} record holds null")
    accepts = reason in ACCEPT_REASONS
    if r["kind"] == "draft" and accepted is not accepts:
        raise ValueError(
            f"{where}.accepted: reason {reason!r} {'accepts' if accepts else 'rejects'} the draft, so accepted must be "
            f"{json.dumps(accepts)}, got {json.dumps(accepted)}"
        )
    if reason == "exact" and config.temperature == 0:
        if r.get("target_rank") not in (None, 1):
            raise ValueError(
                f"{where}.target_rank: a greedy exact match is the target's top-1, got rank {r['target_rank']}"
            )
        if r.get("target_argmax") not in (None, r["token_id"]):
            raise ValueError(
                f"{where}.target_argmax: a greedy exact match is the target's argmax, token {r['token_id']}; got "
                f"{r['target_argmax']}"
            )
    unknown = sorted(set(r.get("verdicts") or {}) - {*CRITERION_NAMES, *ACCEPT_REASONS})
    if unknown:
        raise ValueError(f"{where}.verdicts: {unknown[0]!r} is neither a rule in the registry nor an acceptance reason")


SPECIAL_SHAPE = re.compile(r"\s*(<[^<>\s]+>|\[[^\[\]\s]+\])\s*")  # how special tokens read: <|im_start|>, </s>, [INST]


def _joins_to(text: str, pieces: list[str], eos: bool) -> bool:
    """Whether a trace's `text`, the tokenizer's decode of the output with special tokens skipped, is what the emitted
    records' texts (`pieces`, decoded token by token, special tokens kept) join to, as far as a check without the
    tokenizer can tell: equal once U+FFFD is removed (bytes that form no character decode to more or fewer of them
    depending on where a decode starts, and a record leaves off the one a cut-short character ends on), where a piece
    shaped like a special token (SPECIAL_SHAPE), and the end token that stops an `eos` run, may be missing. A piece
    that `text` holds at its place is taken as held, so one pass decides."""
    visible, at = text.replace("\ufffd", ""), 0
    for i, piece in enumerate(p.replace("\ufffd", "") for p in pieces):
        if visible.startswith(piece, at):
            at += len(piece)
        elif not (SPECIAL_SHAPE.fullmatch(piece) or (eos and i == len(pieces) - 1)):
            return False
    return at == len(visible)


def check(data: dict, vocab: int = MAX_TOKEN_ID) -> DecodeConfig:
    """A trace dict's types, ranges and consistency, or a ValueError naming the first field that is wrong; returns
    its config, checked."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    missing = sorted({"config", "target_id", "prompt", "records", "rounds"} - set(data))
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    unknown = sorted(set(data) - set(TOP))
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r} at the top level of the trace")
    for name, hint in TOP.items():
        if name in data:
            check_value(data[name], hint, name)
    _at_least(data.get("n_prompt_tokens"), 0, "n_prompt_tokens")
    try:
        config = DecodeConfig(**data["config"])
    except TypeError as err:
        raise ValueError(f"config: {str(err).split('() ')[-1]}") from None
    except ValueError as err:
        raise ValueError(f"config: {err}") from None
    if data.get("finish") not in (None, *FINISHES):
        raise ValueError(f"finish: must be one of {', '.join(FINISHES)} or null, got {data['finish']!r}")
    _within(data.get("token_ids", []), 0, vocab - 1, "token_ids (a token id)")
    for i, r in enumerate(data["rounds"]):
        check_fields(r, RoundRecord, f"rounds[{i}]")
        if r["round"] != i:
            raise ValueError(f"rounds[{i}].round: rounds must be numbered 0, 1, 2, ... in order, got {r['round']}")
        for name in (
            "draft_forwards",
            "head_products",
            "path_positions",
            "t_draft",
            "t_target",
            "t_paths",
            "t_criteria",
            "t_total",
        ):
            _at_least(r[name], 0, f"rounds[{i}].{name}")
    if not data["rounds"]:
        raise ValueError("rounds: the trace holds no rounds (nothing was decoded)")
    expected = (0, 1)  # (round, position) the next record may take
    for i, r in enumerate(data["records"]):
        where = f"records[{i}]"
        check_fields(r, TokenRecord, where)
        _check_record(r, where, config, vocab)
        if r["round"] >= len(data["rounds"]):
            raise ValueError(f"{where}.round: the trace has {len(data['rounds'])} rounds, got round {r['round']}")
        if (r["round"], r["pos"]) != expected and not (r["kind"] != "draft" and r["round"] == expected[0]):
            raise ValueError(
                f"{where}: records must run round by round, drafts at positions 1, 2, ... then one "
                f"correction or bonus; expected round {expected[0]} position {expected[1]}, got round "
                f"{r['round']} position {r['pos']} ({r['kind']})"
            )
        expected = (r["round"], r["pos"] + 1) if r["kind"] == "draft" else (r["round"] + 1, 1)
    if expected != (len(data["rounds"]), 1):
        open_round = expected[0] < len(data["rounds"]) and expected[1] > 1
        raise ValueError(
            f"records: round {expected[0]} has no correction, bonus or target record to close it"
            if open_round
            else f"records: the trace has {len(data['rounds'])} rounds, its records end at round {expected[0]}"
        )
    emitted = [r["token_id"] for r in data["records"] if r["emitted"]]
    if emitted != data.get("token_ids", emitted):
        raise ValueError("token_ids: must be the emitted records' tokens, in order")
    pieces = [r["text"] for r in data["records"] if r["emitted"]]
    if "text" in data and not _joins_to(data["text"], pieces, data.get("finish") == "eos"):
        raise ValueError("text: must be what the emitted records' texts join to (U+FFFD and special tokens aside)")
    return config
