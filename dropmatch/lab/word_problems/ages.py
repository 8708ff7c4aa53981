"""Word-problem templates about ages: differences that stay the same, ages in the past and future, sums,
ratios and averages of ages."""

from __future__ import annotations

from dropmatch.lab.word_problems.base import Draw, Person, plural, template

TEMPLATES: list = []


def _child(p: Person) -> str:
    return "son" if p.pronoun == "he" else "daughter"


def _sibling(p: Person) -> str:
    return "brother" if p.pronoun == "he" else "sister"


@template("ages", 1, steps=2, into=TEMPLATES)
def older_in_future(d: Draw):
    who = d.name("who")
    other = d.name("other", other=[who])
    age, diff, years = d.int("age", 6, 40), d.int("diff", 2, 15), d.int("years", 2, 10)
    text = (
        f"{who} is {age} years old. {other} is {diff} years older than {who}. How old will {other} be in {years} years?"
    )
    return text, age + diff + years


@template("ages", 2, steps=2, into=TEMPLATES)
def birth_year(d: Draw):
    who = d.name("who")
    cousin = d.name("cousin", other=[who])
    born, gap, year = d.int("born", 1985, 2015), d.int("gap", 1, 9), d.int("year", 2026, 2040)
    text = (
        f"{who} was born in {born}. {who.his.capitalize()} cousin {cousin} was born {plural(gap, 'year')} after "
        f"{who}. How many years old will {cousin} turn on {cousin.his} birthday in {year}?"
    )
    return text, year - (born + gap)


@template("ages", 3, steps=3, into=TEMPLATES)
def months_old(d: Draw):
    who = d.name("who")
    other = d.name("other", other=[who])
    years, months, extra = d.int("years", 2, 9), d.int("months", 1, 11), d.int("extra", 5, 30)
    text = (
        f"{who} is {years} years and {plural(months, 'month')} old. {other} is {extra} months older than {who}. "
        f"How many months old is {other}?"
    )
    return text, years * 12 + months + extra


@template("ages", 4, steps=3, into=TEMPLATES)
def sum_and_difference(d: Draw):
    who = d.name("who")
    other = d.name("other", other=[who])
    total = d.int("total", 20, 120)
    diff = d.int("diff", 2 if total % 2 == 0 else 1, 30, step=2)  # same parity as the total: whole ages
    d.need((total - diff) % 2 == 0 and total - diff >= 2)
    text = (
        f"The ages of {who} and {other} add up to {total} years. {who} is {plural(diff, 'year')} older than {other}. "
        f"How many years old is {who}?"
    )
    return text, (total - diff) // 2 + diff


@template("ages", 5, steps=3, into=TEMPLATES)
def fraction_of_age(d: Draw):
    parent = d.name("parent")
    kid = d.name("kid", other=[parent])
    k = d.int("k", 2, 4)
    age = d.int("age", -(-24 // k) * k, 60, step=k)  # a multiple of k from 24 up
    d.need(age % k == 0 and age - age // k >= 18)
    later = d.int("later", age + 1, age + 30)
    text = (
        f"{parent} is {age} years old. {parent.his.capitalize()} {_child(kid)} {kid} is 1/{k} of {parent}'s age. "
        f"How old will {kid} be when {parent} is {later} years old?"
    )
    return text, later - (age - age // k)


@template("ages", 6, steps=4, into=TEMPLATES)
def dog_years(d: Draw):
    who = d.name("who")
    first, second, later = d.int("first", 12, 16), d.int("second", 6, 10), d.int("later", 4, 6)
    dog = d.int("dog", 3, 15)
    text = (
        f"{who} reads that a dog's first year of life is worth {first} human years, its second year is worth "
        f"{second} human years, and every year after that is worth {later} human years. {who}'s dog is {dog} "
        f"years old. How many human years old is the dog?"
    )
    return text, first + second + (dog - 2) * later


@template("ages", 7, steps=4, into=TEMPLATES)
def years_until_sum(d: Draw):
    a = d.name("a")
    b = d.name("b", other=[a])
    c = d.name("c", other=[a, b])
    age_a, age_b, age_c = d.int("age_a", 10, 20), d.int("age_b", 5, 15), d.int("age_c", 1, 10)
    now = age_a + age_b + age_c
    total = d.int("total", now + 3, now + 60, step=3)  # the sum grows by 3 a year
    d.need(total > now and (total - now) % 3 == 0)
    text = (
        f"{a} is {age_a} years old, {b} is {age_b} years old and {c} is {plural(age_c, 'year')} old. "
        f"In how many years will the sum of their three ages be {total}?"
    )
    return text, (total - now) // 3


@template("ages", 8, steps=5, into=TEMPLATES)
def twins_and_sister(d: Draw):
    who = d.name("who")
    twins, gap, times = d.int("twins", 2, 12), d.int("gap", 1, 8), d.int("times", 2, 3)
    sister = twins + gap
    own = times * sister
    d.need(own - twins <= 24)
    text = (
        f"{who} has twin brothers who are each {twins} years old and a sister who is {plural(gap, 'year')} older "
        f"than the twins. {who} is {times} times as old as {who.his} sister. "
        f"What is the total of the ages of {who} and {who.his} three siblings, in years?"
    )
    return text, own + sister + 2 * twins


@template("ages", 9, steps=5, into=TEMPLATES)
def family_in_future(d: Draw):
    who = d.name("who")
    father, younger = d.int("father", 22, 40), d.int("younger", 1, 8)
    age, years = d.int("age", 3, 20), d.int("years", 2, 10)
    text = (
        f"When {who} was born, {who.his} father was {father} years old. {who.his.capitalize()} mother is "
        f"{plural(younger, 'year')} younger than {who.his} father. {who} is {age} years old now. In {years} years, "
        f"what will be the sum of the ages of {who}, {who.his} father and {who.his} mother?"
    )
    own = age + years
    dad = father + own
    return text, own + dad + (dad - younger)


@template("ages", 10, steps=8, into=TEMPLATES)
def chain_of_four(d: Draw):
    a = d.name("a")
    b = d.name("b", other=[a])
    c = d.name("c", other=[a, b])
    e = d.name("e", other=[a, b, c])
    age_a, k = d.int("age_a", 5, 15), d.int("k", 2, 4)
    age_b = age_a * k
    diff = d.int("diff", 2 if age_b % 2 == 0 else 1, 16, step=2)  # C's age even: E is half of it
    age_c = age_b - diff
    d.need(age_c % 2 == 0 and age_c >= 4)
    years = d.int("years", 2, 10)
    text = (
        f"{a} is {age_a} years old. {b} is {k} times as old as {a}. {c} is {plural(diff, 'year')} younger than "
        f"{b}, and {e} is half as old as {c}. What will be the total of the ages of all four of them in {years} years?"
    )
    return text, age_a + age_b + age_c + age_c // 2 + 4 * years


@template("ages", 11, steps=6, into=TEMPLATES)
def past_ratio(d: Draw):
    parent = d.name("parent")
    kid = d.name("kid", other=[parent])
    sib = d.name("sib", other=[parent, kid])
    ago, times = d.int("ago", 2, 8), d.int("times", 3, 5)
    kid_age = d.int("kid_age", ago + 2, ago + 15)
    d.need((kid_age - ago) * (times - 1) >= 18)  # the parent was a grown-up when the child was born
    older = d.int("older", 1, 9)
    turns = d.int("turns", kid_age + 1, kid_age + 20)
    text = (
        f"{ago} years ago, {parent} was {times} times as old as {parent.his} {_child(kid)} {kid} was then. "
        f"{kid} is {kid_age} years old now. {parent}'s {_sibling(sib)} {sib} is {plural(older, 'year')} older than "
        f"{parent}. How old will {sib} be when {kid} turns {turns}?"
    )
    parent_now = (kid_age - ago) * times + ago
    return text, parent_now + older + (turns - kid_age)


@template("ages", 12, steps=6, into=TEMPLATES)
def three_children(d: Draw):
    who = d.name("who")
    d1, d2 = d.int("d1", 1, 6), d.int("d2", 1, 6)
    base = d1 + 2 * d2
    total = d.int("total", base + 3, base + 42, step=3)  # the youngest is a whole number of years old
    d.need(total > base and (total - base) % 3 == 0)
    text = (
        f"The ages of {who}'s three children add up to {total} years. The oldest child is {plural(d1, 'year')} "
        f"older than the middle child, and the middle child is {plural(d2, 'year')} older than the youngest. "
        f"How many years old is the oldest child?"
    )
    youngest = (total - base) // 3
    return text, youngest + d2 + d1


@template("ages", 13, steps=7, into=TEMPLATES)
def club_average(d: Draw):
    coach = d.name("coach")
    boys, boy_avg = d.int("boys", 4, 10), d.int("boy_avg", 9, 14)
    girls, girl_avg = d.int("girls", 4, 10), d.int("girl_avg", 9, 14)
    people = boys + girls + 1
    kids = boys * boy_avg + girls * girl_avg
    low = 25 + (-(kids + 25)) % people  # the first age from 25 that makes the average whole
    age = d.int("coach_age", low, low + people * ((70 - low) // people), step=people)
    d.need((kids + age) % people == 0)
    text = (
        f"A chess club has {boys} boys whose average age is {boy_avg} years and {girls} girls whose average age "
        f"is {girl_avg} years. Their coach, {coach}, is {age} years old. What is the average age, in years, of "
        f"everyone in the club including the coach?"
    )
    return text, (kids + age) // people
