"""The per-token record builder: one round's decisions and tensors become frozen `TokenRecord`s, in one place.

`RoundOutcome` names what a round decided; `round_records` turns it, with the round's distributions and
path statistics, into one record per drafted position and one for the correction / bonus / target token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from dropmatch.criteria import CRITERIA, accept_reason
from dropmatch.heads import PathStats
from dropmatch.trace import TokenRecord


@dataclass(frozen=True)
class Paths:
    """The K paths at one drafted position: row `row` of `stats`, and the criterion's component verdicts there."""

    stats: PathStats
    row: int
    components: Mapping[str, bool]


@dataclass(frozen=True)
class RoundOutcome:
    """What one round decided, before records: drafts d_1..d_k, the lossless test per position, the accepted
    prefix length a (uncut), the correction or bonus token, the tokens emitted (after any end-token or length
    cut), and the positions whose paths were computed."""

    round: int
    drafts: tuple[int, ...]
    lossless: tuple[bool, ...]
    accepted: int
    extra: int
    extra_kind: str  # "correction", "bonus" or "target"
    emitted: tuple[int, ...]
    paths: Mapping[int, Paths]
    mode: str  # "or": lossless OR the criterion; "replace": the criterion alone


def every_rule(stats: PathStats) -> list[dict[str, bool]]:
    """Every registry rule's decision at each position of `stats`, each rule run once over all positions."""
    hits = {name: rule(stats).accept.tolist() for name, rule in CRITERIA.items()}
    return [{name: h[i] for name, h in hits.items()} for i in range(len(stats.draft))]


def path_fields(paths: Paths, draft_token: int, verdicts: dict[str, bool] | None = None) -> dict:
    """The record's path fields at one position: path tokens, votes, majority, JS values, verdicts.

    Lazy runs record what the chosen criterion computed; evidence mode passes every rule's `verdicts`
    (from `every_rule`), so the inspector can say what each would have decided.
    """
    full = verdicts is not None
    stats, i = paths.stats, paths.row
    logp = stats.logprobs[i]  # [K, V]
    majority = int(stats.majority[i])
    fields = {
        "path_tokens": stats.tokens[i].tolist(),
        "votes": [[tok, n] for tok, n in sorted(stats.votes[i].items(), key=lambda kv: (-kv[1], kv[0]))],
        "majority": None if majority < 0 else majority,
        "path_p": logp[:, draft_token].exp().tolist(),
        "path_rank": ((logp > logp[:, draft_token : draft_token + 1]).sum(-1) + 1).tolist(),
        "verdicts": dict(verdicts) if full else dict(paths.components),
    }
    if full or "js_paths" in vars(stats):  # JS values are cached only where a rule needed them
        fields |= {"js_paths": stats.js_paths[i].tolist(), "threshold": float(stats.js_paths[i].max()),
                   "js_draft": float(stats.js_draft[i])}  # fmt: skip
    return fields


def top_union(tokenizer, n: int, draft_token: int, q: torch.Tensor, p: torch.Tensor, paths: Paths) -> dict:
    """Probabilities of the draft, the unmasked target, the centroid and each path over the union of
    their top-n tokens (plus the draft token), ordered by the target's probability."""
    stats, i = paths.stats, paths.row
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
    components = out.paths[j].components if j in out.paths else {}
    reason = accept_reason(out.lossless[j] and out.mode == "or", components)
    assert reason is not None, f"position {j} is accepted with no accepting rule"
    return reason, True


def round_records(tokenizer, out: RoundOutcome, pieces: list[str], z, p, q, full: bool, top_n: int) -> list:
    """One frozen TokenRecord per drafted position, then the correction / bonus / target token.

    z, p: [k+1, V] unmasked target logits and probabilities; q: [k, V] draft probabilities; pieces: the text
    of each emitted token; full: evidence mode (every rule's verdict and the top-N distributions).
    """
    k, a, records = len(out.drafts), out.accepted, []
    ruled: dict[int, list] = {}  # every rule's verdicts per PathStats object, computed once (evidence mode)
    for j, token in enumerate((*out.drafts, out.extra)):
        is_draft = j < k
        row = j if is_draft else a  # the verify position, and the index among emitted tokens
        reason, accepted = _reason(out, j) if is_draft else (out.extra_kind, None)
        emitted = (not is_draft or j < a) and row < len(out.emitted)
        fields = {}
        if is_draft and j in out.paths:
            paths = out.paths[j]
            verdicts = None
            if full:
                if id(paths.stats) not in ruled:
                    ruled[id(paths.stats)] = every_rule(paths.stats)
                verdicts = ruled[id(paths.stats)][paths.row]
            fields = path_fields(paths, token, verdicts)
            if full:
                fields["top"] = top_union(tokenizer, top_n, token, q[j], p[j], out.paths[j])
        records.append(
            TokenRecord(
                round=out.round,
                pos=j + 1 if is_draft else a + 1,
                kind="draft" if is_draft else out.extra_kind,
                token_id=token,
                text=pieces[row] if emitted else tokenizer.decode([token]),
                emitted=emitted,
                reason=reason,
                accepted=accepted,
                lossless=out.lossless[j] if is_draft else None,
                q=float(q[row, token]) if row < k else None,
                p=float(p[row, token]),
                target_argmax=int(z[row].argmax()),
                target_rank=int((z[row] > z[row, token]).sum()) + 1,
                **fields,
            )
        )
    return records
