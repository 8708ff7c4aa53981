"""The per-token record builder: one round's decisions and evidence become frozen `TokenRecord`s, in one place.

`RoundOutcome` names what a round decided and the evidence it saw; `round_records` turns it into one record
per drafted position and one for the correction / bonus / target token. Probabilities and ranks are read from
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
from dropmatch.heads import PATH_STATISTICS
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
    mode: str  # "or": lossless OR the criterion; "replace": the criterion alone
    knobs: Mapping[str, float] = field(default_factory=dict)  # the run's relative and its knob, if it runs one


def every_rule(ev: Evidence, knobs: Mapping[str, float]) -> list[dict[str, bool]]:
    """Every registry rule's decision at each position of `ev`, each rule run once over all positions:
    DropMatch's rules where the paths were computed, every relative at `knobs` (default: its own)."""
    rules = [r for r in RULES.values() if ev.paths is not None or not r.needs_paths]
    hits = {r.name: r(ev, knobs.get(r.name)).accept.tolist() for r in rules}
    return [{name: h[i] for name, h in hits.items()} for i in range(len(ev.draft))]


def path_fields(checked: Checked, draft_token: int, keep: tuple[str, ...]) -> dict:
    """The record's path fields at one position: path tokens, votes, majority, path p(d) and rank; the JS values
    where the record keeps them (`keep` names js_paths: the rule reads them, or evidence mode)."""
    stats, i = checked.evidence.paths, checked.row
    logp = stats.logprobs[i]  # [K, V]
    majority = int(stats.majority[i])
    fields = {
        "path_tokens": stats.tokens[i].tolist(),
        "votes": [[tok, n] for tok, n in sorted(stats.votes[i].items(), key=lambda kv: (-kv[1], kv[0]))],
        "majority": None if majority < 0 else majority,
        "path_p": logp[:, draft_token].exp().tolist(),
        "path_rank": ((logp > logp[:, draft_token : draft_token + 1]).sum(-1) + 1).tolist(),
    }
    if "js_paths" in keep:
        fields |= {
            "js_paths": stats.js_paths[i].tolist(),
            "threshold": float(stats.js_paths[i].max()),
            "js_draft": float(stats.js_draft[i]),
        }
    return fields


def rule_stats(checked: Checked, keep: tuple[str, ...]) -> dict[str, float] | None:
    """The relatives' statistics at one position that the record keeps (None where it keeps none)."""
    ev, i = checked.evidence, checked.row
    values = {name: float(ev[name][i]) for name in RECORDED_STATISTICS if name in keep}
    return {name: v if math.isfinite(v) else None for name, v in values.items()} or None  # JSON has no inf or NaN


def top_union(tokenizer, n: int, draft_token: int, q: torch.Tensor, p: torch.Tensor, checked: Checked) -> dict:
    """Probabilities of the draft, the unmasked target, the centroid and each path over the union of
    their top-n tokens (plus the draft token), ordered by the target's probability."""
    stats, i = checked.evidence.paths, checked.row
    path_probs = stats.logprobs[i].exp()  # [K, V]
    centroid = stats.centroid_logprobs[i].exp()  # [V]
    rows = torch.cat([q[None], p[None], centroid[None], path_probs])  # [K+3, V]
    ids = set(rows.topk(n, dim=-1).indices.flatten().tolist()) | {draft_token}
    ids = sorted(ids, key=lambda t: -float(p[t]))
    idx = torch.tensor(ids)
    return {
        "ids": ids,
        "texts": [tokenizer.decode([t]) for t in ids],
        "draft": q[idx].tolist(),
        "target": p[idx].tolist(),
        "centroid": centroid[idx].tolist(),
        "paths": path_probs[:, idx].tolist(),
    }


def _reason(out: RoundOutcome, j: int) -> tuple[str, bool]:
    """Reason and accepted flag of draft position j. In replace mode the lossless test decides nothing, so
    an accepted token is named by the criterion's component that accepted it."""
    if j >= out.accepted:
        return ("rejected" if j == out.accepted else "skipped"), False
    components = out.checked[j].components if j in out.checked else {}
    reason = accept_reason(out.lossless[j] and out.mode == "or", components)
    assert reason is not None, f"position {j} is accepted with no accepting rule"
    return reason, True


def _checked_fields(tokenizer, out: RoundOutcome, j: int, token: int, keep, full: bool, top_n: int, ruled) -> dict:
    """What a checked position adds to its record: statistics, verdicts (every rule's in evidence mode), paths."""
    checked = out.checked[j]
    fields = {"rule_stats": rule_stats(checked, keep), "verdicts": dict(checked.components) or None}
    if full:
        key = id(checked.evidence)
        if key not in ruled:
            ruled[key] = every_rule(checked.evidence, out.knobs)
        fields["verdicts"] = ruled[key][checked.row]
    if checked.evidence.paths is not None:
        fields |= path_fields(checked, token, keep)
        if full:
            fields["top"] = top_union(tokenizer, top_n, token, out.evidence.q[j], out.evidence.p[j], checked)
    return fields


def round_records(
    tokenizer, *, outcome: RoundOutcome, pieces: list[str], reads: tuple[str, ...], full: bool, top_n: int
) -> list[TokenRecord]:
    """One frozen TokenRecord per drafted position, then the correction / bonus / target token.

    pieces: the text of each emitted token; reads: what the run's rule reads (a lazy record keeps those of the
    statistics and the JS values); full: evidence mode (every statistic, every rule's verdict, the top-N lists).
    """
    out, ev = outcome, outcome.evidence
    k, a = len(ev.draft), out.accepted
    tokens = [*ev.draft.tolist(), out.extra]
    rows = torch.tensor([*range(k), a])  # the verify position of each token; the extra one's is a
    p, rank = ev.prob(rows, torch.tensor(tokens)).tolist(), ev.rank_of(rows, torch.tensor(tokens)).tolist()
    p_top, argmax = ev.p[rows].max(-1).values.tolist(), ev.target_logits[rows].argmax(-1).tolist()
    keep = EVERYTHING if full else reads
    ruled: dict[int, list] = {}  # every rule's verdicts per Evidence object, computed once (evidence mode)
    records = []
    for j, (row, token) in enumerate(zip(rows.tolist(), tokens)):
        is_draft = j < k
        reason, accepted = _reason(out, j) if is_draft else (out.extra_kind, None)
        if is_draft and is_tie(ev.u is None, accepted, out.lossless[j], rank[j], token, argmax[j]):
            reason = "tie"
        emitted = (not is_draft or j < a) and row < len(out.emitted)
        fields = {}
        if is_draft and j in out.checked:
            fields = _checked_fields(tokenizer, out, j, token, keep, full, top_n, ruled)
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
                q=float(ev.q[row, token]) if row < k else None,
                p=p[j],
                p_argmax=p_top[j],
                target_argmax=argmax[j],
                target_rank=rank[j],
                **fields,
            )
        )
    return records
