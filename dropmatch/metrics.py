"""Metrics computed from a trace alone (docs/algorithm.md, "Metrics"), with their definitions and a pandas table view.

The one copy of every shared measure: tau, the output comparison (first divergence, equal share) and
pooled tau over several runs; the lab and the figures call these, never a copy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dropmatch.config import TARGET_ONLY_METHODS
from dropmatch.criteria import is_tie
from dropmatch.trace import TokenRecord, Trace

# What the two target log-prob measures are: proxies that score d by the target's own p(d).
PROXY_NOTE = (
    "; a proxy: it scores the target's own p(d), so by construction it favours rules that threshold p(d) (typical, "
    "top-k, MARS) over rules that compare q with p (DropMatch, Fuzzy SD); the task score (pass@1) is the neutral "
    "measure"
)
# Shown next to every number in the CLI and the app.
DEFINITIONS = {
    "tau": (
        "mean acceptance length N / T: tokens emitted per target forward, bonus token included (1.0 for plain decoding)"
    ),
    "tau_minus_1": "mean accepted draft tokens per target forward, tau - 1 (bonus excluded)",
    "acceptance_rate": "accepted draft tokens / drafted tokens, sum a_t / sum k_t",
    "per_position": "r_i = share of rounds whose accepted prefix reaches draft position i",
    "histogram": "h[j] = rounds that accepted exactly j drafts (sum h = T)",
    "relaxed_share": "accepted drafts that lossless would have rejected / accepted drafts, ties excluded (a tie is "
    "counted apart: ties_share)",
    "ties": "ties accepted: at T = 0 a draft whose target logit equals the argmax's, which exact match rejects only by "
    "index order, accepted by a relaxed rule (read from the record's rank and argmax, so older traces count too)",
    "ties_share": "ties / accepted drafts",
    "n_tokens": "N, generated tokens",
    "target_forwards": "T, target verification forwards (rounds)",
    "draft_forwards": "draft model forwards",
    "head_products": (
        "target LM-head products: one per verified position, plus K per position whose paths were computed"
    ),
    "wall_s": "wall time of all rounds, prefill included, seconds",
    "tokens_per_s": "N / wall time",
    "overhead_share": "time in dropout paths and criteria / total round time",
    "draft_share": "time drafting (the draft model's steps) / total round time",
    "target_share": "time in the target's verification forwards / total round time",
    "speedup": "tokens/s / tokens/s of the baseline on the same prompt",
    "first_divergence": (
        "first generated position (0-based) where the output departs from the baseline's; None if it never does"
    ),
    "equal_share": "share of positions up to the shorter output where the two outputs hold the same token",
    "length_ratio": "lambda = N / N of the baseline (lossless) on the same prompt: how much longer the output runs",
    "capped": "the run hit max_new_tokens (1) rather than ending on an end token or a stop sequence (0)",
    "loop": "the output holds a repetition loop: an adjacent span repeated >= 3 times covering >= 15 tokens (1/0)",
    "loop_relaxed": "a repetition loop holds at least one relaxed acceptance (1/0; empty when there is no loop)",
    "relaxed_cost_mean": "mean cost of a relaxed acceptance, log p(target top-1) - log p(d) under the unmasked "
    "target, nats (0 = the target's own choice)" + PROXY_NOTE,
    "relaxed_cost_sum": "total cost of the run's relaxed acceptances, nats",
    "relaxed_emitted": "relaxed acceptances in the output (drafts lossless would have rejected), ties excluded",
    "mean_logp": "mean log-probability of the emitted tokens under the unmasked target, nats (higher = more "
    "the target's own text)" + PROXY_NOTE,
    "disagreement": "verified draft positions where the draft's token was not the target's top-1 (a rejection, a "
    "relaxed acceptance or a tie) / verified draft positions, pooled: how often the draft disagrees with the text "
    "the rule keeps",
    "relaxed_of_disagreements": "disagreements the rule accepted (relaxed acceptances and ties) / disagreements",
    "follow_on": "drafts accepted after a relaxed acceptance (or a tie) in its round, mean over them: with the "
    "accepted token itself, what one relaxation buys (a rejection there would have ended the round)",
    "disagreement_after_relaxed": "share of the verified positions right after a relaxed acceptance where the draft "
    "disagrees again (compare with disagreement)",
}
ROUND_ENDS = ("bonus", "correction")  # the target's token closing a round: every draft accepted, or one rejected
ANATOMY = ("verified", "disagreed", "relaxed", "followed", "after", "after_disagreed")  # `round_anatomy`'s counts


def greedy(trace: Trace) -> bool:
    return not trace.config.get("temperature")


def tie(trace: Trace, rec: TokenRecord) -> bool:
    """A tie (criteria.is_tie), from the record's fields: recorded as such, or before the `tie` reason existed."""
    tied = is_tie(greedy(trace), rec.accepted, rec.lossless, rec.target_rank, rec.token_id, rec.target_argmax)
    return rec.kind == "draft" and (rec.reason == "tie" or tied)


def relaxed(trace: Trace, rec: TokenRecord) -> bool:
    """An accepted draft lossless rejects, not a tie: what a relaxed rule bought."""
    return rec.kind == "draft" and bool(rec.accepted) and not rec.lossless and not tie(trace, rec)


_ROUND_COLUMNS = ["round", "k", "a", "e", "relaxed", "ties"]


def round_stats(trace: Trace) -> pd.DataFrame:
    """One row per round: k (drafted), a (accepted prefix, uncapped by EOS or length), e (emitted), relaxed
    acceptances and ties."""
    rows = {r.round: dict.fromkeys(_ROUND_COLUMNS, 0) | {"round": r.round} for r in trace.rounds}
    for rec in trace.records:
        row = rows.setdefault(rec.round, dict.fromkeys(_ROUND_COLUMNS, 0) | {"round": rec.round})
        if rec.kind == "draft":
            row["k"] += 1
            row["a"] += bool(rec.accepted)
            row["relaxed"] += relaxed(trace, rec)
            row["ties"] += tie(trace, rec)
        row["e"] += rec.emitted
    return pd.DataFrame(sorted(rows.values(), key=lambda r: r["round"]), columns=_ROUND_COLUMNS)


def repetition_loop(ids: Sequence, min_repeats: int = 3, min_tokens: int = 15) -> tuple[int, int, int] | None:
    """The longest stretch of `ids` that repeats one span back to back: (start, span length, stretch length).

    A stretch of period L is where ids[i] == ids[i + L] holds run after run; it counts as a loop when it holds
    at least `min_repeats` copies of the span (length >= min_repeats * L) and covers at least `min_tokens`
    tokens. None when there is no loop.
    """
    x = np.asarray(ids)
    best = None
    for L in range(1, len(x) // min_repeats + 1):
        same = np.concatenate([[False], x[L:] == x[:-L], [False]])
        edges = np.flatnonzero(np.diff(same.astype(np.int8)))  # run starts and ends, alternating
        for start, end in zip(edges[::2], edges[1::2]):
            length = end - start + L  # the run of equal pairs plus the span it copies
            if length >= max(min_repeats * L, min_tokens) and (best is None or length > best[2]):
                best = (int(start), L, int(length))
    return best


def quality(trace: Trace) -> dict:
    """Quality measures of one run from its trace alone: cap-out, repetition loop (and whether a relaxed
    acceptance sits inside it), the cost of the relaxed acceptances and the target's log-probability of the text."""
    emitted = [r for r in trace.records if r.emitted]
    bought = [i for i, r in enumerate(emitted) if relaxed(trace, r)]
    costs = [
        math.log(emitted[i].p_argmax) - math.log(emitted[i].p)
        for i in bought
        if emitted[i].p_argmax is not None and emitted[i].p
    ]
    loop = repetition_loop(trace.token_ids)
    logps = [math.log(r.p) for r in emitted if r.p]
    return {
        "capped": int(trace.finish == "length"),
        "loop": int(loop is not None),
        "loop_relaxed": None if loop is None else int(any(loop[0] <= i < loop[0] + loop[2] for i in bought)),
        "relaxed_cost_mean": sum(costs) / len(costs) if costs else None,
        "relaxed_cost_sum": sum(costs),
        "relaxed_emitted": len(costs),
        "mean_logp": sum(logps) / len(logps) if logps else None,
    }


def relaxed_tokens(trace: Trace) -> list[list]:
    """Each relaxed acceptance of the output, where it sits and what it cost: [index among the emitted tokens,
    character offset in the output text, the token's text, its reason, cost in nats (None where p is missing)].

    The offsets add up the records' own pieces of text (one per emitted token, decode's incremental pieces), so
    text[offset:offset + len(piece)] is the token; a sweep keeps these to class relaxations by token kind later.
    """
    out, offset = [], 0
    for i, rec in enumerate(r for r in trace.records if r.emitted):
        if relaxed(trace, rec):
            cost = math.log(rec.p_argmax) - math.log(rec.p) if rec.p_argmax is not None and rec.p else None
            out.append([i, offset, rec.text, rec.reason, cost])
        offset += len(rec.text)
    return out


def emitted_reasons(trace: Trace) -> str:
    """The reason of every emitted token, space-joined, aligned with `trace.token_ids`."""
    return " ".join(r.reason for r in trace.records if r.emitted)


def round_anatomy(reasons: str) -> dict[str, int]:
    """How an output's verification rounds went, counted from its emitted reasons (`emitted_reasons`; "exact" an
    accepted draft equal to the target's top-1, "correction" the target's token at a rejection, "bonus" its token
    after all drafts were accepted, any other an accepted disagreement: a relaxed acceptance or a tie). ANATOMY:
    verified draft positions, disagreements among them, accepted disagreements, the drafts accepted after each
    accepted disagreement in its round (summed), and the verified positions right after one (how many, how many
    disagreed again). A round the output's end cut short counts as far as it was emitted; a target-only run
    ("target" reasons) counts nothing."""
    out = dict.fromkeys(ANATOMY, 0)
    rounds, current = [], []
    for reason in str(reasons).split():
        if reason == "target":
            continue
        current.append(reason)
        if reason in ROUND_ENDS:
            rounds.append(current)
            current = []
    for reasons_ in [*rounds, current]:
        verified = [r for r in reasons_ if r != "bonus"]  # a bonus token follows the last draft: nothing verified
        out["verified"] += len(verified)
        out["disagreed"] += sum(r != "exact" for r in verified)
        for j, r in enumerate(verified):
            if r in ("exact", "correction"):
                continue
            out["relaxed"] += 1
            out["followed"] += sum(1 for later in verified[j + 1 :] if later != "correction")
            if j + 1 < len(verified):
                out["after"] += 1
                out["after_disagreed"] += verified[j + 1] != "exact"
    return out


def compute(trace: Trace) -> dict:
    """All scalar metrics of one trace (plain Python values), speed and quality."""
    rs = round_stats(trace)
    T = len(rs)
    N = int(rs["e"].sum())
    sum_k, sum_a = int(rs["k"].sum()), int(rs["a"].sum())
    gamma = int(trace.config.get("gamma", 0)) if trace.config.get("method") not in TARGET_ONLY_METHODS else 0
    wall = sum(r.t_total for r in trace.rounds)
    overhead = sum(r.t_paths + r.t_criteria for r in trace.rounds)
    drafting, verifying = sum(r.t_draft for r in trace.rounds), sum(r.t_target for r in trace.rounds)
    tau = N / T if T else 0.0
    return {
        "tau": tau,
        "tau_minus_1": tau - 1 if T else 0.0,
        "acceptance_rate": sum_a / sum_k if sum_k else None,
        "per_position": [float((rs["a"] >= i).sum() / T) if T else 0.0 for i in range(1, gamma + 1)],
        "histogram": [int((rs["a"] == j).sum()) for j in range(gamma + 1)],
        "relaxed_share": int(rs["relaxed"].sum()) / sum_a if sum_a else 0.0,
        "ties": int(rs["ties"].sum()),
        "ties_share": int(rs["ties"].sum()) / sum_a if sum_a else 0.0,
        "n_tokens": N,
        "target_forwards": T,
        "draft_forwards": sum(r.draft_forwards for r in trace.rounds),
        "head_products": sum(r.head_products for r in trace.rounds),
        "accepted_drafts": sum_a,
        "drafted": sum_k,
        "wall_s": wall,
        "tokens_per_s": N / wall if wall > 0 else 0.0,
        "overhead_share": overhead / wall if wall > 0 else 0.0,
        "draft_share": drafting / wall if wall > 0 else 0.0,
        "target_share": verifying / wall if wall > 0 else 0.0,
    } | quality(trace)


def divergence(ids: Sequence, baseline: Sequence) -> tuple[int | None, float]:
    """First position where two outputs differ (None if they never do; a shorter output that is a prefix of
    the other differs at its end) and the share of equal tokens up to the shorter length (1.0 if either is
    empty)."""
    n = min(len(ids), len(baseline))
    first = next((i for i in range(n) if ids[i] != baseline[i]), None)
    if first is None and len(ids) != len(baseline):
        first = n
    return first, (sum(x == y for x, y in zip(ids, baseline)) / n if n else 1.0)


def pooled_tau(n_tokens, target_forwards) -> float:
    """tau pooled over runs: sum N / sum T (each run weighted by its forwards, not a mean of ratios)."""
    forwards = sum(target_forwards)
    return sum(n_tokens) / forwards if forwards else float("nan")


def compare(trace: Trace, baseline: Trace, measured: dict | None = None, baseline_measured: dict | None = None) -> dict:
    """Speedup, lossiness and length ratio of `trace` against `baseline` (same prompt), from the metrics of each
    already computed (`compute`; computed here only where not given)."""
    first, equal = divergence(trace.token_ids, baseline.token_ids)
    mine = (measured or compute(trace))["tokens_per_s"]
    theirs = (baseline_measured or compute(baseline))["tokens_per_s"]
    n, n_base = len(trace.token_ids), len(baseline.token_ids)
    return {
        "speedup": mine / theirs if theirs > 0 else None,
        "first_divergence": first,
        "equal_share": equal,
        "length_ratio": n / n_base if n_base else None,
    }


def token_table(trace: Trace) -> pd.DataFrame:
    """One row per token record, lists flattened to strings: the CSV download and the app's table."""
    df = pd.DataFrame([vars(r) for r in trace.records])
    if df.empty:
        return df
    return df.drop(columns=["top"]).assign(
        **{
            c: df[c].map(lambda v: None if v is None else str(v))
            for c in ("path_tokens", "votes", "js_paths", "verdicts", "path_p", "path_rank", "rule_stats")
        }
    )


def summary_table(
    traces: dict[str, Trace], baseline: str | None = None, measured: dict[str, dict] | None = None
) -> pd.DataFrame:
    """Metrics of several traces side by side, rows = metric, one column per trace name; `measured` holds each
    trace's metrics where they are already computed (by name), the others are computed here once."""
    measured = {name: (measured or {}).get(name) or compute(trace) for name, trace in traces.items()}
    cols = {}
    for name, trace in traces.items():
        m = dict(measured[name])
        if baseline and baseline in traces and name != baseline:
            m.update(compare(trace, traces[baseline], measured[name], measured[baseline]))
        cols[name] = m
    return pd.DataFrame(cols)


def definitions_markdown() -> str:
    """DEFINITIONS as a Markdown table (metric | definition): the text between the `definitions` markers in
    docs/*.md (`python docs/definitions.py` rewrites it; tests/test_docs.py fails when it is stale)."""
    rows = [f"| `{name}` | {text.replace('|', '&#124;')} |" for name, text in DEFINITIONS.items()]
    return "\n".join(["| metric | definition |", "|---|---|", *rows])
