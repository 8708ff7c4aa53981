"""The narration of one verification round, stage by stage, as Markdown for the step-through view."""

from __future__ import annotations

from dropmatch.config import RELAXED_METHODS
from dropmatch.criteria import RULES
from dropmatch.trace import TokenRecord, Trace
from viz.rules import statistic
from viz.steps import STAGES
from viz.theme import REASON_LABELS, RELAXED, code


def _tok(rec: TokenRecord) -> str:
    return code(rec.text, 20)


def _draft_line(trace: Trace, drafts: list[TokenRecord]) -> str:
    toks = " ".join(f"{_tok(r)} (q = {r.q:.2f})" if r.q is not None else _tok(r) for r in drafts)
    return f"The draft model proposed {len(drafts)} tokens: {toks}."


def _paths_line(trace: Trace, drafts: list[TokenRecord]) -> str:
    cfg = trace.config
    if cfg.get("method") == "relative":
        return (
            f"The target verified all drafts in **one forward**. The rule {cfg.get('criterion')} reads the "
            "unmasked target's and the draft's distributions at each position (no dropout paths decide; "
            "where paths were recorded, they are there only to show what DropMatch would have done)."
        )
    if not any(r.path_tokens for r in drafts):
        return (
            "The target verified all drafts in **one forward**. This run computed no dropout paths "
            "(lossless, or lazy evidence), so only the exact test decides."
        )
    agree = [sum(t == r.token_id for t in r.path_tokens) for r in drafts if r.path_tokens]
    return (
        f"The target verified all drafts in **one forward**. At each position, {cfg.get('K')} dropout masks "
        f"(p_drop = {cfg.get('p_drop')}) on the final hidden state give {cfg.get('K')} LM-head paths, with no "
        f"extra forward pass. Paths agreeing with the draft per position: {', '.join(map(str, agree))}."
    )


def _criteria_line(trace: Trace, drafts: list[TokenRecord]) -> str:
    """Every verdict per position; in a run of a rule, the registry's explanation of what the rule read there."""
    cfg = trace.config
    name, relaxed = cfg.get("criterion"), cfg.get("method") in RELAXED_METHODS
    parts = []
    for r in drafts:
        rules = ", ".join(f"{k} {'✓' if v else '✗'}" for k, v in (r.verdicts or {}).items())
        line = f"{r.pos}: lossless {'✓' if r.lossless else '✗'}" + (f"; {rules}" if rules else "")
        if relaxed and name in RULES and r.verdicts:  # a position the rule looked at
            line += f" ({statistic(r, name, cfg.get('knob'), cfg.get('K'))})"
        parts.append(line)
    rule = "lossless OR criterion" if cfg.get("mode") == "or" else "criterion alone"
    named = f"criterion `{name}`" + (f", {RULES[name].label}" if relaxed and name in RULES else "")
    return f"Each position is judged ({rule}, {named}):  \n" + "  \n".join(parts)


def _prefix_line(drafts: list[TokenRecord]) -> str:
    a = sum(bool(r.accepted) for r in drafts)
    relaxed = sum(r.reason in RELAXED for r in drafts)
    first = next((r for r in drafts if r.reason == "rejected"), None)
    text = f"The accepted prefix is the longest run of accepts: **{a} of {len(drafts)}** drafts"
    text += f", {relaxed} of them relaxed acceptances lossless would have rejected." if relaxed else "."
    if first is not None:
        text += f" The first rejection, {_tok(first)} at position {first.pos}, discards everything after it."
    return text


def _emit_line(trace: Trace, drafts: list[TokenRecord], extra: TokenRecord | None) -> str:
    emitted = [r for r in drafts if r.emitted] + ([extra] if extra is not None and extra.emitted else [])
    if extra is None:
        return "Nothing more was emitted this round."
    kind = REASON_LABELS.get(extra.reason, extra.reason)
    return (
        f"The unmasked target head adds the {kind} token {_tok(extra)}: this round emitted "
        f"**{len(emitted)}** tokens for one target forward."
    )


def round_story(trace: Trace | None, t: int, stage: int) -> str:
    """Markdown for stages 0..stage of round t; the current stage in bold."""
    if trace is None or t >= len(trace.rounds):
        return "Run a prompt or load a trace, then step through its verification rounds."
    recs = trace.round_records(t)
    drafts = [r for r in recs if r.kind == "draft"]
    extra = next((r for r in recs if r.kind != "draft"), None)
    lines = [
        _draft_line(trace, drafts) if drafts else "Target-only decoding: no draft this round.",
        _paths_line(trace, drafts),
        _criteria_line(trace, drafts),
        _prefix_line(drafts),
        _emit_line(trace, drafts, extra),
    ]
    out = [f"**Round {t + 1} of {len(trace.rounds)}**"]
    for i in range(stage + 1):
        name = f"**{STAGES[i]}**" if i == stage else STAGES[i]
        out.append(f"{i + 1}. {name}: {lines[i]}")  # the number first, so Markdown keeps the list numbered
    return "\n\n".join(out)
