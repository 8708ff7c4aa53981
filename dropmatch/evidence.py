"""Turns the path statistics at one position into plain record fields: votes, JS values, verdicts, top-N."""

from __future__ import annotations

import torch

from dropmatch.criteria import CRITERIA
from dropmatch.heads import PathStats
from dropmatch.trace import TokenRecord


def position_evidence(rec: TokenRecord, stats: PathStats, i: int, components: dict[str, bool], full: bool) -> None:
    """Fill the path fields of `rec` from row i of `stats`.

    Lazy runs record what the chosen criterion computed; `full` (evidence mode) also evaluates every
    rule in the registry so the inspector can say what each would have decided.
    """
    d = rec.token_id
    rec.path_tokens = stats.tokens[i].tolist()
    votes = sorted(stats.votes[i].items(), key=lambda kv: (-kv[1], kv[0]))
    rec.votes = [[tok, n] for tok, n in votes]
    majority = int(stats.majority[i])
    rec.majority = None if majority < 0 else majority
    logp = stats.logprobs[i]  # [K, V]
    rec.path_p = logp[:, d].exp().tolist()
    rec.path_rank = ((logp > logp[:, d : d + 1]).sum(-1) + 1).tolist()
    if full or "js_paths" in vars(stats):  # JS values are cached only where a rule needed them
        rec.js_paths = stats.js_paths[i].tolist()
        rec.threshold = float(stats.js_paths[i].max())
        rec.js_draft = float(stats.js_draft[i])
    if full:
        rec.verdicts = {name: bool(fn(stats).accept[i]) for name, fn in CRITERIA.items()}
    else:
        rec.verdicts = dict(components)


def top_union(tokenizer, n: int, draft_token: int, q: torch.Tensor, p: torch.Tensor, stats: PathStats, i: int) -> dict:
    """Probabilities of the draft, the unmasked target, the centroid and each path over the union of
    their top-n tokens (plus the draft token), ordered by the target's probability."""
    paths = stats.logprobs[i].exp()  # [K, V]
    centroid = stats.centroid_logprobs[i].exp()  # [V]
    rows = torch.cat([q[None], p[None], centroid[None], paths])  # [K+3, V]
    ids = set(rows.topk(n, dim=-1).indices.flatten().tolist()) | {draft_token}
    ids = sorted(ids, key=lambda t: -float(p[t]))
    idx = torch.tensor(ids)
    return {
        "ids": ids,
        "texts": [tokenizer.decode([t]) for t in ids],
        "draft": q[idx].tolist(),
        "target": p[idx].tolist(),
        "centroid": centroid[idx].tolist(),
        "paths": paths[:, idx].tolist(),
    }
