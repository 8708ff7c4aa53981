"""The coloured output text of a trace: one span per emitted token, the map back to records, and token captions."""

from __future__ import annotations

from dropmatch.metrics import divergence, relaxed
from dropmatch.token_kinds import LABELS as KIND_LABELS
from dropmatch.token_kinds import code_kinds, text_kind
from dropmatch.trace import TokenRecord, Trace
from viz.rules import run_rule, setting, statistic
from viz.theme import DIVERGENCE_LABEL, DIVERGENCE_MARK, REASON_LABELS, RELAXED, SEMANTIC, code


def emitted_indices(trace: Trace) -> list[int]:
    """Indices into trace.records of the emitted tokens, in output order."""
    return [i for i, r in enumerate(trace.records) if r.emitted]


def spans(trace: Trace, divergence: int | None = None) -> tuple[list[tuple[str, str]], list[int]]:
    """(text, label) spans for a HighlightedText, and for each span the index of its record.

    A marker span is put before the token at output position `divergence`; it points at that token.
    """
    out, index = [], []
    for n, i in enumerate(emitted_indices(trace)):
        rec = trace.records[i]
        if n == divergence:
            out.append((DIVERGENCE_MARK, DIVERGENCE_LABEL))
            index.append(i)
        out.append((rec.text, REASON_LABELS.get(rec.reason, rec.reason)))
        index.append(i)
    return out, index


def span_hovers(trace: Trace, divergence: int | None = None) -> list[str]:
    """One line per span of `spans` (same order): why the token got its colour, with q, p and its target rank."""
    out = []
    for n, i in enumerate(emitted_indices(trace)):
        rec = trace.records[i]
        if n == divergence:
            out.append("first divergence: the outputs part at the next token")
        numbers = [
            f"q {rec.q:.3f}" if rec.q is not None else "",
            f"p {rec.p:.3f}" if rec.p is not None else "",
            f"target rank {rec.target_rank}" if rec.target_rank is not None else "",
        ]
        out.append(" · ".join([REASON_LABELS.get(rec.reason, rec.reason), *filter(None, numbers)]))
    return out


def first_divergence(trace: Trace, baseline: Trace) -> int | None:
    """First output position where `trace` departs from `baseline`, from their token ids (dropmatch.metrics's
    `divergence`, the `first_divergence` of `compare`).

    While either run is still going, a longer output is not a divergence yet: only a differing token counts.
    """
    first = divergence(trace.token_ids, baseline.token_ids)[0]
    if first is None:
        return None
    running = trace.finish is None or baseline.finish is None
    if running and first >= min(len(trace.token_ids), len(baseline.token_ids)):
        return None
    return first


def replaced_draft(trace: Trace, rec: TokenRecord) -> TokenRecord | None:
    """For a correction token, the rejected draft it replaced (same round, same position)."""
    if rec.kind != "correction":
        return None
    return next((r for r in trace.records if r.round == rec.round and r.kind == "draft" and r.pos == rec.pos), None)


def evidence_record(trace: Trace, rec: TokenRecord) -> TokenRecord:
    """The record whose path evidence explains `rec`: itself, or for a correction the draft it replaced."""
    return replaced_draft(trace, rec) or rec


def token_kind(trace: Trace, rec: TokenRecord) -> str:
    """What kind of token a relaxed acceptance let through, read as Python (the prompt and the output so far through
    Python's tokenizer) and, where that differs, as prose: "identifiers (as Python; as prose: words)"."""
    emitted = [r for r in trace.records if r.emitted]
    offset = sum(len(r.text) for r in emitted[: next((i for i, r in enumerate(emitted) if r is rec), len(emitted))])
    source = trace.prompt + "".join(r.text for r in emitted)
    as_code = code_kinds(source, [(len(trace.prompt) + offset, rec.text)])[0]
    as_prose = text_kind(rec.text, code=False)
    label = KIND_LABELS[as_code]
    return label if KIND_LABELS[as_prose] == label else f"{label} (as Python; as prose: {KIND_LABELS[as_prose]})"


def rule_line(trace: Trace, rec: TokenRecord) -> str | None:
    """For a relative's run, the rule that decided, its knob and how it joined the lossless test, and what it read at
    this token's draft (a correction's: the draft it replaced); None for any other run."""
    if trace.config.get("method") != "relative":
        return None
    entry, knob = run_rule(trace)
    words = setting(entry, knob)
    line = (
        f"Rule of this run: **{entry.title}**{', ' + words if words else ''} ({entry.how(trace.config.get('mode'))})."
    )
    ev = evidence_record(trace, rec)
    if ev.kind == "draft" and ev.gated:
        line += " At this draft the span gate kept it out: the lossless test decided alone."
    elif ev.kind == "draft":
        line += f" At this draft: {statistic(ev, entry.name, knob, trace.config.get('K'))}."
    return line


def caption(trace: Trace, rec: TokenRecord) -> str:
    """A few lines of Markdown that say what happened to this token and why (for a relative's run, which rule ran)."""
    head = f"{code(rec.text)} · round {rec.round + 1}, position {rec.pos} · {REASON_LABELS.get(rec.reason, rec.reason)}"
    lines = [head, *filter(None, [rule_line(trace, rec)])]
    if rec.kind == "draft":
        verdict = "accepted" if rec.accepted else "rejected"
        lossless = "accepts" if rec.lossless else "rejects"
        lines.append(f"Draft token {verdict}; the lossless test {lossless} it.")
        if rec.gated:
            lines.append("The span gate kept the rule out here: the lossless test decided alone.")
        if rec.reason in SEMANTIC:
            lines.append(f"A **semantic acceptance**: `{rec.reason}` accepted what lossless would have rejected.")
        elif rec.reason in RELAXED:
            lines.append(f"A **relaxed acceptance** by a relative (`{rec.reason}`): lossless would have rejected it.")
        if rec.emitted and relaxed(trace, rec):
            lines.append(f"Token kind: {token_kind(trace, rec)}.")
    elif rec.kind == "correction":
        old = replaced_draft(trace, rec)
        if old is not None:
            lines.append(
                f"Replaces the rejected draft {code(old.text)} "
                f"(q = {old.q:.3f}, p = {old.p:.3f}, target rank {old.target_rank})."
            )
        lines.append("Emitted by the unmasked target head at the first rejected position.")
    elif rec.kind == "bonus":
        lines.append("Every draft of the round was accepted, so the unmasked target head adds one token for free.")
    stats = [f"p(target) = {rec.p:.3f}"] if rec.p is not None else []
    if rec.q is not None:
        stats.insert(0, f"q(draft) = {rec.q:.3f}")
    if rec.target_rank is not None:
        stats.append(f"target rank {rec.target_rank}")
    if stats:
        lines.append(" · ".join(stats))
    return "  \n".join(lines)
