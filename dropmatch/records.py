"""The per-token record builder: one round's decisions and tensors become frozen `TokenRecord`s, in one place.

`RoundOutcome` names what a round decided; `round_records` turns it, with the round's distributions and
the evidence each checked position showed (paths, the relatives' statistics), into one record per drafted
position and one for the correction / bonus / target token.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from dropmatch.config import RECORDED_STATISTICS
from dropmatch.criteria import RULES, accept_reason
from dropmatch.evidence import Evidence
from dropmatch.trace import TokenRecord


@dataclass(frozen=True)
class Checked:
    """One drafted position whose evidence was looked at: row `row` of `evidence`, and the run's rule's
    component verdicts there (empty for a lossless run, which only records the statistics)."""

    evidence: Evidence
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
    checked: Mapping[int, Checked]
    mode: str  # "or": lossless OR the criterion; "replace": the criterion alone
    knobs: Mapping[str, float] = field(default_factory=dict)  # the run's relative and its knob, if it runs one


def every_rule(ev: Evidence, knobs: Mapping[str, float]) -> list[dict[str, bool]]:
    """Every registry rule's decision at each position of `ev`, each rule run once over all positions:
    DropMatch's rules where the paths were computed, every relative at `knobs` (default: its own)."""
    rules = [r for r in RULES.values() if ev.paths is not None or not r.needs_paths]
    hits = {r.name: r(ev, knobs.get(r.name)).accept.tolist() for r in rules}
    return [{name: h[i] for name, h in hits.items()} for i in range(len(ev.draft))]


def path_fields(checked: Checked, draft_token: int, full: bool) -> dict:
    """The record's path fields at one position: path tokens, votes, majority, JS values.

    Lazy runs record what the chosen criterion computed; evidence mode records everything.
    """
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
    if full or "js_paths" in vars(stats):  # JS values are cached only where a rule needed them
        fields |= {
            "js_paths": stats.js_paths[i].tolist(),
            "threshold": float(stats.js_paths[i].max()),
            "js_draft": float(stats.js_draft[i]),
        }
    return fields


def rule_stats(checked: Checked, full: bool) -> dict[str, float] | None:
    """The relatives' statistics at one position: all of them in evidence mode, else those the rule read."""
    ev, i = checked.evidence, checked.row
    names = RECORDED_STATISTICS if full else [n for n in ev.computed() if n in RECORDED_STATISTICS]
    values = {name: float(ev[name][i]) for name in names}
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


def round_records(tokenizer, out: RoundOutcome, pieces: list[str], z, p, q, full: bool, top_n: int) -> list:
    """One frozen TokenRecord per drafted position, then the correction / bonus / target token.

    z, p: [k+1, V] unmasked target logits and probabilities; q: [k, V] draft probabilities; pieces: the text
    of each emitted token; full: evidence mode (every rule's verdict and the top-N distributions).
    """
    k, a, records = len(out.drafts), out.accepted, []
    ruled: dict[int, list] = {}  # every rule's verdicts per Evidence object, computed once (evidence mode)
    for j, token in enumerate((*out.drafts, out.extra)):
        is_draft = j < k
        row = j if is_draft else a  # the verify position, and the index among emitted tokens
        reason, accepted = _reason(out, j) if is_draft else (out.extra_kind, None)
        emitted = (not is_draft or j < a) and row < len(out.emitted)
        fields = {}
        if is_draft and j in out.checked:
            checked = out.checked[j]
            fields["rule_stats"] = rule_stats(checked, full)
            fields["verdicts"] = dict(checked.components) or None
            if full:
                key = id(checked.evidence)
                if key not in ruled:
                    ruled[key] = every_rule(checked.evidence, out.knobs)
                fields["verdicts"] = ruled[key][checked.row]
            if checked.evidence.paths is not None:
                fields |= path_fields(checked, token, full)
                if full:
                    fields["top"] = top_union(tokenizer, top_n, token, q[j], p[j], checked)
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
                p_argmax=float(p[row].max()),
                target_argmax=int(z[row].argmax()),
                target_rank=int((z[row] > z[row, token]).sum()) + 1,
                **fields,
            )
        )
    return records
