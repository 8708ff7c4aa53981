"""Word-problem templates about money: change, savings, discounts, wages, unit prices, profit and coins."""

from __future__ import annotations

from fractions import Fraction

from dropmatch.lab.word_problems.base import Draw, money, plural, template

TEMPLATES: list = []

GOODS = ("notebooks", "sandwiches", "picture frames", "bags of rice", "towels", "candles", "flower pots")
WANTS = ("bicycle", "guitar", "tablet", "telescope", "skateboard", "sewing machine", "tent")
CLOTHES = ("jackets", "backpacks", "pairs of shoes", "lamps", "sweaters", "board games")
SNACKS = ("muffins", "bagels", "apples", "granola bars", "cookies")
DRINKS = ("bottles of water", "cups of juice", "cartons of milk", "cans of soda")
CENT_PRICES = ("0.50", "0.75", "1.25", "1.50", "1.75", "2.25", "2.50", "2.75")
PACKED = ("batteries", "pencils", "tennis balls", "light bulbs", "paper plates", "markers")
SOLD = ("bicycles", "sofas", "vacuum cleaners", "phones", "washing machines")
CUP_PRICES = ("0.50", "0.75", "1.25", "1.50", "2.50")
TREATS = ("book", "puzzle", "toy car", "kite", "board game")


@template("money", 1, steps=2, into=TEMPLATES)
def change_from_bill(d: Draw):
    who = d.name("who")
    goods = d.choice("goods", GOODS)
    count, price = d.int("count", 2, 9), d.int("price", 2, 15)
    bill = d.choice("bill", (20, 50, 100))
    d.need(count * price < bill)
    text = (
        f"{who} buys {count} {goods} that cost ${price} each and pays with a ${bill} bill. "
        f"How many dollars of change does {who} get back?"
    )
    return text, bill - count * price


@template("money", 2, steps=2, into=TEMPLATES)
def weeks_of_saving(d: Draw):
    who = d.name("who")
    want = d.choice("want", WANTS)
    saved, weekly = d.int("saved", 10, 120), d.int("weekly", 5, 30, step=5)
    cost = d.int("cost", saved + 2 * weekly, saved + 25 * weekly, step=weekly)  # reached in whole weeks
    d.need(cost > saved and (cost - saved) % weekly == 0)
    text = (
        f"{who} wants a {want} that costs ${cost}. {who.pronoun.capitalize()} has already saved ${saved} and "
        f"saves ${weekly} more every week. How many weeks will it take {who} to have exactly ${cost}?"
    )
    return text, (cost - saved) // weekly


@template("money", 3, steps=3, into=TEMPLATES)
def percent_off(d: Draw):
    who = d.name("who")
    goods = d.choice("goods", CLOTHES)
    price, off, count = d.int("price", 20, 180, step=10), d.int("off", 10, 50, step=5), d.int("count", 2, 6)
    d.need(price * off % 100 == 0)
    text = (
        f"A store sells {goods} for ${price} each. This week everything in the store is {off}% off. "
        f"{who} buys {count} {goods} this week. How many dollars does {who} spend?"
    )
    return text, (price - price * off // 100) * count


@template("money", 4, steps=3, into=TEMPLATES)
def snacks_and_drinks(d: Draw):
    who = d.name("who")
    snack, drink = d.choice("snack", SNACKS), d.choice("drink", DRINKS)
    snacks, drinks = d.int("snacks", 2, 12, step=2), d.int("drinks", 2, 12, step=2)
    snack_price, drink_price = d.choice("snack_price", CENT_PRICES), d.choice("drink_price", CENT_PRICES)
    total = snacks * Fraction(snack_price) + drinks * Fraction(drink_price)
    d.need(total.denominator == 1)
    text = (
        f"For a class picnic, {who} buys {snacks} {snack} at ${snack_price} each and {drinks} {drink} at "
        f"${drink_price} each. How many dollars does {who} spend in all?"
    )
    return text, total


@template("money", 5, steps=3, into=TEMPLATES)
def allowance_saved(d: Draw):
    who = d.name("who")
    part = d.int("part", 2, 5)
    allowance = d.int("allowance", 2 * part, 10 * part, step=part)
    d.need(allowance % part == 0)
    weeks = d.int("weeks", 3, 12)
    text = (
        f"{who} gets ${allowance} of allowance every week. Each week {who.pronoun} spends 1/{part} of it on snacks "
        f"and saves the rest. How many dollars does {who} save in {weeks} weeks?"
    )
    return text, (allowance - allowance // part) * weeks


@template("money", 6, steps=4, into=TEMPLATES)
def parking(d: Draw):
    who = d.name("who")
    first, extra = d.int("first", 3, 10), d.int("extra", 1, 6)
    hours, days = d.int("hours", 2, 9), d.int("days", 2, 6)
    text = (
        f"A parking garage charges ${first} for the first hour and ${extra} for each hour after that. "
        f"{who} parks there for {hours} hours on each of {days} days. How many dollars does {who} pay in all?"
    )
    return text, (first + (hours - 1) * extra) * days


@template("money", 7, steps=5, into=TEMPLATES)
def overtime(d: Draw):
    who = d.name("who")
    rate = d.int("rate", 10, 30, step=2)
    base = d.choice("base", (35, 36, 38, 40))
    hours = d.int("hours", base + 2, base + 15)
    text = (
        f"{who} earns ${rate} an hour for the first {base} hours {who.pronoun} works in a week. For every hour "
        f"over {base}, {who.pronoun} earns 1.5 times {who.his} usual hourly rate. Last week {who} worked {hours} "
        f"hours. How many dollars did {who} earn last week?"
    )
    return text, base * rate + (hours - base) * Fraction(3, 2) * rate


@template("money", 8, steps=5, into=TEMPLATES)
def cheaper_store(d: Draw):
    who = d.name("who")
    goods = d.choice("goods", PACKED)
    pack1, pack2 = d.choice("pack1", (4, 5, 6, 8, 10, 12)), d.choice("pack2", (4, 5, 6, 8, 10, 12))
    d.need(pack1 != pack2)
    lcm = pack1 * pack2 // _gcd(pack1, pack2)
    need = d.int("need", lcm, lcm * max(1, 240 // lcm), step=lcm)  # whole packs at either store
    d.need(need % pack1 == 0 and need % pack2 == 0)
    price1, price2 = d.int("price1", 2, 15), d.int("price2", 2, 15)
    cost1, cost2 = need // pack1 * price1, need // pack2 * price2
    d.need(cost1 != cost2)
    text = (
        f"{who} needs {need} {goods}. One store sells them in packs of {pack1} for ${price1} a pack. Another "
        f"store sells them in packs of {pack2} for ${price2} a pack. How many dollars does {who} save by buying "
        f"all {need} {goods} at the cheaper store instead of the other one?"
    )
    return text, abs(cost1 - cost2)


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


@template("money", 9, steps=5, into=TEMPLATES)
def bake_sale(d: Draw):
    who = d.name("who")
    batches, bag = d.int("batches", 2, 6), d.int("bag", 3, 6)
    per_batch = d.int("per_batch", 3 * bag, 8 * bag, step=bag)  # whole bags
    d.need(per_batch % bag == 0)
    price, cost = d.int("price", 2, 8), d.int("cost", 2, 12)
    profit = batches * per_batch // bag * price - batches * cost
    d.need(profit > 0)
    text = (
        f"{who} bakes {batches} batches of cookies with {per_batch} cookies in each batch. "
        f"{who.pronoun.capitalize()} sells the cookies in bags of {bag} for ${price} a bag. The ingredients cost "
        f"${cost} for each batch. If {who} sells every bag, how many dollars of profit does {who.pronoun} make?"
    )
    return text, profit


@template("money", 10, steps=6, into=TEMPLATES)
def split_the_bill(d: Draw):
    who = d.name("who")
    pizzas, pizza = d.int("pizzas", 2, 5), d.int("pizza", 10, 20)
    drinks, drink = d.int("drinks", 2, 8), d.int("drink", 2, 5)
    food = pizzas * pizza + drinks * drink
    tip = d.choice("tip", [t for t in (10, 15, 20, 25) if food * t % 100 == 0] or [20])
    d.need(food * tip % 100 == 0)
    bill = food + food * tip // 100
    friends = d.choice("friends", [n for n in range(3, 9) if bill % n == 0] or [7])
    d.need(bill % friends == 0)
    text = (
        f"{who} and {who.his} friends, {friends} people in all, order {pizzas} pizzas at ${pizza} each and "
        f"{drinks} drinks at ${drink} each. They add a {tip}% tip on the cost of the food and drinks, and split "
        f"the whole bill equally among the {friends} of them. How many dollars does each person pay?"
    )
    return text, bill // friends


@template("money", 11, steps=6, into=TEMPLATES)
def commission(d: Draw):
    who = d.name("who")
    goods = d.choice("goods", SOLD)
    base, share = d.int("base", 800, 2000, step=50), d.choice("share", (5, 10, 15, 20))
    count, price = d.int("count", 5, 40), d.int("price", 20, 200, step=10)
    d.need(count * price * share % 100 == 0)
    rent, food = d.int("rent", 400, 900, step=25), d.int("food", 100, 400, step=10)
    left = base + count * price * share // 100 - rent - food
    d.need(left > 0 and left % 2 == 0)
    text = (
        f"{who} sells {goods}. Each month {who.pronoun} is paid ${base} plus {share}% of the money from "
        f"{who.his} sales. In May, {who} sold {count} {goods} at ${price} each. From May's pay, {who.pronoun} "
        f"paid ${rent} for rent and ${food} for food, then put half of what was left into savings. "
        f"How many dollars did {who} put into savings?"
    )
    return text, left // 2


@template("money", 12, steps=6, into=TEMPLATES)
def lemonade_stand(d: Draw):
    who = d.name("who")
    friday, times, fewer = d.int("friday", 8, 30), d.int("times", 2, 3), d.int("fewer", 1, 15)
    saturday = friday * times
    price = d.choice("price", CUP_PRICES)
    spent = d.int("spent", 5, 30)
    cups = friday + saturday + (saturday - fewer)
    profit = cups * Fraction(price) - spent
    d.need(profit.denominator == 1 and profit > 0)
    text = (
        f"{who} runs a lemonade stand. {who.pronoun.capitalize()} sells {friday} cups on Friday. On Saturday "
        f"{who.pronoun} sells {times} times as many cups as on Friday, and on Sunday {who.pronoun} sells "
        f"{plural(fewer, 'fewer cup', 'fewer cups')} than on Saturday. {who} charges ${price} for each cup and "
        f"spent ${spent} on lemons, sugar and cups. How many dollars of profit does {who} make over the three days?"
    )
    return text, profit


@template("money", 13, steps=8, into=TEMPLATES)
def piggy_bank(d: Draw):
    who = d.name("who")
    quarters, dimes = d.int("quarters", 4, 30), d.int("dimes", 3, 25)
    nickels, pennies = d.int("nickels", 2, 20), d.int("pennies", 1, 30)
    treat = d.choice("treat", TREATS)
    dollars, cents = d.int("dollars", 2, 8), d.int("cents", 5, 95, step=5)
    price = 100 * dollars + cents
    have = 25 * quarters + 10 * dimes + 5 * nickels + pennies
    d.need(have >= price)
    text = (
        f"{who} opens {who.his} piggy bank and finds {quarters} quarters, {dimes} dimes, {nickels} nickels and "
        f"{plural(pennies, 'penny', 'pennies')}. {who.pronoun.capitalize()} buys a {treat} that costs "
        f"{money(Fraction(price, 100))}. How many cents does {who} have left?"
    )
    return text, have - price
