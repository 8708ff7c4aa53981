"""The per-token record builder: one round's decisions and evidence become frozen `TokenRecord`s, in one place.

`RoundOutcome` names what a round decided and the evidence it saw; `record_values` gathers the device values its
records need (read on the host in one copy, with every other sequence's of a batch) and `records_from` turns them into
one record per drafted position and one for the correction / bonus / target token. Probabilities and ranks are read from
the round's `Evidence`; at a checked position, the paths and the relatives' statistics from the evidence the
rule saw there. What a record keeps of those is what the run's rule reads (`criteria.Rule.reads`), or all of it
in evidence mode.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from dropmatch.config import RECORDED_STATISTICS
from dropmatch.criteria import RULES, accept_reason, is_tie
from dropmatch.evidence import STATISTICS, Evidence
from dropmatch.heads import PATH_STATISTICS, votes
from dropmatch.trace import TokenRecord

EVERYTHING = (*STATISTICS, *PATH_STATISTICS)  # what an evidence-mode record keeps where it was computed


@dataclass(frozen=True, kw_only=True)
class Checked:
    """One drafted position whose evidence was looked at: row `row` of `evidence`, and the run's rule's
    component verdicts there (empty for a lossless run, which only records the statistics)."""

    evidence: Evidence
    row: int
    components: Mapping[str, bool]


@dataclass(frozen=True, kw_only=True)
class RoundOutcome:
    """What one round saw and decided, before records: its evidence (drafts d_1..d_k, q, the target at the k + 1
    verify positions), the lossless test per position, the accepted prefix length a (uncut), the correction or
    bonus token, the tokens emitted (after any end-token or length cut), and the positions checked."""

    round: int
    evidence: Evidence
    lossless: tuple[bool, ...]
    accepted: int
    extra: int
    extra_kind: str  # "correction", "bonus" or "target"
    emitted: tuple[int, ...]
    checked: Mapping[int, Checked]
    closed: tuple[bool, ...] = ()  # per draft: the span gate kept the rule out (empty without the gate)
    mode: str  # "or": lossless OR the criterion; "replace": the criterion alone
    knobs: Mapping[str, float] = field(default_factory=dict)  # the run's relative and its knob, if it runs one


def every_rule(ev: Evidence, knobs: Mapping[str, float]) -> dict[str, torch.Tensor]:
    """Every registry rule's decision at each position of `ev`, each rule run once over all positions:
    DropMatch's rules where the paths were computed, every relative at `knobs` (default: its own).  # name -> [P]"""
    rules = [r for r in RULES.values() if ev.paths is not None or not r.needs_paths]
    return {r.name: r(ev, knobs.get(r.name)).accept for r in rules}


def path_values(checked: Checked, keep: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """What a record keeps of the paths at one position, on the device: path tokens, the majority, path p(d) and
    rank; the JS values where the record keeps them (`keep` names js_paths: the rule reads them, or evidence mode)."""
    stats, i = checked.evidence.paths, checked.row
    logp = stats.logprobs[i]  # [K, V]
    d = checked.evidence.draft[i : i + 1]
    logp_d = logp.gather(-1, d.expand(logp.shape[0])[:, None])  # [K, 1]
    values = {
        "path_tokens": stats.tokens[i],
        "majority": stats.majority[i],
        "path_p": logp_d[:, 0].exp(),
        "path_rank": (logp > logp_d).sum(-1) + 1,
    }
    if "js_paths" in keep:
        values |= {"js_paths": stats.js_paths[i], "js_draft": stats.js_draft[i]}
    return values


def path_fields(values: dict) -> dict:
    """The record's path fields from `path_values` as the host read them (votes in order of count, then id)."""
    counts = votes(values["path_tokens"])
    fields = {
        "path_tokens": values["path_tokens"],
        "votes": [[tok, n] for tok, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))],
        "majority": None if values["majority"] < 0 else values["majority"],
        "path_p": values["path_p"],
        "path_rank": values["path_rank"],
    }
    if "js_paths" in values:
        fields |= {"js_paths": values["js_paths"], "threshold": max(values["js_paths"]), "js_draft": values["js_draft"]}
    return fields


def rule_stats(values: dict[str, float]) -> dict[str, float] | None:
    """The relatives' statistics at one position that the record keeps (None where it keeps none)."""
    values = {name: float(v) for name, v in values.items()}
    return {name: v if math.isfinite(v) else None for name, v in values.items()} or None  # JSON has no inf or NaN


def top_values(n: int, draft_token: torch.Tensor, q: torch.Tensor, p: torch.Tensor, checked: Checked) -> dict:
    """The draft, the unmasked target, the centroid and each path over the candidates for the union of their top-n
    tokens, on the device: each row's top-n ids, and every row at those ids and the draft token's."""
    stats, i = checked.evidence.paths, checked.row
    rows = torch.cat([q[None], p[None], stats.centroid_logprobs[i].exp()[None], stats.logprobs[i].exp()])  # [K+3, V]
    ids = rows.topk(n, dim=-1).indices  # [K+3, n]
    candidates = torch.cat([ids.flatten(), draft_token.reshape(1)])  # [M]
    return {"ids": ids, "candidates": candidates, "values": rows[:, candidates]}  # values [K+3, M]


def top_union(tokenizer, values: dict) -> dict:
    """Probabilities of the draft, the unmasked target, the centroid and each path over the union of their top-n
    tokens (plus the draft token), ordered by the target's probability: from `top_values` as the host read them."""
    candidates, rows = values["candidates"], values["values"]
    column = {tok: c for c, tok in reversed(list(enumerate(candidates)))}  # the first column holding each id
    ids = {tok for row in values["ids"] for tok in row} | {candidates[-1]}
    ids = sorted(ids, key=lambda t: -rows[1][column[t]])
    at = [column[t] for t in ids]
    return {
        "ids": ids,
        "texts": [tokenizer.decode([t]) for t in ids],
        "draft": [rows[0][c] for c in at],
        "target": [rows[1][c] for c in at],
        "centroid": [rows[2][c] for c in at],
        "paths": [[row[c] for c in at] for row in rows[3:]],
    }


def _reason(out: RoundOutcome, j: int) -> tuple[str, bool]:
    """Reason and accepted flag of draft position j. In replace mode the lossless test decides nothing, so
    an accepted token is named by the criterion's component that accepted it; where the span gate kept the rule out,
    the lossless test decides alone, in either mode."""
    if j >= out.accepted:
        return ("rejected" if j == out.accepted else "skipped"), False
    components = out.checked[j].components if j in out.checked else {}
    alone = out.mode == "or" or (out.closed and out.closed[j])
    reason = accept_reason(out.lossless[j] and alone, components)
    assert reason is not None, f"position {j} is accepted with no accepting rule"
    return reason, True


def _checked_values(out: RoundOutcome, j: int, keep, full: bool, top_n: int, ruled: dict) -> dict:
    """What a checked position adds to its record, on the device: statistics, every rule's verdict (evidence
    mode), the paths and the top-N lists."""
    checked = out.checked[j]
    part, i = checked.evidence, checked.row
    values = {"stats": {name: part[name][i] for name in RECORDED_STATISTICS if name in keep}}
    if full:
        key = id(part)
        if key not in ruled:
            ruled[key] = every_rule(part, out.knobs)
        values["verdicts"] = {name: hit[i] for name, hit in ruled[key].items()}
    if part.paths is not None:
        values["paths"] = path_values(checked, keep)
        if full:
            ev = out.evidence
            values["top"] = top_values(top_n, part.draft[i], ev.q[j], ev.p[j], checked)
    return values


def _checked_fields(tokenizer, out: RoundOutcome, j: int, values: dict) -> dict:
    """The record's fields at a checked position, from `_checked_values` as the host read them."""
    verdicts = values.get("verdicts", out.checked[j].components)
    fields = {"rule_stats": rule_stats(values["stats"]), "verdicts": dict(verdicts) or None}
    if "paths" in values:
        fields |= path_fields(values["paths"])
    if "top" in values:
        fields["top"] = top_union(tokenizer, values["top"])
    return fields


def record_values(outcome: RoundOutcome, *, reads: tuple[str, ...], full: bool, top_n: int) -> dict:
    """The device values a round's records need (`records_from` takes them as the host read them, in one copy):
    each token's id, p(token), rank and the target's top-1 at its verify position, q(token) where drafted, and what
    each checked position showed. reads: what the run's rule reads (a lazy record keeps those of the statistics and
    the JS values); full: evidence mode (every statistic, every rule's verdict, the top-N lists). Every number is
    computed where the evidence lives."""
    out, ev = outcome, outcome.evidence
    k, a = len(ev.draft), out.accepted
    # on the device without a host-to-device copy: a range and fills of host numbers (kernel arguments)
    rows = torch.cat([torch.arange(k, device=ev.device), torch.full((1,), a, device=ev.device)])
    tokens = torch.cat([ev.draft, torch.full((1,), out.extra, dtype=ev.draft.dtype, device=ev.device)])
    drafted = k + (a < k)  # the first tokens have a draft distribution at their position (the correction's too)
    keep = EVERYTHING if full else reads
    ruled: dict[int, dict] = {}  # every rule's verdicts per Evidence object, computed once (evidence mode)
    return {
        "token": tokens,
        "p": ev.prob(rows, tokens),
        "rank": ev.rank_of(rows, tokens),
        "p_top": ev.p[rows].max(-1).values,
        "argmax": ev.argmax[rows],
        "q": ev.q[rows[:drafted], tokens[:drafted]],
        "checked": {j: _checked_values(out, j, keep, full, top_n, ruled) for j in out.checked},
    }


def records_from(tokenizer, outcome: RoundOutcome, pieces: list[str], seen: dict) -> list[TokenRecord]:
    """One frozen TokenRecord per drafted position, then the correction / bonus / target token, from the values of
    `record_values` as the host read them. pieces: the text of each emitted token."""
    out, ev = outcome, outcome.evidence
    k, a = len(ev.draft), out.accepted
    at = [*range(k), a]  # the verify position of each token; the extra one's is a
    records = []
    q = dict(enumerate(seen["q"]))
    for j, (row, token) in enumerate(zip(at, seen["token"])):
        is_draft = j < k
        reason, accepted = _reason(out, j) if is_draft else (out.extra_kind, None)
        rank, argmax = seen["rank"][j], seen["argmax"][j]
        if is_draft and is_tie(ev.u is None, accepted, out.lossless[j], rank, token, argmax):
            reason = "tie"
        emitted = (not is_draft or j < a) and row < len(out.emitted)
        fields = _checked_fields(tokenizer, out, j, seen["checked"][j]) if is_draft and j in out.checked else {}
        records.append(
            TokenRecord(
                round=out.round,
                pos=row + 1,
                kind="draft" if is_draft else out.extra_kind,
                token_id=token,
                text=pieces[row] if emitted else tokenizer.decode([token]),
                emitted=emitted,
                reason=reason,
                accepted=accepted,
                lossless=out.lossless[j] if is_draft else None,
                q=q.get(j),
                p=seen["p"][j],
                p_argmax=seen["p_top"][j],
                target_argmax=argmax,
                target_rank=rank,
                gated=out.closed[j] if is_draft and out.closed else None,
                **fields,
            )
        )
    return records
