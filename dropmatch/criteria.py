"""Acceptance rules: the registry (DropMatch's criteria and its relatives), the lossless tests, the prefix rule.

Every rule in `RULES` has one signature, `rule(evidence, knob) -> Verdict`, and returns its decision per
position together with the component verdicts that explain it (docs/algorithm.md, "Criteria"). DropMatch's
criteria read the K dropout paths (`Evidence.paths`); the relatives (`dropmatch.relatives`) read statistics of
the unmasked target and the draft, and take one knob. Each entry also says what it reads (what a lazy run
records), and how the app shows it: its menu label, and one line that explains its decision from the numbers
it read; `REASONS` gives the legend's words for every acceptance reason. A new rule is one entry here (a
relative: one in `dropmatch.relatives.RELATIVES`). Nothing here loads a model or touches the network.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from dropmatch import cascades
from dropmatch.config import ACCEPT_REASONS, CRITERION_NAMES, KNOBS, Knob
from dropmatch.evidence import Evidence, shown
from dropmatch.heads import PATH_STATISTICS, PathStats
from dropmatch.relatives import RELATIVES


@dataclass(frozen=True, kw_only=True)
class Verdict:
    accept: torch.Tensor  # [P] bool
    components: dict[str, torch.Tensor]  # reason name (one of ACCEPT_REASONS) -> [P] bool


def naive(stats: PathStats) -> Verdict:
    """Accept d when d is the top-1 token of ANY path (paper Eq. 4)."""
    hit = (stats.tokens == stats.draft[:, None]).any(-1)
    return Verdict(accept=hit, components={"naive": hit})


def js(stats: PathStats) -> Verdict:
    """Accept d when JS(q || centroid) <= max_i JS(p_i || centroid): the draft lies inside the paths' spread."""
    hit = stats.js_draft <= stats.js_paths.max(-1).values
    return Verdict(accept=hit, components={"js": hit})


def majority(stats: PathStats) -> Verdict:
    """Accept d when it is the plurality top-1 of the K paths (a tie is no majority)."""
    hit = stats.majority == stats.draft
    return Verdict(accept=hit, components={"majority": hit})


def majority_strict(stats: PathStats) -> Verdict:
    """Accept d when more than K/2 paths vote for it."""
    counts = (stats.tokens == stats.draft[:, None]).sum(-1)  # [P]
    hit = counts * 2 > stats.K
    return Verdict(accept=hit, components={"majority": hit})


def js_majority(stats: PathStats) -> Verdict:
    """Paper Algorithm 1: accept by JS, else by majority."""
    a, b = js(stats), majority(stats)
    return Verdict(accept=a.accept | b.accept, components={**a.components, **b.components})


Numbers = Mapping[str, float]  # a position's numbers, as an explanation reads them (Rule.explain)


TARGET_ONLY, COMPARES, PATHS = "reads the target only", "compares draft and target", "reads the dropout paths"
FAMILIES = (TARGET_ONLY, COMPARES, PATHS)  # the lossy-verification literature's grouping of relaxed rules
LOSSLESS_FAMILY = "lossless"
# Each relative's family: what its relaxation reads besides the lossless verdicts (FLy: the target's top-3
# entropy; TokenV3: p(d) against max p; OPT: max q against max p; EARS: p(d) / q(d) widened by 1 - max p).
RELATIVE_FAMILIES = {
    "fuzzy-js": COMPARES,
    "fuzzy-kl": COMPARES,
    "fuzzy-tv": COMPARES,
    "typical": TARGET_ONLY,
    "top-k": TARGET_ONLY,
    "mars": TARGET_ONLY,
    "fly": TARGET_ONLY,
    "ears": COMPARES,
    "cascade-token": TARGET_ONLY,
    "cascade-opt": COMPARES,
}


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One registry entry: how it decides, what it reads, its knob, and how the app shows it.

    decide: `rule(evidence, knob)` returns its Verdict, a relative's knob defaulting to its source's (KNOBS); None
        for the lossless baseline, whose verdict only the records hold (at T > 0 it was a draw).
    reads: the statistics it reads, of the evidence (evidence.STATISTICS) or of the paths (heads.PATH_STATISTICS):
        what a lazy run records at a position it checked (an evidence run records them all).
    label: the criterion menu's words; title: what a run with it is called on screen.
    explain(numbers, knob): one line on what it read at a position, from the numbers named in `shows`: the
        statistics, and of a record's paths `js_draft`, `threshold` (the largest path JS), `votes_d` (the paths
        voting for d), `votes_top` (the most votes for one token) and `K`, and the record's `target_rank`.
    family: how the lossy-verification literature groups it (FAMILIES): reads the target only, compares draft
        and target, or reads the dropout paths. Required, by keyword, of every entry.
    pi: for a rule that verifies against a distribution of its own (the speculative cascades), `pi(evidence,
        knob)` gives it at T > 0, [P, V]: its decision then replaces the lossless test whatever the mode (at T > 0
        u q(d) <= pi(d)), and the correction after its first rejection is drawn from norm(max(pi - q, 0)). None
        for every other rule, which the lossless test and its residual back.
    """

    name: str
    decide: Callable[[Evidence, float], Verdict] | None
    reads: tuple[str, ...]
    label: str
    title: str
    explain: Callable[[Numbers, float | None], str]
    shows: tuple[str, ...]
    knob: Knob | None = None
    pi: Callable[[Evidence, float], torch.Tensor] | None = None
    family: str

    def __post_init__(self) -> None:
        if self.family not in (*FAMILIES, LOSSLESS_FAMILY):
            raise ValueError(f"{self.name}: family must be one of {', '.join(FAMILIES)}; got {self.family!r}")

    @property
    def needs_paths(self) -> bool:
        return any(name in PATH_STATISTICS for name in self.reads)

    def __call__(self, evidence: Evidence, knob: float | None = None) -> Verdict:
        if self.decide is None:
            raise ValueError(f"{self.name} is decided by the lossless test, not by a rule on the evidence")
        if self.needs_paths and evidence.paths is None:
            raise ValueError(f"{self.name} needs the K dropout paths at these positions")
        return self.decide(evidence, self.knob.default if knob is None and self.knob else knob)


def _on_paths(criterion: Callable[[PathStats], Verdict]) -> Callable[[Evidence, float], Verdict]:
    return lambda ev, _knob: criterion(ev.paths)


def _relative(test, reason: str) -> Callable[[Evidence, float], Verdict]:
    def decide(ev: Evidence, knob: float) -> Verdict:
        hit = test(ev, knob)
        return Verdict(accept=hit, components={reason: hit})

    return decide


def _verifying(test) -> Callable[[Evidence, float], Verdict]:
    """A cascade's decision, named as OR mode names it: `exact` where the lossless test accepts too, else its own
    reason, so the mode (which does not change its decision) does not change its reasons either."""

    def decide(ev: Evidence, knob: float) -> Verdict:
        hit, native = test(ev, knob), ev["native"].bool()
        return Verdict(accept=hit, components={"exact": hit & native, cascades.REASON: hit & ~native})

    return decide


def _js_line(s: Numbers, _knob=None) -> str:
    return f"JS(q‖c) {shown(s['js_draft'])} vs max path JS {shown(s['threshold'])}"


def _votes_line(s: Numbers, _knob=None) -> str:
    return f"paths voting for d: {s['votes_d']} of {s['K']} (most votes: {s['votes_top']})"


def _dropmatch(name: str, criterion, reads: tuple[str, ...], label: str, explain, shows: tuple[str, ...]) -> Rule:
    return Rule(
        name=name,
        decide=_on_paths(criterion),
        reads=reads,
        label=f"DropMatch: {label}",
        title="DropMatch",
        explain=explain,
        shows=shows,
        family=PATHS,
    )


_JS, _VOTES = ("js_draft", "threshold"), ("votes_d", "votes_top")
_DROPMATCH = (
    _dropmatch(
        "js+majority",
        js_majority,
        ("js_paths", "js_draft", "majority"),
        "js+majority (the paper's Algorithm 1)",
        lambda s, _knob=None: f"{_js_line(s)}; votes for d {s['votes_d']} of {s['K']}",
        (*_JS, "votes_d"),
    ),
    _dropmatch("js", js, ("js_paths", "js_draft"), "js", _js_line, _JS),
    _dropmatch("majority", majority, ("majority",), "majority", _votes_line, _VOTES),
    _dropmatch("majority-strict", majority_strict, ("votes",), "majority, strict", _votes_line, _VOTES),
    _dropmatch("naive", naive, ("tokens",), "naive", _votes_line, _VOTES),
)
_RELATIVES = tuple(
    Rule(
        name=name,
        decide=_relative(rel.test, rel.reason),
        reads=rel.reads,
        label=f"Relative: {rel.title}",
        title=rel.title,
        explain=rel.explain,
        shows=rel.reads,
        knob=KNOBS[name],
        family=RELATIVE_FAMILIES[name],
    )
    for name, rel in RELATIVES.items()
)
_CASCADES = tuple(
    Rule(
        name=name,
        decide=_verifying(cascade.test),
        reads=cascade.reads,
        label=f"Relative: {cascade.title}",
        title=cascade.title,
        explain=cascade.explain,
        shows=cascade.reads,
        knob=KNOBS[name],
        pi=cascade.pi,
        family=RELATIVE_FAMILIES[name],
    )
    for name, cascade in cascades.CASCADES.items()
)
_ENTRIES = {rule.name: rule for rule in (*_DROPMATCH, *_RELATIVES, *_CASCADES)}
# The registry, in the menu's order (config.CRITERION_NAMES: DropMatch's criteria, then its relatives).
RULES: dict[str, Rule] = {name: _ENTRIES[name] for name in CRITERION_NAMES}
# The baseline every rule is shown beside: its verdict is the lossless test's, as each draft record holds it.
LOSSLESS = Rule(
    name="lossless",
    decide=None,
    reads=(),
    label="lossless (exact match)",
    title="lossless",
    explain=lambda s, _knob=None: f"target rank of d: {s['target_rank']} (exact match needs 1)",
    shows=("target_rank",),
    family=LOSSLESS_FAMILY,
)


@dataclass(frozen=True)
class Reason:
    """How the legend shows why a draft was accepted: its word, what it means, and its family ("semantic" for
    DropMatch's criteria, "relative" for the relatives; none for exact match)."""

    word: str
    meaning: str
    family: str = ""

    @property
    def label(self) -> str:
        return f"{self.family}: {self.word}" if self.family else self.word


_REASONS = {
    "exact": Reason("exact match", "the draft token is what the lossless test accepts (target top-1 at T = 0)"),
    "tie": Reason(
        "tie",
        "at T = 0 d's target logit equals the argmax's: exact match rejects it only by index order, a rule accepts it",
    ),
    "js": Reason("JS", "lossless rejects it, but JS(q || centroid) <= max_i JS(p_i || centroid)", "semantic"),
    "majority": Reason("majority", "lossless rejects it, but it is the plurality top-1 of the K paths", "semantic"),
    "naive": Reason("naive", "lossless rejects it, but it is the top-1 of at least one dropout path", "semantic"),
    **{rel.reason: Reason(rel.reason_word, rel.reason_meaning, "relative") for rel in RELATIVES.values()},
    cascades.REASON: Reason(cascades.REASON_WORD, cascades.REASON_MEANING, "relative"),
}
REASONS = {name: _REASONS[name] for name in ACCEPT_REASONS}  # every acceptance reason, in order of precedence


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
