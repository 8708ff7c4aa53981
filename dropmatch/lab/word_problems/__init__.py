"""A generated suite of grade-school word problems: the templates, the prompt, and scoring by the final number.

GSM8K-like (two to eight arithmetic steps told in prose, one whole-number answer), written here: templates of
this project (`base.Template`, one module per kind), names, objects and numbers drawn from a seed, the answer
computed by the template. No model has seen these problems. `problems(n)` is reproducible: problem k of a template
is drawn from its own seed (`word-problems:SEED:TEMPLATE:k`), and the suite takes the templates round-robin, so
its first N problems cover every template about equally. The template list is part of the suite's definition:
adding or changing a template changes the suite, and a recorded sweep names the suite's version.

A problem's id is `TEMPLATE#k` (`rates-03#17`): problems of one template are not independent, and the verdict
clusters them by the part before `#` (`dropmatch.tables.verdict.cluster`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from fractions import Fraction

from dropmatch.lab.word_problems import (
    ages,
    counting,
    fractions_,
    geometry,
    money,
    percentages,
    rates,
    time_,
    units,
)
from dropmatch.lab.word_problems.base import Draw, Redraw, Template

NAME = "word-problems"
VERSION = 1  # bump when a template changes: recorded sweeps of another version are another suite
TEMPLATES: tuple[Template, ...] = tuple(
    t for m in (rates, fractions_, percentages, ages, money, time_, units, geometry, counting) for t in m.TEMPLATES
)
# Chosen on the suite's first 24 problems (lossless, 256 tokens): asked for "a few short steps", the embedded coder
# pair wrote Python and made up its output (25% solved, 241 tokens a cell, 17 of 24 cut at 256); asked for bare
# calculations, it skipped the reasoning (8-13%, 30-66 tokens); this wording: 46% solved, 147 tokens, 1 cut.
INSTRUCTION = (
    "Solve this math word problem. Do not write code. Explain each step in one short sentence with its calculation, "
    'then write the final line "Answer: <number>".'
)
MAX_TRIES = 1000  # draws of one problem before a template is declared unable to make it


@dataclass(frozen=True)
class Problem:
    id: str  # TEMPLATE#k
    kind: str
    template: str
    steps: int
    text: str
    answer: int

    @property
    def prompt(self) -> str:
        """The user turn of the chat the model is asked in (one fixed zero-shot format)."""
        return f"{INSTRUCTION}\n\n{self.text}"


def draw_problem(t: Template, k: int, seed: int = 0, seen: set[str] | frozenset = frozenset()) -> Problem:
    """Problem k of template t: the first draw from its own seeds that makes a fit problem not in `seen`."""
    for attempt in range(MAX_TRIES):
        rng = random.Random(f"{NAME}:{seed}:{t.id}:{k}:{attempt}")
        try:
            text, answer = t.instance(Draw(rng))
        except Redraw:
            continue
        if text not in seen:
            return Problem(f"{t.id}#{k}", t.kind, t.id, t.steps, text, answer)
    raise RuntimeError(f"template {t.id} made no new problem in {MAX_TRIES} draws (problem {k})")


def problems(n: int, seed: int = 0) -> list[Problem]:
    """The suite's first n problems: round k draws problem k of every template, templates in a fixed order."""
    if n < 1:
        raise ValueError(f"the number of problems must be a positive integer; got {n!r}")
    out: list[Problem] = []
    seen: dict[str, set[str]] = {t.id: set() for t in TEMPLATES}
    for k in range((n + len(TEMPLATES) - 1) // len(TEMPLATES)):
        for t in TEMPLATES[: n - len(out)]:
            p = draw_problem(t, k, seed, seen[t.id])
            seen[t.id].add(p.text)
            out.append(p)
    return out


# ---- scoring by the final number ------------------------------------------------------------------------
_NUMBER = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_ANSWER_LINE = re.compile(rf"answer\s*(?:is)?\s*[:=]?\s*[*$\s]*\\?\$?\s*({_NUMBER})", re.IGNORECASE)
_BOXED = re.compile(rf"\\boxed\{{\s*\\?\$?\s*({_NUMBER})")
_ANY = re.compile(_NUMBER)


def final_number(completion: str) -> Fraction | None:
    """The number a completion gives as its answer: after its last "Answer:", else in its last \\boxed{}, else its
    last number; commas between thousands and a leading $ are read through. None when it states no number."""
    for pattern in (_ANSWER_LINE, _BOXED, _ANY):
        found = pattern.findall(completion)
        if found:
            return Fraction(found[-1].replace(",", ""))
    return None


def score_completion(answer: int, completion: str) -> dict:
    """{"passed": bool, "result": str}: the completion's final number equals the problem's answer."""
    got = final_number(completion)
    if got is None:
        return {"passed": False, "result": "no number"}
    shown = str(got.numerator) if got.denominator == 1 else f"{float(got):g}"
    return {"passed": got == answer, "result": "passed" if got == answer else f"answered {shown}, expected {answer}"}
