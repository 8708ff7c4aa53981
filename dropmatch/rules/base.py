"""What an acceptance rule is: one object that owns its knob, its reasons, its formula, its numbers and its figure.

A `Rule` decides, at a round's drafted positions, whether each draft token is accepted, and says why with numbers:
`decide(s, knob)` reads statistics of the evidence (`dropmatch.evidence.Evidence`, or the plain dict of one-element
tensors the inspector rebuilds from a recorded token) and returns a `Verdict`: the decision, the component verdicts
named by their reasons, and the named numbers it computed (a statistic, its bound, a margin). Everything that shows a
rule reads those numbers: its explain line, its figure's panels (`Panel`, drawn by `viz.panels`), the inspector's
every-rule table and the recoloured maps. Nothing is computed twice.

How a rule joins the lossless test is written once, here (`Rule.join`, `Rule.alone`, `Rule.how`): in OR mode the
lossless test accepts on its own and the rule adds to it; in replace mode the rule alone decides; a rule that
verifies against a distribution of its own (`pi`: the speculative cascades, the static ensemble) is the test itself
in either mode, and its correction comes from that distribution.

The family modules (`paths`, `target_only`, `draft_and_target`, `own_distribution`) hold the rules; the registry
(`dropmatch.criteria.RULES`) lists them in the app's order. Nothing here loads a model.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import torch

from dropmatch.config import Knob
from dropmatch.evidence import shown

Stats = Mapping[str, torch.Tensor]  # an Evidence, or a dict of [P] tensors by statistic name
Numbers = Mapping[str, float]  # one position's numbers as an explanation reads them

# How the lossy-verification literature groups relaxed rules, by what the relaxation reads
PATHS = "reads the dropout paths"
TARGET_ONLY = "reads the target only"
COMPARES = "compares draft and target"
OWN = "verifies against its own distribution"
FAMILIES = (PATHS, TARGET_ONLY, COMPARES, OWN)
LOSSLESS_FAMILY = "lossless"


@dataclass(frozen=True)
class Reason:
    """Why an accepted draft was accepted, as the legend, the coloured text and the maps show it: the record's reason
    `name`, its word, what it means, its colour, the letter written after the token (colour is never the only cue),
    and its group ("semantic" for DropMatch's, "relative" for the other rules', none for exact match and a tie)."""

    name: str
    word: str
    meaning: str
    color: str
    mark: str = ""
    group: str = ""

    @property
    def label(self) -> str:
        return f"{self.group}: {self.word}" if self.group else self.word


EXACT = Reason(
    "exact", "exact match", "the draft token is what the lossless test accepts (target top-1 at T = 0)", "#86efac"
)
TIE = Reason(
    "tie",
    "tie",
    "d's target logit equals the argmax's: exact match rejects it only by index order, a rule accepts it",
    "#15803d",
    "=",
)


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """A rule's decision at P positions: accept [P] bool; the component verdicts by reason name ([P] bool each: why
    an acceptance was made); the named numbers it computed ([P] tensors, floats or bools), which its explain line and
    figure read."""

    accept: torch.Tensor
    components: dict[str, torch.Tensor]
    numbers: dict[str, torch.Tensor] = field(default_factory=dict)


def verdict(hit: torch.Tensor, reason: str, **numbers: torch.Tensor) -> Verdict:
    """The verdict of a rule with one reason: its decision is its one component."""
    return Verdict(accept=hit, components={reason: hit}, numbers=numbers)


def own_verdict(hit: torch.Tensor, native: torch.Tensor, reason: str, **numbers: torch.Tensor) -> Verdict:
    """The verdict of a rule that verifies against its own distribution, named as OR mode names it: `exact` where the
    lossless test accepts too, else its own reason, so the mode (which does not change its decision) does not change
    its reasons either."""
    native = native.bool()
    return Verdict(accept=hit, components={"exact": hit & native, reason: hit & ~native}, numbers=numbers)


def greedy(s: Stats) -> torch.Tensor:
    """Where the round drew no uniform: T = 0.  # [P] bool"""
    return torch.isnan(s["u"])


# ---- a rule's figure, as data: `viz.panels` draws it ------------------------------------------------------------
@dataclass(frozen=True)
class Bar:
    """One bar: its tick label, value and hover; `holds` colours a tested bar (True: its part of the test holds,
    False: not), None draws it for comparison, tested against nothing."""

    label: str
    value: float
    hover: str
    holds: bool | None = None


@dataclass(frozen=True)
class Line:
    """A value bars are tested against: its label (written at its right end), value and hover."""

    label: str
    value: float
    hover: str


@dataclass(frozen=True)
class Panel:
    """One row of a test figure: its bars, the lines they are tested against, and the y-axis title."""

    bars: tuple[Bar, ...]
    lines: tuple[Line, ...]
    axis: str


@dataclass(frozen=True)
class Ranking:
    """A panel of the target's top-N tokens from the record, the draft's bar coloured by the verdict, with a line at
    the probability of place `cut` (`label`) where it falls among them."""

    cut: float
    label: str


Figure = tuple[str, tuple["Panel | Ranking", ...]]  # what the test compares, and its panels


class _Shown(string.Formatter):
    """str.format with one more spec, `~`: a statistic as `shown` writes it (— for a missing one, ∞)."""

    def format_field(self, value, format_spec: str) -> str:
        return shown(value) if format_spec == "~" else super().format_field(value, format_spec)


def say(template: str, n: Numbers, knob: float | None = None) -> str:
    """A rule's line from its numbers: `{name}` fields (`{name:~}` as `shown`, `{knob:g}` the knob)."""
    return _Shown().format(template, knob=knob, **n)


# ---- the rule ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Rule:
    """One acceptance rule, whole.

    name: the registry's key (a run's criterion); title: what a run with it is called on screen; label: the
        criterion menu's words ("Relative: " and its title where not given); family: what its relaxation reads
        (FAMILIES); color: its line in the trade-off figures.
    reads: the statistics it reads, of the evidence (evidence.STATISTICS) or of the paths (heads.PATH_STATISTICS):
        what a lazy run records at a position it checked.
    decide(s, knob): its Verdict at every position of `s` (None for the lossless baseline, which only records hold).
    knob: its one setting (range, default from its source, the strict value that relaxes nothing, help), or None.
    reasons: the reasons its acceptances carry, beyond exact match and a tie (each with colour and mark).
    shows: the numbers its explain line and figure read that are not its verdict's own (a record's, or the paths';
        what it reads where not given).
    explain(n, knob): one line on what it read at a position, from `shows` and its verdict's numbers.
    figure(n, knob, accepted): its test as panels, from the same numbers (None: the inspector draws the lossless
        test, or for DropMatch's criteria the paths' JS test).
    pi(evidence, knob): for a rule that verifies against a distribution of its own, that distribution at T > 0
        ([P, V]): its decision replaces the lossless test in either mode, and the correction after its first
        rejection is drawn from norm(max(pi - q, 0)). None for every other rule.
    greedy_pick(evidence, knob): for such a rule, the token a greedy run emits at its first rejection ([P]); None:
        the target's argmax.
    greedy_reading: its source defines it only when sampling, and what it does at T = 0 is this project's reading
        (greedy tables say so beside its name).
    """

    name: str
    title: str
    family: str
    color: str
    reads: tuple[str, ...]
    decide: Callable[[Stats, float | None], Verdict] | None
    explain: Callable[[Numbers, float | None], str]
    label: str = ""
    shows: tuple[str, ...] = ()
    knob: Knob | None = None
    reasons: tuple[Reason, ...] = ()
    figure: Callable[[Numbers, float | None, bool | None], Figure] | None = None
    pi: Callable[[Stats, float], torch.Tensor] | None = None
    greedy_pick: Callable[[Stats, float], torch.Tensor] | None = None
    greedy_reading: bool = False

    def __post_init__(self) -> None:
        if self.family not in (*FAMILIES, LOSSLESS_FAMILY):
            raise ValueError(f"{self.name}: family must be one of {', '.join(FAMILIES)}; got {self.family!r}")
        if (self.pi is None) != (self.family != OWN) and self.family != LOSSLESS_FAMILY:
            raise ValueError(f"{self.name}: a rule verifies against its own pi exactly when its family is {OWN!r}")
        object.__setattr__(self, "label", self.label or f"Relative: {self.title}")
        object.__setattr__(self, "shows", self.shows or self.reads)

    def shown_name(self, greedy: bool) -> str:
        """Its name as a table shows it: "(greedy reading)" after it at T = 0 where that reading is this project's."""
        return f"{self.name} (greedy reading)" if greedy and self.greedy_reading else self.name

    @property
    def needs_paths(self) -> bool:
        return self.family == PATHS

    def setting(self, knob: float | None) -> float | None:
        """The knob a run uses: the one given, or the rule's default (None for a rule without one)."""
        return None if self.knob is None else self.knob.default if knob is None else knob

    def __call__(self, s: Stats, knob: float | None = None) -> Verdict:
        if self.decide is None:
            raise ValueError(f"{self.name} is decided by the lossless test, not by a rule on the evidence")
        if self.needs_paths and getattr(s, "paths", None) is None:
            raise ValueError(f"{self.name} needs the K dropout paths at these positions")
        return self.decide(s, self.setting(knob))

    # how a rule joins the lossless test: written once, for every rule
    def alone(self, mode: str) -> bool:
        """Whether the rule decides alone (replace mode, or its own verification), without the lossless test."""
        return mode == "replace" or self.pi is not None

    def join(self, lossless, hit, mode: str):
        """The decision at a position (bools or [P] bool tensors): the rule's alone, or OR the lossless test's."""
        return hit if self.alone(mode) else lossless | hit

    def how(self, mode: str) -> str:
        """How the rule joined the lossless test, in words."""
        if self.pi is not None:
            return "its own verification, in place of the lossless test"
        return "alone, in place of the lossless test" if mode == "replace" else "OR the lossless test"

    def reading(self, s: Stats, knob: float | None = None, row: int = 0) -> tuple[bool, dict[str, float]]:
        """At one position (row `row` of `s`): the rule's decision, and every number its explain line and figure read,
        the statistics it shows and its verdict's own, as floats (not for DropMatch's criteria, whose numbers are the
        paths')."""
        found = self(s, knob)
        shown_ = {name: float(s[name][row]) for name in self.shows}
        return bool(found.accept[row]), shown_ | {name: float(v[row]) for name, v in found.numbers.items()}

    def line(self, s: Stats, knob: float | None = None, row: int = 0) -> str:
        """Its explain line at one position of `s`, at `knob` (its default where None)."""
        return self.explain(self.reading(s, knob, row)[1], self.setting(knob))
