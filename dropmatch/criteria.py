"""Acceptance rules: the registry (DropMatch's criteria and its relatives), the lossless tests, the prefix rule.

Every rule in `RULES` has one signature, `rule(evidence, knob) -> Verdict`, and returns its decision per
position together with the component verdicts that explain it (docs/algorithm.md, "Criteria"). DropMatch's
criteria read the K dropout paths (`Evidence.paths`); the relatives (`dropmatch.relatives`) read statistics of
the unmasked target and the draft, and take one knob. Nothing here loads a model or touches the network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from dropmatch.config import ACCEPT_REASONS, DROPMATCH_CRITERIA, KNOBS, Knob
from dropmatch.evidence import Evidence
from dropmatch.heads import PathStats
from dropmatch.relatives import RELATIVES


@dataclass(frozen=True)
class Verdict:
    accept: torch.Tensor  # [P] bool
    components: dict[str, torch.Tensor]  # reason name (one of ACCEPT_REASONS) -> [P] bool


def naive(stats: PathStats) -> Verdict:
    """Accept d when d is the top-1 token of ANY path (paper Eq. 4)."""
    hit = (stats.tokens == stats.draft[:, None]).any(-1)
    return Verdict(hit, {"naive": hit})


def js(stats: PathStats) -> Verdict:
    """Accept d when JS(q || centroid) <= max_i JS(p_i || centroid): the draft lies inside the paths' spread."""
    hit = stats.js_draft <= stats.js_paths.max(-1).values
    return Verdict(hit, {"js": hit})


def majority(stats: PathStats) -> Verdict:
    """Accept d when it is the plurality top-1 of the K paths (a tie is no majority)."""
    hit = stats.majority == stats.draft
    return Verdict(hit, {"majority": hit})


def majority_strict(stats: PathStats) -> Verdict:
    """Accept d when more than K/2 paths vote for it."""
    counts = torch.tensor([v.get(d, 0) for v, d in zip(stats.votes, stats.draft.tolist())])
    hit = counts * 2 > stats.K
    return Verdict(hit, {"majority": hit})


def js_majority(stats: PathStats) -> Verdict:
    """Paper Algorithm 1: accept by JS, else by majority."""
    a, b = js(stats), majority(stats)
    return Verdict(a.accept | b.accept, {**a.components, **b.components})


@dataclass(frozen=True)
class Rule:
    """One registry entry: how it decides, whether it needs the dropout paths, what it reads, its knob.

    `rule(evidence, knob)` returns its Verdict; a relative's knob defaults to its source's value (KNOBS).
    """

    name: str
    decide: Callable[[Evidence, float], Verdict]
    needs_paths: bool
    reads: tuple[str, ...]  # the statistics it reads (DropMatch rules: the paths)
    knob: Knob | None = field(default=None)

    def __call__(self, evidence: Evidence, knob: float | None = None) -> Verdict:
        if self.needs_paths and evidence.paths is None:
            raise ValueError(f"{self.name} needs the K dropout paths at these positions")
        return self.decide(evidence, self.knob.default if knob is None and self.knob else knob)


def _on_paths(criterion: Callable[[PathStats], Verdict]) -> Callable[[Evidence, float], Verdict]:
    return lambda ev, _knob: criterion(ev.paths)


def _relative(test, reason: str) -> Callable[[Evidence, float], Verdict]:
    def decide(ev: Evidence, knob: float) -> Verdict:
        hit = test(ev, knob)
        return Verdict(hit, {reason: hit})

    return decide


_PATH_RULES = (js_majority, js, majority, majority_strict, naive)
RULES: dict[str, Rule] = {
    **{
        name: Rule(name, _on_paths(fn), True, ("paths",))
        for name, fn in zip(DROPMATCH_CRITERIA, _PATH_RULES, strict=True)
    },
    **{
        name: Rule(name, _relative(test, reason), False, reads, KNOBS[name])
        for name, (test, reason, reads) in RELATIVES.items()
    },
}


def accept_reason(lossless: bool, components: dict[str, bool]) -> str | None:
    """Why a position is accepted: the first of ACCEPT_REASONS that holds, or None if none does."""
    held = {"exact": lossless, **components}
    return next((r for r in ACCEPT_REASONS if held.get(r)), None)


def accepted_length(accepts: torch.Tensor) -> int:
    """The one prefix rule: how many leading positions are accepted (Medusa's cumprod(mask).sum())."""
    return int(torch.cumprod(accepts.to(torch.long), 0).sum())


def lossless_greedy(draft: torch.Tensor, target_logits: torch.Tensor) -> torch.Tensor:
    """Greedy exact match: accept d_j iff d_j == argmax z_j.  draft: [P]; target_logits: [P, V] -> [P] bool"""
    return draft == target_logits.argmax(-1)


def lossless_sampling(
    draft: torch.Tensor, p: torch.Tensor, q: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """Leviathan/Chen test: accept d_j with probability min(1, p_j(d_j) / q_j(d_j)).  p, q: [P, V] probs"""
    p_d = p.gather(-1, draft[:, None]).squeeze(-1)
    q_d = q.gather(-1, draft[:, None]).squeeze(-1)
    u = torch.rand(draft.shape[0], generator=generator)
    return u * q_d <= p_d


def residual_sample(p: torch.Tensor, q: torch.Tensor, generator: torch.Generator) -> int:
    """Replacement after a rejection: a draw from norm(max(p - q, 0)); from p itself if that is all zero."""
    residual = (p - q).clamp_min(0.0)
    total = residual.sum()
    dist = residual / total if total > 0 else p
    return int(torch.multinomial(dist, 1, generator=generator))
