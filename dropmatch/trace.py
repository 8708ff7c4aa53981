"""The per-token trace: plain-Python records, the single source of every metric, table and figure.

docs/algorithm.md ("What a trace records") describes each field.

A `Trace` holds one `TokenRecord` per drafted position and per emitted correction / bonus / target
token, and one `RoundRecord` per target verification forward (timings and costs). It round-trips
through JSON unchanged. A trace that comes from outside (a file, an API result) is checked once, in
`Trace.from_dict`: types, ranges, and consistency: each record with itself (its reason with its own evidence, its
decision with its lossless verdict and its rule's, its numbers with each other), each round's records together (the
accepted prefix, the correction or bonus, the output) and with its costs, the run with its config, and the token ids
and text with the emitted records; every violation one message naming the field (and the record's round and
position), so nothing past it can fail on a bad file, or contradict itself on screen.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from dropmatch.config import RECORDED_STATISTICS, RELAXED_METHODS, TARGET_ONLY_METHODS, DecodeConfig
from dropmatch.criteria import ACCEPT_REASONS, DRAFT_REASONS, RULES, rule_reasons
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
    gated: bool | None = None  # drafts of a span-gated run only: the gate kept the rule out, the lossless test decided


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
# What only a draft's record holds: the paths' evidence and the rules' verdicts, where they were computed
DRAFT_EVIDENCE = (
    *("path_tokens", "votes", "majority", "path_p", "path_rank", "js_draft", "js_paths", "threshold"),
    *("verdicts", "rule_stats", "top"),
)
TOLERANCE = 1e-6  # between two copies of one float32 number (a record's p and its top-N row's, say)
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


def _place(r: dict) -> str:
    """Where a record sits in its file: its round and its position there (the app counts rounds from 1)."""
    return f" (round {r['round']}, pos {r['pos']})"


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
    if r["kind"] != "draft" and (held := next((n for n in DRAFT_EVIDENCE if r.get(n) is not None), None)):
        raise ValueError(
            f"{where}.{held}{_place(r)}: only a draft record holds the paths' evidence and the rules' verdicts; a "
            f"{r['kind']} record holds null"
        )
    _check_target(r, where, config)
    _check_paths(r, where, config)
    _check_decision(r, where, config)


def _check_target(r: dict, where: str, config: DecodeConfig) -> None:
    """The unmasked target's numbers agree: its argmax is its top-1 (rank 1, probability p_argmax), no token is more
    likely than it, and at T = 0 the token the target emits itself (a correction, bonus or target token) is it."""
    token, argmax, p, top1 = r["token_id"], r.get("target_argmax"), r.get("p"), r.get("p_argmax")
    if token == argmax and r.get("target_rank") not in (None, 1):
        raise ValueError(
            f"{where}.target_rank{_place(r)}: the token is the target's argmax, so its rank is 1; got "
            f"{r['target_rank']}"
        )
    if p is not None and top1 is not None and p > top1 + TOLERANCE:
        raise ValueError(f"{where}.p{_place(r)}: {p:.6g} is above the target's top-1 probability, p_argmax {top1:.6g}")
    if p is not None and top1 is not None and token == argmax and abs(p - top1) > TOLERANCE:
        raise ValueError(
            f"{where}.p_argmax{_place(r)}: the token is the target's argmax, so p_argmax is its p, {p:.6g}; got "
            f"{top1:.6g}"
        )
    own = r["kind"] == "correction" and _picks_own(config)
    if config.temperature == 0 and r["kind"] != "draft" and argmax not in (None, token) and not own:
        raise ValueError(
            f"{where}.token_id{_place(r)}: at T = 0 a {r['kind']} token is the target's argmax, {argmax}; got {token}"
        )


def _check_paths(r: dict, where: str, config: DecodeConfig) -> None:
    """The K paths' evidence agrees with itself: the votes count the paths' top-1 tokens (most votes first, then by
    id), the majority is the token with the most votes (null on a tie), the threshold is the largest path JS, at T = 0
    a path whose top-1 is the token ranks it first, and the top-N lists hold the token once, at its p, q and path p."""
    token, tokens = r["token_id"], r.get("path_tokens")
    if tokens is not None:
        counts = sorted(Counter(tokens).items(), key=lambda kv: (-kv[1], kv[0]))
        if r.get("votes") is not None and r["votes"] != [list(c) for c in counts]:
            raise ValueError(
                f"{where}.votes{_place(r)}: must count the paths' top-1 tokens (path_tokens), most votes first, then "
                "by token id"
            )
        tied = len(counts) > 1 and counts[1][1] == counts[0][1]
        plurality = None if tied else counts[0][0]
        if r.get("majority") != plurality:
            said = "are tied" if tied else f"give token {plurality} the most, {counts[0][1]} of K = {config.K}"
            raise ValueError(
                f"{where}.majority{_place(r)}: the paths' votes {said}, so majority must be {json.dumps(plurality)}; "
                f"got {json.dumps(r['majority'])}"
            )
        for i, (path_token, rank) in enumerate(zip(tokens, r.get("path_rank") or [1] * len(tokens))):
            if config.temperature == 0 and path_token == token and rank != 1:
                raise ValueError(
                    f"{where}.path_rank[{i}]{_place(r)}: at T = 0 path {i + 1}'s top-1 is the token, so its rank there "
                    f"is 1; got {rank}"
                )
    js_paths, threshold = r.get("js_paths"), r.get("threshold")
    if js_paths and threshold is not None and abs(threshold - max(js_paths)) > TOLERANCE:
        raise ValueError(
            f"{where}.threshold{_place(r)}: must be the largest path JS, max(js_paths) = {max(js_paths):.6g}; got "
            f"{threshold:.6g}"
        )
    top = r.get("top")
    if top is None:
        return
    if twice := [t for t, n in Counter(top["ids"]).items() if n > 1]:
        raise ValueError(f"{where}.top.ids{_place(r)}: each token appears once; {twice[0]} appears twice")
    if token not in top["ids"]:
        raise ValueError(
            f"{where}.top.ids{_place(r)}: must hold the record's token, {token} (its lists are drawn over it)"
        )
    at = top["ids"].index(token)
    rows = {"target": (top["target"][at], "p", r.get("p")), "draft": (top["draft"][at], "q", r.get("q"))}
    for i, (row, value) in enumerate(zip(top["paths"], r.get("path_p") or [])):
        rows[f"paths[{i}]"] = (row[at], f"path_p[{i}]", value)
    for name, (drawn, field_, value) in rows.items():
        if value is not None and abs(drawn - value) > TOLERANCE:
            raise ValueError(
                f"{where}.top.{name}{_place(r)}: gives the token probability {drawn:.6g}; its {field_} is {value:.6g}"
            )


def _accept_reasons(config: DecodeConfig) -> tuple[str, ...]:
    """Why a run of this method and mode accepts a draft: exact match alone without a rule; with one, a tie and the
    run's rule's own reasons too (`criteria.rule_reasons`), and exact match in OR mode (a rule that names its exact
    matches itself, such as a cascade, lists `exact` among its own reasons, in either mode)."""
    if config.method not in RELAXED_METHODS:
        return ("exact",)
    own = rule_reasons(config.criterion)
    return tuple(dict.fromkeys((*(("exact",) if config.mode == "or" else ()), *own)))


def _picks_own(config: DecodeConfig) -> bool:
    """Whether a greedy run's correction is its rule's own pick rather than the target's argmax (the static ensemble's
    argmax of its mixture)."""
    rule = RULES.get(config.criterion) if config.method in RELAXED_METHODS else None
    return rule is not None and rule.greedy_pick is not None


def _check_decision(r: dict, where: str, config: DecodeConfig) -> None:
    """A record's decision agrees with itself and with its run: its kind is one its method writes, a draft is accepted
    exactly when its reason is an acceptance reason its run gives (`_accept_reasons`), a greedy exact match is the
    target's top-1 (the lossless test at T = 0 is d = argmax; at T > 0 it is a draw, which any rank can pass), and
    the draft's own numbers (`_check_grounds`), lossless verdict (`_check_lossless`) and verdicts (`_check_verdicts`)
    back the decision."""
    kind, accepted, reason = r["kind"], r.get("accepted"), r["reason"]
    kinds = ("target",) if config.method in TARGET_ONLY_METHODS else ("draft", "correction", "bonus")
    if kind not in kinds:
        raise ValueError(
            f"{where}.kind{_place(r)}: a {config.method} run's records are {' / '.join(kinds)}; got {kind}"
        )
    if kind != "draft" and accepted is not None:
        raise ValueError(
            f"{where}.accepted{_place(r)}: only a draft is accepted or rejected; a {kind} record holds null"
        )
    if kind != "draft" and r.get("lossless") is not None:
        raise ValueError(
            f"{where}.lossless{_place(r)}: only a draft is put to the lossless test; a {kind} record holds null"
        )
    if r.get("gated") is not None and (kind != "draft" or not config.span_gate):
        raise ValueError(
            f"{where}.gated{_place(r)}: only a draft of a span-gated run says whether the gate kept its rule out; "
            f"this {kind} record of a run {'with' if config.span_gate else 'without'} the gate holds "
            f"{json.dumps(r['gated'])}"
        )
    if kind != "draft":
        return
    if config.span_gate and r.get("gated") is None:
        raise ValueError(f"{where}.gated{_place(r)}: a draft of a span-gated run says true or false; got null")
    accepts = reason in ACCEPT_REASONS
    if accepted is not accepts:
        raise ValueError(
            f"{where}.accepted{_place(r)}: reason {reason!r} {'accepts' if accepts else 'rejects'} the draft, so "
            f"accepted must be {json.dumps(accepts)}, got {json.dumps(accepted)}"
        )
    if r.get("gated") and reason != "skipped" and accepted is not r.get("lossless"):
        raise ValueError(
            f"{where}.accepted{_place(r)}: the span gate kept the rule out here, so the lossless test decides alone "
            f"(lossless {json.dumps(r.get('lossless'))}); got accepted {json.dumps(accepted)}"
        )
    allowed = ("exact",) if r.get("gated") else _accept_reasons(config)
    if accepts and reason not in allowed:
        mode = " in replace mode" if config.mode == "replace" else ""
        raise ValueError(
            f"{where}.reason{_place(r)}: a {config.method} run{mode} accepts a draft as {' / '.join(allowed)}; got "
            f"{reason!r}"
        )
    if reason == "exact" and config.temperature == 0:
        if r.get("target_rank") not in (None, 1):
            raise ValueError(
                f"{where}.target_rank{_place(r)}: a greedy exact match is the target's top-1, got rank "
                f"{r['target_rank']}"
            )
        if r.get("target_argmax") not in (None, r["token_id"]):
            raise ValueError(
                f"{where}.target_argmax{_place(r)}: a greedy exact match is the target's argmax, token "
                f"{r['token_id']}; got {r['target_argmax']}"
            )
    _check_grounds(r, where, config)
    _check_lossless(r, where, config)
    _check_verdicts(r, where, config)


def _check_grounds(r: dict, where: str, config: DecodeConfig) -> None:
    """A relaxed reason the draft's own numbers refute: `js` with JS(q || centroid) above the paths' threshold,
    `majority` where the paths' plurality is another token or none (the strict variant's more than K/2 is a plurality
    too), `naive` where no path's top-1 is the token, `tie` off T = 0 or off the target's top-1 logit."""
    token, reason, js_draft, threshold = r["token_id"], r["reason"], r.get("js_draft"), r.get("threshold")
    if reason == "js" and js_draft is not None and threshold is not None and js_draft > threshold:
        raise ValueError(
            f"{where}.reason{_place(r)}: 'js' accepts a draft whose JS(q || centroid) is at most the paths' threshold, "
            f"but js_draft {js_draft:.4g} > threshold {threshold:.4g}"
        )
    if reason == "majority" and r.get("path_tokens") is not None and r.get("majority") != token:
        said = "are tied" if r.get("majority") is None else f"go to token {r['majority']}"
        raise ValueError(
            f"{where}.reason{_place(r)}: 'majority' accepts the paths' plurality top-1, but their votes {said}, not to "
            f"token {token}"
        )
    if reason == "naive" and r.get("path_tokens") is not None and token not in r["path_tokens"]:
        raise ValueError(
            f"{where}.reason{_place(r)}: 'naive' accepts a token some path ranks first, but no path's top-1 "
            f"(path_tokens) is token {token}"
        )
    rank, argmax = r.get("target_rank"), r.get("target_argmax")
    if reason == "tie" and (config.temperature != 0 or rank not in (None, 1) or argmax == token):
        raise ValueError(
            f"{where}.reason{_place(r)}: 'tie' is a draft at T = 0 whose target logit equals the argmax's (rank 1, "
            f"another token's index); got T = {config.temperature:g}, rank {rank}, argmax {argmax}"
        )


def _check_lossless(r: dict, where: str, config: DecodeConfig) -> None:
    """A draft's lossless verdict agrees with its decision: `exact` is its acceptance; in OR mode an accepted draft it
    passes is `exact`, and in a lossless or DropMatch run it accepts on its own (a cascade's own test replaces it);
    at T = 0 it passes the target's argmax alone."""
    lossless, token, argmax, reason = r.get("lossless"), r["token_id"], r.get("target_argmax"), r["reason"]
    if lossless is None:
        raise ValueError(
            f"{where}.lossless{_place(r)}: a draft holds the lossless test's verdict, true or false; got null"
        )
    if config.temperature == 0 and argmax is not None and lossless != (token == argmax):
        raise ValueError(
            f"{where}.lossless{_place(r)}: at T = 0 the lossless test passes the target's argmax alone, {argmax}, so "
            f"for token {token} it must be {json.dumps(token == argmax)}; got {json.dumps(lossless)}"
        )
    if reason == "exact" and not lossless:
        raise ValueError(
            f"{where}.lossless{_place(r)}: reason 'exact' is the lossless test's acceptance, so it must be true"
        )
    if lossless and r["accepted"] and config.mode == "or" and reason != "exact":
        raise ValueError(
            f"{where}.reason{_place(r)}: the lossless test passes this draft (lossless true), which in OR mode makes "
            f"its reason 'exact'; got {reason!r}"
        )
    if lossless and reason == "rejected" and config.mode == "or" and config.method in ("lossless", "dropmatch"):
        raise ValueError(
            f"{where}.lossless{_place(r)}: in OR mode a draft the lossless test passes is accepted, but this one is "
            "rejected"
        )


def _check_verdicts(r: dict, where: str, config: DecodeConfig) -> None:
    """The verdicts name registry rules (evidence mode) or the run's rule's components (named by their reasons), and
    back the decision where the rule decided it (the lossless test rejected the draft, or replace mode): accepted
    exactly when the run's rule accepts it, its reason then the first of ACCEPT_REASONS its components hold; a
    rejected draft has no accepting verdict of the run's rule (a skipped one's are for display)."""
    verdicts = r.get("verdicts") or {}
    unknown = sorted(set(verdicts) - {*RULES, *ACCEPT_REASONS})
    if unknown:
        raise ValueError(
            f"{where}.verdicts{_place(r)}: {unknown[0]!r} is neither a rule in the registry nor an acceptance reason"
        )
    if not verdicts or config.method not in RELAXED_METHODS or r.get("gated"):
        return  # where the span gate kept the rule out, the verdicts are for display: the lossless test decided
    rejected, ruled = r["reason"] == "rejected", r["accepted"] and (not r["lossless"] or config.mode == "replace")
    if config.evidence:  # every rule's decision, by name
        said = verdicts.get(config.criterion)
        if said is not None and (rejected and said or ruled and not said):
            raise ValueError(
                f"{where}.verdicts.{config.criterion}{_place(r)}: the run's rule {'accepts' if said else 'rejects'} "
                f"this draft, but it is {'rejected' if rejected else 'accepted, as the lossless test alone would not'}"
            )
        return
    if rejected and (held := next((name for name, v in verdicts.items() if v), None)):
        raise ValueError(
            f"{where}.verdicts.{held}{_place(r)}: the draft is rejected, so no part of the run's rule accepts it"
        )
    held = {"exact": r["lossless"] and config.mode == "or", **verdicts}
    first = next((name for name in ACCEPT_REASONS if held.get(name)), None)
    if ruled and r["reason"] not in ("tie", first):
        raise ValueError(
            f"{where}.reason{_place(r)}: its verdicts make it {first!r}, the first acceptance reason they hold (in the "
            f"order {', '.join(ACCEPT_REASONS)}); got {r['reason']!r}"
            if first
            else f"{where}.verdicts{_place(r)}: none accepts the draft, which the lossless test alone would not accept"
        )


def _check_round(records: list[dict], rows: list[int], t: int, config: DecodeConfig, cut: bool) -> None:
    """One round's records together: the accepted drafts lead, the first draft after them is rejected and the rest
    skipped; the round ends in the correction at the rejected position (scored there: the same target argmax), or the
    bonus after k accepted drafts (the target's token in target-only decoding); its output is the accepted drafts then
    that token, cut short only where `cut` allows (by the end token, in an `eos` run's last round)."""
    *drafts, e = rows
    a = next((n for n, i in enumerate(drafts) if not records[i]["accepted"]), len(drafts))
    for n, i in enumerate(drafts[a:]):
        if records[i]["accepted"]:
            raise ValueError(
                f"records[{i}].accepted{_place(records[i])}: round {t} rejected its draft at position {a + 1}, so the "
                "drafts after it are skipped, not accepted"
            )
        if records[i]["reason"] != ("rejected" if n == 0 else "skipped"):
            said = "is the round's first draft not accepted, so it is rejected" if n == 0 else "follows the round's "
            said += f"rejection at position {a + 1}, so it is skipped" if n else ""
            raise ValueError(f"records[{i}].reason{_place(records[i])}: it {said}; got {records[i]['reason']!r}")
    kind = "correction" if a < len(drafts) else "target" if config.method in TARGET_ONLY_METHODS else "bonus"
    extra = records[e]
    if extra["kind"] != kind:
        why = f"rejected its draft at position {a + 1}" if kind == "correction" else f"accepted all its drafts ({a})"
        raise ValueError(
            f"records[{e}].kind{_place(records[e])}: round {t} {why}, so it ends in a {kind} token; got {extra['kind']}"
        )
    if extra["pos"] != a + 1:
        raise ValueError(
            f"records[{e}].pos{_place(records[e])}: the {kind} follows the round's accepted drafts ({a}), at position "
            f"{a + 1}; got {extra['pos']}"
        )
    scored = records[drafts[a]].get("target_argmax") if kind == "correction" else None
    if None not in (scored, extra.get("target_argmax")) and extra["target_argmax"] != scored:
        raise ValueError(
            f"records[{e}].target_argmax{_place(records[e])}: the correction is scored where records[{drafts[a]}] was "
            f"rejected, whose target argmax is {scored}; got {extra['target_argmax']}"
        )
    if (out := next((i for i in drafts[a:] if records[i]["emitted"]), None)) is not None:
        raise ValueError(
            f"records[{out}].emitted{_place(records[out])}: a {records[out]['reason']} draft is not part of the output"
        )
    flags = [records[i]["emitted"] for i in (*drafts[:a], e)]
    kept = flags.index(False) if False in flags else len(flags)
    if kept < len(flags) and not (cut and kept > 0):
        i = (*drafts[:a], e)[kept]
        raise ValueError(
            f"records[{i}].emitted{_place(records[i])}: the round's output is its accepted drafts and its {kind}; "
            "only an end token leaves the rest out, in the last round of a run that finished on one (finish 'eos')"
        )
    if True in flags[kept:]:
        i = (*drafts[:a], e)[kept + flags[kept:].index(True)]
        raise ValueError(
            f"records[{i}].emitted{_place(records[i])}: an end token before it, in its round, left it out of the output"
        )


def _check_costs(records: list[dict], rows: list[int], cost: dict, room: int, config: DecodeConfig) -> None:
    """A round's cost record counts its records: a draft forward per draft, min(gamma, room - 1) of them where `room`
    tokens are left to emit (none in target-only decoding), a head product per verify position and K more per
    position with paths."""
    t, drafts = cost["round"], [i for i in rows if records[i]["kind"] == "draft"]
    k, m = len(drafts), sum(records[i].get("path_tokens") is not None for i in drafts)
    counted = {
        "draft_forwards": (k, f"round {t} has {k} draft records"),
        "path_positions": (m, f"{m} of round {t}'s drafts hold their paths' evidence"),
        "head_products": (
            k + 1 + config.K * m,
            f"one per verify position ({k + 1}) and K = {config.K} per position "
            f"with paths ({m}) make {k + 1 + config.K * m}",
        ),
    }
    for name, (n, why) in counted.items():
        if cost[name] != n:
            raise ValueError(f"rounds[{t}].{name}: {why}; got {cost[name]}")
    if config.method not in TARGET_ONLY_METHODS and k != min(config.gamma, room - 1):
        raise ValueError(
            f"rounds[{t}].draft_forwards: with {room} of max_new_tokens {config.max_new_tokens} left to emit, a round "
            f"drafts min(gamma {config.gamma}, {room - 1}) = {min(config.gamma, room - 1)} tokens; round {t} drafts {k}"
        )


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
    missing = sorted({"config", "target_id", "prompt", "records", "rounds", "token_ids", "text"} - set(data))
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
    _within(data["token_ids"], 0, vocab - 1, "token_ids (a token id)")
    for i, r in enumerate(data["rounds"]):
        check_fields(r, RoundRecord, f"rounds[{i}]")
        if r["round"] != i:
            raise ValueError(f"rounds[{i}].round: rounds must be numbered 0, 1, 2, ... in order, got {r['round']}")
        for name in (f.name for f in fields(RoundRecord) if f.name != "round"):
            _at_least(r[name], 0, f"rounds[{i}].{name}")
    if not data["rounds"]:
        raise ValueError("rounds: the trace holds no rounds (nothing was decoded)")
    _check_order(data, config, vocab)
    _check_output(data, config)
    return config


def _check_order(data: dict, config: DecodeConfig, vocab: int) -> None:
    """Each record (`_check_record`), and their order: round by round, drafts at positions 1, 2, ... then one
    correction, bonus or target token, every round closed."""
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


def _check_output(data: dict, config: DecodeConfig) -> None:
    """The output against the records: each round's records (`_check_round`), at most max_new_tokens emitted (all of
    them where the run finished on the length), each round's costs (`_check_costs`), token_ids the emitted records'
    tokens and the text what their pieces join to."""
    records, rounds, limit = data["records"], data["rounds"], config.max_new_tokens
    rows: list[list[int]] = [[] for _ in rounds]
    for i, r in enumerate(records):
        rows[r["round"]].append(i)
    for t in range(len(rounds)):
        _check_round(records, rows[t], t, config, cut=t == len(rounds) - 1 and data.get("finish") == "eos")
    emitted = [r for r in records if r["emitted"]]
    if len(emitted) > limit:
        raise ValueError(f"token_ids: the records emit {len(emitted)} tokens, more than max_new_tokens {limit}")
    if data.get("finish") == "length" and len(emitted) != limit:
        raise ValueError(
            f"finish: 'length' is a run that reached max_new_tokens {limit}; its records emit {len(emitted)} tokens"
        )
    done = 0  # tokens emitted before the round
    for t, cost in enumerate(rounds):
        _check_costs(records, rows[t], cost, limit - done, config)
        done += sum(records[i]["emitted"] for i in rows[t])
    if [r["token_id"] for r in emitted] != data["token_ids"]:
        raise ValueError("token_ids: must be the emitted records' tokens, in order")
    if not _joins_to(data["text"], [r["text"] for r in emitted], data.get("finish") == "eos"):
        raise ValueError("text: must be what the emitted records' texts join to (U+FFFD and special tokens aside)")
