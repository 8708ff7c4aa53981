"""What a word-problem template is: a function of named draws that tells a problem and computes its answer.

A template draws its numbers, names and objects by name (`Draw.int("speed", 30, 70, step=5)`, `Draw.name("who")`),
writes the problem in prose from them and returns the answer it computed. Drawing by name is what makes a template
testable: a test replays it with handmade values (`Draw.fixed`) and checks the answer against a computation done
by hand. A draw that makes an unfit problem (a non-whole answer, a negative count) is refused with `Draw.need`, and
the generator draws again.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

# People's names: short, common in several languages, each with the pronoun the problem uses.
NAMES = {
    "she": (
        "Amara",
        "Ana",
        "Aiko",
        "Bea",
        "Carmen",
        "Chloe",
        "Dana",
        "Elif",
        "Emma",
        "Fatima",
        "Grace",
        "Hana",
        "Ines",
        "Ingrid",
        "Jia",
        "Kavya",
        "Lena",
        "Leila",
        "Lucia",
        "Maya",
        "Mei",
        "Nadia",
        "Nora",
        "Olga",
        "Priya",
        "Rosa",
        "Sara",
        "Sofia",
        "Tara",
        "Yara",
        "Zoe",
        "Ayla",
        "Freya",
        "Keiko",
        "Marta",
        "Noor",
    ),
    "he": (
        "Aarav",
        "Ben",
        "Carlos",
        "Daniel",
        "David",
        "Diego",
        "Emil",
        "Farid",
        "Hugo",
        "Ivan",
        "Jamal",
        "Jonas",
        "Kenji",
        "Leo",
        "Luca",
        "Mateo",
        "Mohammed",
        "Nikolai",
        "Omar",
        "Pablo",
        "Raj",
        "Ravi",
        "Sam",
        "Tomas",
        "Yusuf",
        "Wei",
        "Felix",
        "Arjun",
        "Bruno",
        "Kofi",
        "Lars",
        "Malik",
        "Oscar",
        "Pedro",
        "Tariq",
        "Viktor",
    ),
}
POSSESSIVE = {"she": "her", "he": "his"}
OBJECT = {"she": "her", "he": "him"}


class Redraw(Exception):
    """The drawn values make no fit problem: the generator draws again."""


@dataclass(frozen=True)
class Person:
    name: str
    pronoun: str  # "she" or "he"

    @property
    def his(self) -> str:  # possessive: "her" / "his"
        return POSSESSIVE[self.pronoun]

    @property
    def him(self) -> str:  # object: "her" / "him"
        return OBJECT[self.pronoun]

    def __str__(self) -> str:
        return self.name


class Draw:
    """Named random draws for one problem. `Draw(rng)` draws; `Draw.fixed(values)` replays handmade values (a test's
    instance, `Draw.given(speed=40, who="Ana")`), where every name the template draws must be given."""

    def __init__(self, rng: random.Random | None = None, fixed: dict | None = None):
        self.rng, self.fixed, self.values = rng, fixed, {}

    @classmethod
    def given(cls, **values) -> Draw:
        return cls(None, values)

    def _take(self, key: str, make: Callable[[], object]):
        if key in self.values:
            raise ValueError(f"the template draws {key!r} twice")
        if self.fixed is not None:
            if key not in self.fixed:
                raise KeyError(f"a handmade instance must give {key!r}")
            value = self.fixed[key]
        else:
            value = make()
        self.values[key] = value
        return value

    def int(self, key: str, low: int, high: int, step: int = 1) -> int:
        """A whole number from low to high (both included), a multiple of `step` above `low`."""
        return self._take(key, lambda: self.rng.randrange(low, high + 1, step))

    def choice(self, key: str, options: Sequence):
        return self._take(key, lambda: self.rng.choice(list(options)))

    def name(self, key: str, other: Sequence[Person] = ()) -> Person:
        """A person (name and pronoun), never one already in `other`. A handmade instance gives a Person or a
        name from NAMES."""
        taken = {p.name for p in other}

        def make():
            pronoun = self.rng.choice(("she", "he"))
            return Person(self.rng.choice([n for n in NAMES[pronoun] if n not in taken]), pronoun)

        value = self._take(key, make)
        if isinstance(value, str):  # a handmade name
            value = Person(value, next(p for p, names in NAMES.items() if value in names))
            self.values[key] = value
        return value

    @staticmethod
    def need(condition: bool) -> None:
        """Refuse this draw unless `condition` holds (the generator draws again)."""
        if not condition:
            raise Redraw


Number = int | Fraction


@dataclass(frozen=True)
class Template:
    kind: str  # rates, fractions, percentages, ages, money, time, units, geometry
    number: int  # the template's number within its kind
    steps: int  # arithmetic operations a solution takes
    make: Callable[[Draw], tuple[str, Number]]  # (the problem's text, its answer)

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.number:02d}"

    def instance(self, draw: Draw) -> tuple[str, int]:
        """The problem told from `draw` and its answer, a whole number (else Redraw)."""
        text, answer = self.make(draw)
        answer = Fraction(answer)
        Draw.need(answer.denominator == 1 and answer >= 0)
        return " ".join(text.split()), int(answer)


def template(kind: str, number: int, steps: int, into: list) -> Callable:
    """Decorator: register `make(draw) -> (text, answer)` as a Template in `into` (its module's TEMPLATES)."""

    def register(make: Callable[[Draw], tuple[str, Number]]) -> Callable:
        into.append(Template(kind, number, steps, make))
        return make

    return register


def plural(n: int, word: str, words: str | None = None) -> str:
    """'1 apple', '3 apples' (or the irregular plural given)."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def money(amount: Number) -> str:
    """Dollars as a problem writes them: $12, $3.50."""
    amount = Fraction(amount)
    return f"${amount.numerator // amount.denominator}" if amount.denominator == 1 else f"${float(amount):.2f}"
