"""Word-problem templates about rates: speed, work, flow and unit prices over time."""

from __future__ import annotations

from math import gcd

from dropmatch.lab.word_problems.base import Draw, plural, template

TEMPLATES: list = []


def _multiple(d: Draw, key: str, low: int, high: int, of: int) -> int:
    """Draw `key`, a multiple of `of` from low to high (refused when there is none)."""
    first = -(-low // of) * of
    d.need(first <= high)
    return d.int(key, first, high, step=of)


@template("rates", 1, steps=2, into=TEMPLATES)
def two_legs(d: Draw):
    who = d.name("who")
    speed1, hours1 = d.int("speed1", 30, 70, step=5), d.int("hours1", 2, 5)
    speed2, hours2 = d.int("speed2", 20, 60, step=5), d.int("hours2", 1, 4)
    text = (
        f"{who} drives at {speed1} miles per hour for {hours1} hours, then at {speed2} miles per hour for "
        f"{hours2} hours. How many miles does {who} drive in all?"
    )
    return text, speed1 * hours1 + speed2 * hours2


@template("rates", 2, steps=3, into=TEMPLATES)
def shared_job(d: Draw):
    who = d.name("who")
    friend = d.name("friend", other=[who])
    pages = d.int("pages", 60, 240, step=12)
    own, theirs = d.int("own", 2, 8), d.int("theirs", 2, 8)
    d.need(pages % (own + theirs) == 0)
    text = (
        f"{who} and {friend} must type a report of {pages} pages. {who} types {own} pages an hour and {friend} "
        f"types {theirs} pages an hour. Working together, how many hours will they take?"
    )
    return text, pages // (own + theirs)


@template("rates", 3, steps=2, into=TEMPLATES)
def print_job(d: Draw):
    who = d.name("who")
    pages = d.int("pages", 4, 30)
    speed = d.choice("speed", (10, 12, 15, 16, 18, 20, 24, 25, 30))
    copies = _multiple(d, "copies", 5, 40, of=speed // gcd(pages, speed))
    text = (
        f"{who} needs to print {copies} copies of a handout that is {pages} pages long. The office printer prints "
        f"{speed} pages per minute. How many minutes will it take to print all the copies?"
    )
    return text, copies * pages // speed


@template("rates", 4, steps=3, into=TEMPLATES)
def leaky_tank(d: Draw):
    capacity = d.int("capacity", 200, 1000, step=50)
    start = d.int("start", 20, capacity // 2, step=10)
    inflow = d.int("inflow", 8, 30)
    leak = d.int("leak", 1, inflow - 3)
    d.need((capacity - start) % (inflow - leak) == 0)
    text = (
        f"A water tank holds {capacity} liters and already has {start} liters in it. A pipe pours in {inflow} "
        f"liters per minute, but a crack at the bottom lets {leak} liters per minute leak out. How many minutes "
        f"will it take to fill the tank?"
    )
    return text, (capacity - start) // (inflow - leak)


@template("rates", 5, steps=4, into=TEMPLATES)
def rest_of_the_way(d: Draw):
    who = d.name("who")
    speed1, hours1 = d.int("speed1", 40, 70, step=5), d.int("hours1", 2, 4)
    speed2 = d.int("speed2", 30, 70, step=5)
    first_part = speed1 * hours1
    distance = d.int("distance", first_part + speed2, first_part + 8 * speed2, step=speed2)
    text = (
        f"{who} is driving {distance} miles to visit {who.his} aunt. {who.pronoun.capitalize()} drives the first "
        f"{hours1} hours at {speed1} miles per hour and the rest of the way at {speed2} miles per hour. "
        f"How many hours does the whole trip take?"
    )
    return text, hours1 + (distance - first_part) // speed2


@template("rates", 6, steps=3, into=TEMPLATES)
def gas_for_a_round_trip(d: Draw):
    who = d.name("who")
    place = d.choice("place", ("lake", "beach", "farm", "museum", "national park", "ski resort"))
    distance = d.int("distance", 30, 300, step=5)
    mpg = d.int("mpg", 20, 40, step=5)
    price = d.int("price", 2, 6)
    d.need((2 * distance) % mpg == 0)
    text = (
        f"{who} drives to a {place} {distance} miles away and comes back home the same way. {who.his.capitalize()} "
        f"car goes {mpg} miles on each gallon of gas, and gas costs ${price} per gallon. How many dollars does "
        f"{who} spend on gas for the round trip?"
    )
    return text, 2 * distance // mpg * price


@template("rates", 7, steps=5, into=TEMPLATES)
def drive_to_meet(d: Draw):
    first = d.name("first")
    second = d.name("second", other=[first])
    speed1, speed2 = d.int("speed1", 40, 70, step=5), d.int("speed2", 40, 70, step=5)
    later = d.int("later", 1, 3)
    ahead, closing = speed1 * later, speed1 + speed2
    apart = d.int("apart", ahead + closing, ahead + 5 * closing, step=closing)
    text = (
        f"{first} and {second} live {apart} miles apart on the same highway, and they drive toward each other to "
        f"meet. {first} leaves first, driving at {speed1} miles per hour. {second} leaves "
        f"{plural(later, 'hour')} later, driving at {speed2} miles per hour. How many hours after {first} leaves "
        f"do they meet?"
    )
    return text, later + (apart - ahead) // closing


@template("rates", 8, steps=4, into=TEMPLATES)
def catch_up(d: Draw):
    first = d.name("first")
    second = d.name("second", other=[first])
    slow, later = d.int("slow", 10, 20), d.int("later", 1, 3)
    fast = d.choice("fast", [slow + gap for gap in range(2, 21) if slow * later % gap == 0])
    text = (
        f"{first} leaves home on a bike and rides at {slow} kilometers per hour. {plural(later, 'hour')} later, "
        f"{second} sets off from the same home along the same road on a scooter at {fast} kilometers per hour. "
        f"How many kilometers from home is {second} when {second.pronoun} catches up with {first}?"
    )
    return text, fast * (slow * later // (fast - slow))


@template("rates", 9, steps=5, into=TEMPLATES)
def second_hose(d: Draw):
    who = d.name("who")
    first, second = d.int("first", 5, 20), d.int("second", 5, 20)
    alone = d.int("alone", 5, 30, step=5)
    head_start, together = first * alone, first + second
    volume = d.int("volume", head_start + 4 * together, head_start + 25 * together, step=together)
    text = (
        f"{who} is filling a small pool that holds {volume} liters. {who.pronoun.capitalize()} starts with a hose "
        f"that gives {first} liters per minute. After {alone} minutes, a neighbor adds a second hose that gives "
        f"{second} liters per minute, and both hoses run until the pool is full. How many minutes after {who} "
        f"started is the pool full?"
    )
    return text, alone + (volume - head_start) // together


@template("rates", 10, steps=7, into=TEMPLATES)
def chair_order(d: Draw):
    order = d.int("order", 150, 900, step=10)
    workers, each = d.int("workers", 3, 8), d.int("each", 2, 6)
    days1, extra, days2 = d.int("days1", 2, 5), d.int("extra", 2, 6), d.int("days2", 2, 5)
    made = workers * each * days1 + (workers + extra) * each * days2
    d.need(made < order)
    text = (
        f"A workshop has an order for {order} chairs. It has {workers} workers, and each worker builds {each} "
        f"chairs a day. After {days1} days, {extra} more workers join, and they build chairs at the same pace. "
        f"All the workers then work together for {days2} more days. How many chairs are still left to build?"
    )
    return text, order - made


@template("rates", 11, steps=6, into=TEMPLATES)
def beach_ride(d: Draw):
    who = d.name("who")
    distance = d.int("distance", 6, 40, step=2)
    fits = [speed for speed in range(10, 26) if 60 * distance % speed == 0]
    there = d.choice("there", fits)
    back = d.choice("back", [speed for speed in fits if speed != there])
    stay = d.int("stay", 30, 150, step=15)
    text = (
        f"{who} rides {who.his} bike {distance} kilometers to the beach at {there} kilometers per hour, stays there "
        f"for {stay} minutes, and rides home the same way at {back} kilometers per hour. How many minutes pass "
        f"from when {who} leaves home until {who.pronoun} gets back?"
    )
    return text, 60 * distance // there + stay + 60 * distance // back


@template("rates", 12, steps=6, into=TEMPLATES)
def gym_membership(d: Draw):
    who = d.name("who")
    visit, member_visit = d.int("visit", 12, 25), d.int("member_visit", 2, 8)
    fee = d.int("fee", 20, 60, step=5)
    times, months = d.int("times", 4, 12), d.int("months", 2, 6)
    saved = times * months * visit - (months * fee + times * months * member_visit)
    d.need(saved > 0)
    text = (
        f"A climbing gym charges ${visit} for each visit. Members pay ${fee} a month and then only ${member_visit} "
        f"for each visit. {who} goes climbing {times} times every month. Over {months} months, how many dollars "
        f"does {who} save by being a member instead of paying the full price for each visit?"
    )
    return text, saved


@template("rates", 13, steps=7, into=TEMPLATES)
def two_machines(d: Draw):
    first, second = d.int("first", 3, 9), d.int("second", 2, 8)
    hours = d.int("hours", 2, 8)
    stopped = d.int("stopped", 10, 90, step=10)
    box = d.choice("box", (20, 25, 40, 50, 100))
    price = d.int("price", 2, 9)
    caps = first * 60 * hours + second * (60 * hours - stopped)
    d.need(stopped < 60 * hours and caps % box == 0)
    text = (
        f"A factory has two machines that make bottle caps. The first makes {first} caps per minute and the "
        f"second makes {second} caps per minute. Both are switched on for a shift of {hours} hours, but the second "
        f"machine is stopped for {stopped} minutes of repairs. The caps are packed in boxes of {box}, and each "
        f"box sells for ${price}. How many dollars do the caps made in the shift sell for?"
    )
    return text, caps // box * price
