"""Word-problem templates about percentages: discounts, tax and tips, commission and markup, percent more and
fewer, percent change, and a whole found from its percent."""

from __future__ import annotations

from fractions import Fraction

from dropmatch.lab.word_problems.base import Draw, money, template

TEMPLATES: list = []

STORE_ITEMS = ("jacket", "lamp", "blender", "backpack", "pair of boots", "desk chair", "tennis racket")
BIG_BUYS = ("bike", "laptop", "keyboard", "scooter", "camera", "telescope")
MEALS = ("dinner", "lunch", "birthday dinner", "family brunch")
SPORTS = ("soccer", "basketball", "volleyball", "baseball")
TICKETS = ("concert ticket", "museum pass", "bus pass", "gym membership", "swimming pass")
FACTORY_GOODS = ("toy cars", "lamps", "mugs", "teddy bears", "kites")
SHOP_GOODS = ("scarves", "mugs", "phone cases", "notebooks", "water bottles", "candles")
BAKED = ("loaves of bread", "pies", "cakes", "baguettes", "trays of cookies")
TEAMS = ("Tigers", "Eagles", "Sharks", "Wolves", "Hawks", "Bears")


def _percent(d: Draw, key: str, low: int, high: int, step: int = 5) -> int:
    return d.int(key, low, high, step=step)


@template("percentages", 1, steps=2, into=TEMPLATES)
def sale_price(d: Draw):
    who = d.name("who")
    item = d.choice("item", STORE_ITEMS)
    price = d.int("price", 20, 400, step=10)
    off = _percent(d, "off", 10, 60)
    d.need(price * off % 100 == 0)
    text = (
        f"{who} wants a {item} that costs {money(price)}. This week the store has it on sale for {off}% off. "
        f"How many dollars does the {item} cost on sale?"
    )
    return text, price - price * off // 100


@template("percentages", 2, steps=2, into=TEMPLATES)
def whole_from_percent(d: Draw):
    who = d.name("who")
    item = d.choice("item", BIG_BUYS)
    share = d.choice("share", (10, 20, 25, 30, 40, 50, 60, 75, 80))
    saved = d.int("saved", 20, 400, step=5)
    price = Fraction(saved * 100, share)
    d.need(price.denominator == 1 and price <= 1200)
    text = (
        f"{who} has saved {money(saved)} so far, which is {share}% of the price of a {item}. How many more "
        f"dollars does {who} need to save to buy the {item}?"
    )
    return text, price - saved


@template("percentages", 3, steps=3, into=TEMPLATES)
def tax_and_tip(d: Draw):
    who = d.name("who")
    meal = d.choice("meal", MEALS)
    bill = d.int("bill", 20, 300, step=10)
    tax, tip = d.choice("tax", (5, 10)), d.choice("tip", (10, 15, 20, 25))
    d.need(bill * (tax + tip) % 100 == 0)
    text = (
        f"The {meal} {who} ordered costs {money(bill)}. The sales tax is {tax}% of that price, and {who} also "
        f"leaves a tip of {tip}% of that price. How many dollars does {who} pay in all?"
    )
    return text, bill + Fraction(bill * tax, 100) + Fraction(bill * tip, 100)


@template("percentages", 4, steps=3, into=TEMPLATES)
def percent_of_percent(d: Draw):
    who = d.name("who")
    sport = d.choice("sport", SPORTS)
    students = d.int("students", 200, 1000, step=100)
    play = _percent(d, "play", 20, 80)
    team = d.choice("team", (10, 20, 25, 40, 50, 60, 75))
    players = students * play // 100
    d.need(players * team % 100 == 0)
    text = (
        f"{who}'s school has {students} students. {play}% of the students play a sport, and {team}% of the "
        f"students who play a sport are on the {sport} team. How many students play a sport but are not on the "
        f"{sport} team?"
    )
    return text, players - players * team // 100


@template("percentages", 5, steps=4, into=TEMPLATES)
def two_discounts(d: Draw):
    who = d.name("who")
    item = d.choice("item", STORE_ITEMS)
    price = d.int("price", 40, 500, step=20)
    off = _percent(d, "off", 10, 50)
    coupon = d.choice("coupon", (10, 20, 25, 50))
    sale = Fraction(price * (100 - off), 100)
    final = sale * (100 - coupon) / 100
    d.need(final.denominator == 1 and (sale * coupon / 100).denominator == 1)
    text = (
        f"A {item} has a price tag of {money(price)}. The store takes {off}% off the price, and {who} has a "
        f"coupon for another {coupon}% off the sale price. How many dollars does {who} pay for the {item}?"
    )
    return text, final


@template("percentages", 6, steps=6, into=TEMPLATES)
def percent_of_everyone(d: Draw):
    who = d.name("who")
    club = d.choice("club", ("chess club", "school choir", "robotics club", "art club"))
    students = d.choice("students", (200, 300, 400, 600))
    boys = d.int("boys", 60, students - 60, step=20)
    d.need(2 * boys != students)
    boys_pct, girls_pct = d.int("boys_pct", 10, 70, step=10), d.int("girls_pct", 10, 70, step=10)
    d.need(boys_pct != girls_pct)
    joined = Fraction(boys * boys_pct, 100) + Fraction((students - boys) * girls_pct, 100)
    pct = joined * 100 / students
    d.need(pct.denominator == 1)
    text = (
        f"{who}'s school has {students} students, and {boys} of them are boys. {boys_pct}% of the boys and "
        f"{girls_pct}% of the girls joined the {club}. What percent of all the students at the school joined the "
        f"{club}?"
    )
    return text, pct


@template("percentages", 7, steps=3, into=TEMPLATES)
def percent_increase(d: Draw):
    who = d.name("who")
    ticket = d.choice("ticket", TICKETS)
    before = d.choice("before", (20, 25, 40, 50, 60, 75, 80, 100, 120, 150, 200))
    after = d.int("after", before + 1, before * 2)
    change = Fraction((after - before) * 100, before)
    d.need(change.denominator == 1)
    text = (
        f"Last year a {ticket} cost {money(before)}. This year {who} paid {money(after)} for the same {ticket}. "
        f"By what percent did the price go up?"
    )
    return text, change


@template("percentages", 8, steps=6, into=TEMPLATES)
def defects_repaired(d: Draw):
    goods = d.choice("goods", FACTORY_GOODS)
    who = d.name("who")
    per_day, days = d.int("per_day", 10, 80, step=10), d.int("days", 2, 5)
    bad = _percent(d, "bad", 5, 30)
    fixed = d.choice("fixed", (20, 25, 40, 50, 60, 75, 80))
    price = d.int("price", 2, 8)
    made = per_day * days
    defective = Fraction(made * bad, 100)
    repaired = defective * fixed / 100
    d.need(defective.denominator == 1 and repaired.denominator == 1)
    text = (
        f"{who}'s workshop makes {per_day} {goods} a day for {days} days. {bad}% of them have a defect. "
        f"The workers repair {fixed}% of the ones with a defect and throw the rest away. {who} sells all the "
        f"{goods} that are not thrown away for {money(price)} each. How many dollars does {who} get for them?"
    )
    return text, (made - defective + repaired) * price


@template("percentages", 9, steps=5, into=TEMPLATES)
def pay_plus_commission(d: Draw):
    who = d.name("who")
    base = d.int("base", 100, 300, step=25)
    rate = d.choice("rate", (2, 4, 5, 8, 10, 15))
    first, second = d.int("first", 3, 20), d.int("second", 3, 20)
    d.need(first != second)
    phone = d.int("phone", 100, 500, step=50)
    commission = Fraction((first + second) * phone * rate, 100)
    d.need(commission.denominator == 1)
    text = (
        f"{who} sells phones. {who} is paid {money(base)} a week plus {rate}% of the price of every phone "
        f"{who.pronoun} sells. Each phone costs {money(phone)}. {who} sells {first} phones in the first week and "
        f"{second} phones in the second week. How many dollars does {who} earn in the two weeks?"
    )
    return text, 2 * base + commission


@template("percentages", 10, steps=5, into=TEMPLATES)
def markup_profit(d: Draw):
    who = d.name("who")
    goods = d.choice("goods", SHOP_GOODS)
    bought = d.int("bought", 20, 100, step=5)
    markup = d.choice("markup", (25, 50, 75, 100))
    cost = d.int("cost", 4, 24, step={25: 4, 50: 2, 75: 4, 100: 1}[markup])
    sell_price = cost * (100 + markup) // 100
    sold = d.int("sold", bought * 100 // (100 + markup) + 1, bought - 1)
    profit = sold * sell_price - bought * cost
    text = (
        f"{who}'s shop buys {bought} {goods} for {money(cost)} each and sells them for {markup}% more than it "
        f"paid. By the end of the month the shop has sold {sold} of the {goods}. How many dollars more has the "
        f"shop taken in from selling {goods} than it paid for all {bought} of them?"
    )
    return text, profit


@template("percentages", 11, steps=6, into=TEMPLATES)
def split_the_rest(d: Draw):
    who = d.name("who")
    income = d.int("income", 600, 2400, step=100)
    rent, food = _percent(d, "rent", 20, 40), _percent(d, "food", 10, 25)
    months = d.int("months", 2, 4)
    rest = Fraction(income * (100 - rent - food), 100)
    d.need(rest.denominator == 1 and rest % 2 == 0)
    text = (
        f"{who} earns {money(income)} a month. Each month {who.pronoun} spends {rent}% of it on rent and {food}% "
        f"of it on food, then splits what is left equally between savings and fun. How many dollars does {who} "
        f"put into savings in {months} months?"
    )
    return text, rest / 2 * months


@template("percentages", 12, steps=7, into=TEMPLATES)
def full_price_and_marked_down(d: Draw):
    who = d.name("who")
    goods = d.choice("goods", BAKED)
    baked = d.int("baked", 40, 160, step=20)
    full = _percent(d, "full", 50, 90)
    price = d.int("price", 2, 10)
    off = d.choice("off", [o for o in (20, 25, 40, 50) if price * o % 100 == 0] or [0])
    d.need(off > 0)
    at_full = baked * full // 100
    text = (
        f"{who}'s bakery baked {baked} {goods} today. It sold {full}% of them at the full price of {money(price)} "
        f"each. Near closing time it sold all the rest for {off}% off the full price. How many dollars did the "
        f"bakery take in for the {goods} today?"
    )
    return text, at_full * price + (baked - at_full) * Fraction(price * (100 - off), 100)


@template("percentages", 13, steps=5, into=TEMPLATES)
def more_and_fewer(d: Draw):
    who = d.name("who")
    first = d.choice("team1", TEAMS)
    second = d.choice("team2", [t for t in TEAMS if t != first])
    third = d.choice("team3", [t for t in TEAMS if t not in (first, second)])
    points = d.int("points", 100, 400, step=10)
    more = _percent(d, "more", 10, 50)
    d.need(points * more % 100 == 0)
    second_points = points * (100 + more) // 100
    fewer = d.choice("fewer", [f for f in range(10, 45, 5) if second_points * f % 100 == 0] or [0])
    d.need(fewer > 0)
    third_points = second_points * (100 - fewer) // 100
    text = (
        f"In {who}'s basketball league, the {first} scored {points} points this season. The {second} scored "
        f"{more}% more points than the {first}, and the {third} scored {fewer}% fewer points than the {second}. "
        f"How many points did the three teams score in all?"
    )
    return text, points + second_points + third_points
