"""The registry of acceptance rules, in the app's order, and what every rule shares: the reasons, the prefix rule, the
residual draw.

Each rule is one object (`dropmatch.rules.base.Rule`) in the module of its family: DropMatch's criteria on the K
dropout paths (`rules.paths`), the rules that read the target only (`rules.target_only`), those that compare draft
and target (`rules.draft_and_target`), and those that verify against a distribution of their own
(`rules.own_distribution`). A new rule is one entry in its family's module, listed there in `RULES`; config, decode,
records, the figures, the app, the command line and the lab read this registry and keep no table beside it.
Nothing here loads a model or touches the network.
"""

from __future__ import annotations

import torch

from dropmatch.config import TRUNCATION_KNOBS
from dropmatch.rules import draft_and_target, own_distribution, paths, target_only
from dropmatch.rules.base import EXACT, FAMILIES, LOSSLESS_FAMILY, PATHS, TIE, Reason, Rule, Verdict

__all__ = ["FAMILIES", "LOSSLESS", "REASONS", "RULES", "Reason", "Rule", "Verdict"]

# Every rule by name, in the menu's order: the families in this order, each module's rules in its own order.
FAMILY_MODULES = (paths, target_only, draft_and_target, own_distribution)
RULES: dict[str, Rule] = {rule.name: rule for module in FAMILY_MODULES for rule in module.RULES}
DEFAULT_CRITERION = paths.RULES[0].name  # the paper's Algorithm 1
DROPMATCH_CRITERIA = tuple(name for name, rule in RULES.items() if rule.family == PATHS)
RELATIVE_CRITERIA = tuple(name for name, rule in RULES.items() if rule.family != PATHS)
KNOBS = {name: rule.knob for name, rule in RULES.items() if rule.knob is not None}  # each rule's knob, by rule
CRITERION_KNOBS = KNOBS | TRUNCATION_KNOBS  # every knob a run's criterion can take: the rules', the truncations'

# The baseline every rule is shown beside: its verdict is the lossless test's, as each draft record holds it.
LOSSLESS = Rule(
    name="lossless",
    label="lossless (exact match)",
    title="lossless",
    family=LOSSLESS_FAMILY,
    color="#64748b",
    reads=(),
    decide=None,
    explain=lambda n, _knob=None: f"target rank of d: {n['target_rank']} (exact match needs 1)",
    shows=("target_rank",),
)

# Why a drafted token is accepted, in order of precedence (when several accept, the first names it): the lossless test;
# a tie (at T = 0 the draft's target logit equals the argmax's, so exact match rejects it only by index order, and a
# rule accepts it: `is_tie`); then each rule's reasons, in the registry's order. A drafted position no rule accepts is
# `rejected`, one after it `skipped`.
REASONS: dict[str, Reason] = {r.name: r for r in (EXACT, TIE, *(r for rule in RULES.values() for r in rule.reasons))}
ACCEPT_REASONS = tuple(REASONS)
SEMANTIC_REASONS = tuple(r.name for r in REASONS.values() if r.group == paths.SEMANTIC)
RELATIVE_REASONS = tuple(r.name for r in REASONS.values() if r.group not in ("", paths.SEMANTIC))
DRAFT_REASONS = (*ACCEPT_REASONS, "rejected", "skipped")


def rule_reasons(criterion: str | None) -> tuple[str, ...]:
    """The reasons a run of this rule can give an accepted draft, beyond exact match: a tie and the rule's own."""
    return ("tie", *(r.name for r in RULES[criterion].reasons)) if criterion in RULES else ()


def accept_reason(lossless: bool, components: dict[str, bool]) -> str | None:
    """Why a position is accepted: the first of ACCEPT_REASONS that holds, or None if none does."""
    held = {"exact": lossless, **components}
    return next((r for r in ACCEPT_REASONS if held.get(r)), None)


def is_tie(greedy: bool, accepted: bool | None, lossless: bool | None, rank: int | None, token, argmax) -> bool:
    """An accepted draft the lossless test rejected only by index order: greedy, d's target rank 1 (no logit above
    its own) but d not the argmax's index. Read from a record's fields, so traces recorded before the `tie`
    reason existed count their ties too."""
    return bool(greedy and accepted and lossless is False and rank == 1 and token != argmax)


def accepted_length(accepts: torch.Tensor | list[bool]) -> int:
    """The one prefix rule: how many leading positions are accepted (Medusa's cumprod(mask).sum())."""
    return int(torch.cumprod(torch.as_tensor(accepts, dtype=torch.long), 0).sum())


def residual_sample(p: torch.Tensor, q: torch.Tensor, generator: torch.Generator) -> int:
    """Replacement after a rejection: a draw from norm(max(p - q, 0)); from p itself if that is all zero. Drawn
    with `generator` on its device (the CPU's: a seed replays the same run on any device)."""
    p, q = p.to(generator.device), q.to(generator.device)
    residual = (p - q).clamp_min(0.0)
    total = residual.sum()
    dist = residual / total if total > 0 else p
    return int(torch.multinomial(dist, 1, generator=generator))
