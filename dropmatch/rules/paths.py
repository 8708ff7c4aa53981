"""DropMatch's criteria: rules that read the K dropout paths of the target's LM head (`heads.PathStats`).

Each accepts a draft token the lossless test rejects when the paths say it is a reasonable choice: the paper's
Algorithm 1 (JS to the paths' centroid, else majority vote), and its parts and variants. They take no knob: the
paths' K and p_drop are the run's own settings, so the inspector shows them at the run's p_drop only (their masks
would have to be drawn again). Their explain lines read a record's path fields (`js_draft`, `threshold`, the votes);
a verdict carries only the JS numbers it computes anyway.
"""

from __future__ import annotations

from dropmatch.heads import PathStats
from dropmatch.rules.base import PATHS, Numbers, Reason, Rule, Verdict, say

SEMANTIC = "semantic"
JS = Reason(
    "js", "JS", "lossless rejects it, but JS(q || centroid) <= max_i JS(p_i || centroid)", "#c4b5fd", "J", SEMANTIC
)
MAJORITY = Reason(
    "majority",
    "majority",
    "lossless rejects it, but it is the plurality top-1 of the K paths",
    "#f9a8d4",
    "M",
    SEMANTIC,
)
NAIVE = Reason(
    "naive", "naive", "lossless rejects it, but it is the top-1 of at least one dropout path", "#fcd34d", "N", SEMANTIC
)


def naive(s: PathStats) -> Verdict:
    """Accept d when d is the top-1 token of ANY path (paper Eq. 4)."""
    hit = (s.tokens == s.draft[:, None]).any(-1)
    return Verdict(accept=hit, components={"naive": hit})


def js(s: PathStats) -> Verdict:
    """Accept d when JS(q || centroid) <= max_i JS(p_i || centroid): the draft lies inside the paths' spread."""
    threshold = s.js_paths.max(-1).values
    hit = s.js_draft <= threshold
    return Verdict(accept=hit, components={"js": hit}, numbers={"js_draft": s.js_draft, "threshold": threshold})


def majority(s: PathStats) -> Verdict:
    """Accept d when it is the plurality top-1 of the K paths (a tie is no majority)."""
    hit = s.majority == s.draft
    return Verdict(accept=hit, components={"majority": hit})


def majority_strict(s: PathStats) -> Verdict:
    """Accept d when more than K/2 paths vote for it."""
    hit = (s.tokens == s.draft[:, None]).sum(-1) * 2 > s.K
    return Verdict(accept=hit, components={"majority": hit})


def js_majority(s: PathStats) -> Verdict:
    """Paper Algorithm 1: accept by JS, else by majority."""
    a, b = js(s), majority(s)
    return Verdict(
        accept=a.accept | b.accept, components={**a.components, **b.components}, numbers={**a.numbers, **b.numbers}
    )


def _js_line(n: Numbers, _knob=None) -> str:
    return say("JS(q‖c) {js_draft:~} vs max path JS {threshold:~}", n)


def _votes_line(n: Numbers, _knob=None) -> str:
    return say("paths voting for d: {votes_d:.0f} of {K:.0f} (most votes: {votes_top:.0f})", n)


def _rule(name: str, criterion, reads: tuple[str, ...], label: str, explain, shows, reasons) -> Rule:
    return Rule(
        name=name,
        label=f"DropMatch: {label}",
        title="DropMatch",
        family=PATHS,
        color="#7c3aed",
        reads=reads,
        decide=lambda ev, _knob: criterion(ev.paths),
        explain=explain,
        shows=shows,
        reasons=reasons,
    )


_JS, _VOTES = ("js_draft", "threshold"), ("votes_d", "votes_top", "K")
RULES = (
    _rule(
        "js+majority",
        js_majority,
        ("js_paths", "js_draft", "majority"),
        "js+majority (the paper's Algorithm 1)",
        lambda n, _knob=None: f"{_js_line(n)}; " + say("votes for d {votes_d:.0f} of {K:.0f}", n),
        (*_JS, "votes_d", "K"),
        (JS, MAJORITY),
    ),
    _rule("js", js, ("js_paths", "js_draft"), "js", _js_line, _JS, (JS,)),
    _rule("majority", majority, ("majority",), "majority", _votes_line, _VOTES, (MAJORITY,)),
    _rule("majority-strict", majority_strict, ("votes",), "majority, strict", _votes_line, _VOTES, (MAJORITY,)),
    _rule("naive", naive, ("tokens",), "naive", _votes_line, _VOTES, (NAIVE,)),
)
