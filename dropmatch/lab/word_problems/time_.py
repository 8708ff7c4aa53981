"""Word-problem templates about time: clock times, durations and schedules, answered in minutes, hours or days.

The module is `time_` so that it does not shadow the standard library's `time`; its kind is "time".
"""

from __future__ import annotations

from dropmatch.lab.word_problems.base import Draw, money, template

TEMPLATES: list = []

MEATS = ("turkey", "ham", "pork roast", "beef roast")
TRIPS = ("museum", "science center", "zoo", "aquarium", "farm")
LOANS = ("book", "movie", "board game", "puzzle")
INSTRUMENTS = ("piano", "violin", "guitar", "flute", "drums", "cello")
STATIONS = ("bus stop", "ferry dock", "train station")
JOBS = ("bakery", "library", "bike shop", "garden center", "hotel", "pharmacy")
PLACES = ("conference", "job interview", "client meeting", "workshop")


def article(n: int) -> str:
    """'a' or 'an' before a number said aloud: an 8-pound, an 11-pound, a 12-pound."""
    return "an" if str(n).startswith("8") or n in (11, 18) else "a"


def clock(hour: int, minute: int, half: str) -> str:
    """A clock time as a problem writes it: 9:05 a.m."""
    return f"{hour}:{minute:02d} {half}"


def am_to_pm(h1: int, m1: int, h2: int, m2: int) -> int:
    """Minutes from h1:m1 a.m. to h2:m2 p.m. of the same day (hours 1 to 11)."""
    return (12 - h1) * 60 - m1 + h2 * 60 + m2


@template("time", 1, steps=2, into=TEMPLATES)
def roast(d: Draw):
    who = d.name("who")
    meat = d.choice("meat", MEATS)
    pounds, per_pound, rest = d.int("pounds", 8, 22), d.int("per_pound", 12, 20), d.int("rest", 15, 45, step=5)
    text = (
        f"{who} is cooking {article(pounds)} {pounds}-pound {meat} for a family dinner. The recipe says to cook it "
        f"for {per_pound} minutes for each pound, and then to let it rest for {rest} minutes before it is served. "
        f"How many minutes pass from the moment the {meat} goes into the oven until it can be served?"
    )
    return text, pounds * per_pound + rest


@template("time", 2, steps=2, into=TEMPLATES)
def late_return(d: Draw):
    who = d.name("who")
    item = d.choice("item", LOANS)
    weeks, late = d.int("weeks", 2, 6), d.int("late", 2, 13)
    text = (
        f"The town library lends a {item} for {weeks} weeks. {who} borrowed a {item} and brought it back "
        f"{late} days after the day it was due. For how many days did {who} keep the {item} in all?"
    )
    return text, 7 * weeks + late


@template("time", 3, steps=3, into=TEMPLATES)
def field_trip(d: Draw):
    who = d.name("who")
    place = d.choice("place", TRIPS)
    h1, m1 = d.int("h1", 7, 11), d.int("m1", 0, 55, step=5)
    h2, m2 = d.int("h2", 1, 5), d.int("m2", 0, 55, step=5)
    text = (
        f"{who}'s class went on a trip to the {place}. The bus left the school at {clock(h1, m1, 'a.m.')} and "
        f"came back to the school at {clock(h2, m2, 'p.m.')} the same day. For how many minutes was the class "
        f"away from the school?"
    )
    return text, am_to_pm(h1, m1, h2, m2)


@template("time", 4, steps=3, into=TEMPLATES)
def pills_left(d: Draw):
    who = d.name("who")
    bottle = d.int("bottle", 40, 120, step=10)
    every = d.choice("every", (4, 6, 8, 12))
    days = d.int("days", 3, 14)
    d.need(24 // every * days < bottle)
    text = (
        f"{who}'s dog has to take a pill every {every} hours, day and night, for {days} days. The bottle from the "
        f"vet holds {bottle} pills. How many pills will be left in the bottle when the {days} days are over?"
    )
    return text, bottle - 24 // every * days


@template("time", 5, steps=4, into=TEMPLATES)
def departures(d: Draw):
    stop = d.choice("stop", STATIONS)
    h1, m1 = d.int("h1", 5, 7), d.int("m1", 0, 55, step=5)
    h2, m2 = d.int("h2", 9, 11), d.int("m2", 0, 55, step=5)
    every = d.choice("every", (10, 15, 20, 30))
    span = (h2 - h1) * 60 + m2 - m1
    d.need(span % every == 0)
    vehicle, vehicles = {
        "bus stop": ("bus", "buses"),
        "ferry dock": ("ferry", "ferries"),
        "train station": ("train", "trains"),
    }[stop]
    text = (
        f"On Sunday mornings the first {vehicle} leaves the {stop} at {clock(h1, m1, 'a.m.')} After that, a "
        f"{vehicle} leaves every {every} minutes, and the last morning {vehicle} leaves at {clock(h2, m2, 'a.m.')} "
        f"How many {vehicles} leave the {stop} on a Sunday morning, counting the first one and the last one?"
    )
    return text, span // every + 1


@template("time", 6, steps=4, into=TEMPLATES)
def weekly_practice(d: Draw):
    who = d.name("who")
    instrument = d.choice("instrument", INSTRUMENTS)
    weekday, saturday = d.int("weekday", 20, 60, step=5), d.int("saturday", 30, 120, step=5)
    weeks = d.int("weeks", 2, 12)
    total = (3 * weekday + saturday) * weeks
    d.need(saturday != weekday and total % 60 == 0)
    text = (
        f"{who} practices the {instrument} for {weekday} minutes on Mondays, Wednesdays and Fridays, and for "
        f"{saturday} minutes on Saturdays. {who} does not practice on the other days. How many hours does "
        f"{who} practice in {weeks} weeks?"
    )
    return text, total // 60


@template("time", 7, steps=5, into=TEMPLATES)
def early_to_school(d: Draw):
    who = d.name("who")
    h1, m1 = d.int("h1", 5, 7), d.int("m1", 0, 55, step=5)
    m2 = d.int("m2", 0, 45, step=5)
    shower, breakfast, walk = d.int("shower", 5, 20), d.int("breakfast", 10, 30), d.int("walk", 10, 40)
    early = (8 - h1) * 60 + m2 - m1 - (shower + breakfast + walk)
    d.need(early > 0)
    text = (
        f"{who} wakes up at {clock(h1, m1, 'a.m.')} {who.pronoun.capitalize()} takes {shower} minutes to shower "
        f"and get dressed, then spends {breakfast} minutes eating breakfast, and then walks to school, which takes "
        f"{walk} minutes. {who} does nothing else in between. School starts at {clock(8, m2, 'a.m.')} How many "
        f"minutes before school starts does {who} get there?"
    )
    return text, early


@template("time", 8, steps=4, into=TEMPLATES)
def vacation_split(d: Draw):
    who = d.name("who")
    weeks, extra = d.int("weeks", 2, 5), d.int("extra", 1, 6)
    grandparents = d.int("grandparents", 3, 12)
    cities = d.choice("cities", (2, 3, 4))
    rest = 7 * weeks + extra - grandparents
    d.need(rest > 0 and rest % cities == 0)
    text = (
        f"{who}'s summer trip lasts {weeks} weeks and {extra} days. {who.pronoun.capitalize()} spends the first "
        f"{grandparents} days with {who.his} grandparents. {who.pronoun.capitalize()} splits the rest of the trip "
        f"equally among {cities} cities. How many days does {who} spend in each city?"
    )
    return text, rest // cities


@template("time", 9, steps=5, into=TEMPLATES)
def study_session(d: Draw):
    who = d.name("who")
    h1, m1 = d.int("h1", 1, 4), d.int("m1", 0, 55, step=5)
    h2, m2 = d.int("h2", 5, 8), d.int("m2", 0, 55, step=5)
    pause = d.int("pause", 10, 30, step=5)
    subjects = d.choice("subjects", (2, 3, 4, 5))
    work = (h2 - h1) * 60 + m2 - m1 - pause
    d.need(work >= 15 * subjects and work % subjects == 0)
    text = (
        f"{who} studied from {clock(h1, m1, 'p.m.')} to {clock(h2, m2, 'p.m.')} on Saturday. During that time "
        f"{who.pronoun} took one {pause}-minute break, and spent the rest of the time on {subjects} subjects, the "
        f"same number of minutes on each. How many minutes did {who} spend on each subject?"
    )
    return text, work // subjects


@template("time", 10, steps=7, into=TEMPLATES)
def weekly_pay(d: Draw):
    who = d.name("who")
    job = d.choice("job", JOBS)
    h1, m1 = d.int("h1", 6, 10), d.int("m1", 0, 45, step=15)
    h2, m2 = d.int("h2", 1, 6), d.int("m2", 0, 45, step=15)
    lunch = d.choice("lunch", (30, 45, 60))
    days = d.int("days", 3, 6)
    wage = d.int("wage", 12, 24)
    minutes = (am_to_pm(h1, m1, h2, m2) - lunch) * days
    d.need(minutes * wage % 60 == 0 and am_to_pm(h1, m1, h2, m2) - lunch >= 240)
    text = (
        f"{who} works at a {job} {days} days a week. Each workday {who.pronoun} starts at {clock(h1, m1, 'a.m.')} "
        f"and finishes at {clock(h2, m2, 'p.m.')}, with an unpaid lunch break of {lunch} minutes. The {job} pays "
        f"{who.him} {money(wage)} for each hour of work. How many dollars does {who} earn in one week?"
    )
    return text, minutes * wage // 60


@template("time", 11, steps=7, into=TEMPLATES)
def sleep_week(d: Draw):
    who = d.name("who")
    h1, m1 = d.int("h1", 8, 11), d.int("m1", 0, 45, step=15)
    h2, m2 = d.int("h2", 5, 7), d.int("m2", 0, 45, step=15)
    longer = d.int("longer", 15, 120, step=15)
    night = (12 - h1) * 60 - m1 + h2 * 60 + m2
    total = 7 * night + 2 * longer
    d.need(total % 60 == 0)
    text = (
        f"Every night {who} goes to bed at {clock(h1, m1, 'p.m.')} On school days {who.pronoun} wakes up at "
        f"{clock(h2, m2, 'a.m.')}, and on Saturday and Sunday mornings {who.pronoun} sleeps {longer} minutes "
        f"longer than that. How many hours does {who} sleep in one whole week of 7 nights?"
    )
    return text, total // 60


@template("time", 12, steps=8, into=TEMPLATES)
def connecting_flight(d: Draw):
    who = d.name("who")
    event = d.choice("event", PLACES)
    h1, m1 = d.int("h1", 6, 9), d.int("m1", 0, 55, step=5)
    h2, m2 = d.int("h2", 2, 6), d.int("m2", 0, 30, step=30)
    first, layover = d.int("first", 55, 150, step=5), d.int("layover", 40, 120, step=5)
    second, taxi = d.int("second", 45, 150, step=5), d.int("taxi", 20, 60, step=5)
    spare = am_to_pm(h1, m1, h2, m2) - (first + layover + second + taxi)
    d.need(spare > 0)
    text = (
        f"{who} has a {event} in another city at {clock(h2, m2, 'p.m.')} {who.pronoun.capitalize()} takes a "
        f"flight that leaves at {clock(h1, m1, 'a.m.')} and lasts {first} minutes. Then {who.pronoun} waits "
        f"{layover} minutes at the airport for a second flight, which lasts {second} minutes. The taxi ride from "
        f"the airport to the {event} takes {taxi} minutes. Both cities use the same clock time and everything is "
        f"on time. How many minutes early does {who} arrive at the {event}?"
    )
    return text, spare


@template("time", 13, steps=6, into=TEMPLATES)
def parking_change(d: Draw):
    who = d.name("who")
    h1, h2, minute = d.int("h1", 7, 11), d.int("h2", 1, 7), d.int("minute", 0, 55, step=5)
    first, later = d.int("first", 3, 8), d.int("later", 2, 5)
    bill = d.choice("bill", (20, 50, 100))
    fee = first + later * ((12 - h1) + h2 - 1)
    d.need(fee < bill)
    text = (
        f"A parking garage charges {money(first)} for the first hour and {money(later)} for each hour after that. "
        f"{who} parked there from {clock(h1, minute, 'a.m.')} to {clock(h2, minute, 'p.m.')} the same day. "
        f"{who.pronoun.capitalize()} paid with a {money(bill)} bill. How many dollars of change did {who} get back?"
    )
    return text, bill - fee
