"""Word-problem templates about fractions: parts of a whole, parts of what is left, and wholes found from parts.

The module is named `fractions_` so that it does not shadow the standard library's `fractions`.
"""

from __future__ import annotations

from fractions import Fraction
from math import gcd

from dropmatch.lab.word_problems.base import Draw, money, template

TEMPLATES: list = []

BAKED = ("muffins", "cookies", "bagels", "rolls", "cupcakes", "pretzels")
DRINKS = ("lemonade", "apple juice", "iced tea", "orange juice", "mint tea")
CAMP_ACTIVITIES = ("swimming lessons", "pottery classes", "chess lessons", "drama classes", "archery lessons")
BIG_BUYS = ("jacket", "bike helmet", "video game", "pair of shoes", "backpack")
SMALL_BUYS = ("books", "snacks", "art supplies", "a concert ticket", "stickers")
COLLECTIONS = ("stickers", "marbles", "trading cards", "seashells", "stamps", "baseball cards")
GIFTS = ("camera", "bicycle", "telescope", "guitar", "tablet")
PIZZA_EVENTS = ("birthday party", "team dinner", "class picnic", "movie night")


def _fraction(d: Draw, num: str, den: str, dens=(2, 3, 4, 5)) -> tuple[int, int]:
    """A proper fraction num/den in lowest terms, drawn as two whole numbers (shown as "num/den")."""
    b = d.choice(den, dens)
    a = d.int(num, 1, b - 1)
    d.need(gcd(a, b) == 1)
    return a, b


def _rest_fraction(d: Draw, num: str, den: str, taken: Fraction, dens=(2, 3, 4, 5)) -> tuple[int, int]:
    """A fraction in lowest terms that leaves something when added to `taken` (taken + num/den < 1)."""
    b = d.choice(den, dens)
    a = d.int(num, 1, max(1, -(-b * (1 - taken) // 1) - 1))
    d.need(gcd(a, b) == 1 and taken + Fraction(a, b) < 1)
    return a, b


def _multiple(d: Draw, key: str, of: int, low: int, high: int) -> int:
    """A multiple of `of` from about `low` to `high` (at least one multiple: `of` itself if high is too small)."""
    lo = max(of, -(-low // of) * of)
    return d.int(key, lo, max(lo, high), step=of)


def _lcm(x: int, y: int) -> int:
    return x * y // gcd(x, y)


@template("fractions", 1, steps=2, into=TEMPLATES)
def sold_share(d: Draw):
    who = d.name("who")
    item = d.choice("item", BAKED)
    a, b = _fraction(d, "num", "den", dens=(2, 3, 4, 5, 6, 8))
    baked = _multiple(d, "baked", b, 24, 240)
    text = (
        f"{who} baked {baked} {item} for the school fair and sold {a}/{b} of them in the first hour. "
        f"How many {item} did {who} have left after the first hour?"
    )
    return text, baked - baked * a // b


@template("fractions", 2, steps=2, into=TEMPLATES)
def bottles_sold(d: Draw):
    who = d.name("who")
    drink = d.choice("drink", DRINKS)
    a, b = _fraction(d, "num", "den")
    liters = _multiple(d, "liters", a, 6, 40)
    price = d.int("price", 2, 6)
    text = (
        f"{who} made {liters} liters of {drink} and poured all of it into bottles that each hold {a}/{b} of a "
        f"liter. {who} sold every bottle for {money(price)}. How many dollars did {who} make from the bottles?"
    )
    return text, Fraction(liters) / Fraction(a, b) * price


@template("fractions", 3, steps=3, into=TEMPLATES)
def part_of_a_part(d: Draw):
    who = d.name("who")
    activity = d.choice("activity", CAMP_ACTIVITIES)
    a, b = _fraction(d, "num1", "den1")
    c, e = _fraction(d, "num2", "den2")
    children = _multiple(d, "children", b * e, 40, 300)
    girls = children * a // b
    text = (
        f"{who} runs a summer camp with {children} children. {a}/{b} of the children are girls, and {c}/{e} of "
        f"the girls signed up for {activity}. How many girls did not sign up for {activity}?"
    )
    return text, girls - girls * c // e


@template("fractions", 4, steps=6, into=TEMPLATES)
def garden_beds(d: Draw):
    who = d.name("who")
    a, b = _fraction(d, "num1", "den1", dens=(2, 3, 4, 5))
    c, e = _rest_fraction(d, "num2", "den2", Fraction(a, b), dens=(3, 4, 5, 6))
    rows = d.int("rows", 3, 12)
    per_row = _multiple(d, "per_row", _lcm(b, e), 6, 30)
    plants = rows * per_row
    tomatoes, peppers = plants * a // b, plants * c // e
    beans = plants - tomatoes - peppers
    d.need(tomatoes > beans)
    text = (
        f"{who} planted a vegetable garden with {rows} rows of {per_row} plants each. {a}/{b} of the plants are "
        f"tomatoes, {c}/{e} of the plants are peppers, and the rest are beans. How many more tomato plants than "
        f"bean plants are in the garden?"
    )
    return text, tomatoes - beans


@template("fractions", 5, steps=4, into=TEMPLATES)
def spend_then_spend_rest(d: Draw):
    who = d.name("who")
    big, small = d.choice("big", BIG_BUYS), d.choice("small", SMALL_BUYS)
    a, b = _fraction(d, "num1", "den1")
    c, e = _fraction(d, "num2", "den2")
    had = _multiple(d, "had", b * e, 40, 600)
    rest = had - had * a // b
    text = (
        f"{who} had {money(had)} of birthday money. {who} spent {a}/{b} of it on a {big}, and then spent {c}/{e} "
        f"of the money that was left on {small}. How many dollars does {who} have now?"
    )
    return text, rest - rest * c // e


@template("fractions", 6, steps=3, into=TEMPLATES)
def given_away_from_left(d: Draw):
    who = d.name("who")
    things = d.choice("things", COLLECTIONS)
    a, b = _fraction(d, "num", "den", dens=(3, 4, 5, 6, 7, 8))
    left = _multiple(d, "left", b - a, 12, 90)
    start = left * b // (b - a)
    text = (
        f"{who} gave {a}/{b} of {who.his} {things} to friends. Now {who} has {left} {things} left. "
        f"How many {things} did {who} give away?"
    )
    return text, start - left


@template("fractions", 7, steps=5, into=TEMPLATES)
def refill_the_barrel(d: Draw):
    who = d.name("who")
    a, b = _fraction(d, "num1", "den1", dens=(2, 3, 4, 5))
    c, e = _fraction(d, "num2", "den2", dens=(2, 3, 4, 5))
    capacity = _multiple(d, "capacity", b * e, 60, 600)
    water = capacity * a // b
    remaining = water - water * c // e
    missing = capacity - remaining
    rate = d.choice("rate", [r for r in range(2, 13) if missing % r == 0] or [0])
    d.need(rate > 0)
    text = (
        f"A water tank on {who}'s farm holds {capacity} liters and is {a}/{b} full. {who} uses {c}/{e} of the "
        f"water in the tank to water the fields. Then {who} fills the tank with a hose that adds {rate} liters "
        f"every minute. How many minutes does it take to fill the tank to the top?"
    )
    return text, missing // rate


@template("fractions", 8, steps=6, into=TEMPLATES)
def saving_together(d: Draw):
    who = d.name("who")
    friend = d.name("friend", other=[who])
    gift = d.choice("gift", GIFTS)
    hours, wage = d.int("hours", 4, 12), d.int("wage", 8, 15)
    a, b = _fraction(d, "num1", "den1", dens=(2, 3, 4, 5))
    d.need(hours * wage % b == 0)
    c, e = _fraction(d, "num2", "den2", dens=(2, 3, 4, 5))
    earns = _multiple(d, "earns", e, 20, 80)
    weeks = d.int("weeks", 3, 10)
    saved = (hours * wage * a // b + earns * c // e) * weeks
    d.need(saved >= 60)
    cost = d.int("cost", 50, min(saved, 600), step=10)
    text = (
        f"{who} works {hours} hours a week at {money(wage)} an hour and saves {a}/{b} of {who.his} pay. "
        f"{friend} earns {money(earns)} a week walking dogs and saves {c}/{e} of it. After {weeks} weeks they put "
        f"their savings together and buy a {gift} that costs {money(cost)}. How many dollars do they have left "
        f"after buying the {gift}?"
    )
    return text, saved - cost


@template("fractions", 9, steps=3, into=TEMPLATES)
def three_collections(d: Draw):
    first = d.name("first")
    second = d.name("second", other=[first])
    third = d.name("third", other=[first, second])
    things = d.choice("things", COLLECTIONS)
    a, b = _fraction(d, "num", "den", dens=(2, 3, 4, 5, 6))
    count = _multiple(d, "count", b, 20, 200)
    more = d.int("more", 3, 40)
    second_has = count * a // b
    text = (
        f"{first} has {count} {things}. {second} has {a}/{b} as many {things} as {first}, and {third} has "
        f"{more} more {things} than {second}. How many {things} do the three of them have in all?"
    )
    return text, count + second_has + (second_has + more)


@template("fractions", 10, steps=4, into=TEMPLATES)
def recipe_change(d: Draw):
    who = d.name("who")
    item = d.choice("item", ("cookies", "muffins", "brownies", "cupcakes"))
    batch = d.choice("batch", (12, 16, 20, 24, 30))
    a, b = _fraction(d, "num", "den", dens=(2, 3, 4))
    wanted = _multiple(d, "wanted", batch * b, 48, 480)
    price = d.int("price", 2, 5)
    cost = wanted // batch * a // b * price
    bill = d.choice("bill", (20, 50, 100))
    d.need(cost < bill)
    text = (
        f"A recipe for {batch} {item} uses {a}/{b} cup of sugar. {who} wants to make {wanted} {item} for a bake "
        f"sale. Sugar costs {money(price)} a cup, and {who} pays for the sugar with a {money(bill)} bill. How many "
        f"dollars of change does {who} get back?"
    )
    return text, bill - cost


@template("fractions", 11, steps=4, into=TEMPLATES)
def whole_from_last_part(d: Draw):
    who = d.name("who")
    a, b = _fraction(d, "num1", "den1", dens=(2, 3, 4, 5))
    c, e = _fraction(d, "num2", "den2", dens=(2, 3, 4, 5))
    green = _multiple(d, "green", (b - a) * (e - c), 6, 60)
    rest = green * e // (e - c)
    total = rest * b // (b - a)
    text = (
        f"{who} has a jar of marbles. {a}/{b} of the marbles are red, {c}/{e} of the marbles that are not red "
        f"are blue, and the other {green} marbles are green. How many marbles are in the jar?"
    )
    return text, total


@template("fractions", 12, steps=8, into=TEMPLATES)
def shirt_sizes(d: Draw):
    who = d.name("who")
    a, b = _fraction(d, "num1", "den1", dens=(2, 3, 4, 5, 6))
    c, e = _rest_fraction(d, "num2", "den2", Fraction(a, b), dens=(3, 4, 5, 6))
    shirts = _multiple(d, "shirts", _lcm(b, e), 30, 120)
    small_price, medium_price, large_price = d.int("small", 6, 15), d.int("medium", 8, 18), d.int("large", 10, 20)
    d.need(len({small_price, medium_price, large_price}) == 3)
    small, medium = shirts * a // b, shirts * c // e
    large = shirts - small - medium
    text = (
        f"{who}'s shop got a box of {shirts} T-shirts. {a}/{b} of the shirts are small, {c}/{e} are medium, and "
        f"the rest are large. A small shirt sells for {money(small_price)}, a medium one for "
        f"{money(medium_price)} and a large one for {money(large_price)}. If {who} sells every shirt in the box, "
        f"how many dollars will the shop take in?"
    )
    return text, small * small_price + medium * medium_price + large * large_price


@template("fractions", 13, steps=6, into=TEMPLATES)
def pizza_leftovers(d: Draw):
    who = d.name("who")
    event = d.choice("event", PIZZA_EVENTS)
    pizzas, slices = d.int("pizzas", 3, 12), d.choice("slices", (6, 8, 10, 12))
    total = pizzas * slices
    a, b = _fraction(d, "num", "den", dens=[x for x in (2, 3, 4, 5) if total % x == 0])
    adults, each = d.int("adults", 2, 8), d.int("each", 2, 3)
    left = total - total * a // b - adults * each
    d.need(left > 0)
    helpers = d.choice("helpers", [h for h in range(2, 7) if left % h == 0] or [0])
    d.need(helpers > 0)
    text = (
        f"{who} ordered {pizzas} pizzas for a {event}, and each pizza was cut into {slices} slices. The children "
        f"ate {a}/{b} of all the slices, and {adults} adults ate {each} slices each. The {helpers} helpers shared "
        f"the slices that were left equally. How many slices did each helper get?"
    )
    return text, left // helpers
