"""Word-problem templates about units of measure: feet and inches, pounds and ounces, liters and milliliters,
kilograms and grams, gallons and cups, converted on the way to the answer."""

from __future__ import annotations

from dropmatch.lab.word_problems.base import Draw, money, plural, template

TEMPLATES: list = []

RIBBONS = ("ribbon", "lace", "string", "yarn")
GRAINS = ("rice", "flour", "sugar", "lentils", "oats")
DRINKS = ("water", "milk", "juice", "tea")
FENCES = ("garden", "field", "pasture", "playground")
BAKES = ("cookies", "muffins", "brownies", "scones")
SHELF_ITEMS = ("books", "folders", "notebooks", "photo albums")
HEAVY = ("books", "tiles", "paint cans", "tools")
BAGS = ("flour", "rice", "sugar", "salt")
GARMENTS = ("shirt", "skirt", "apron", "vest")
ROOMS = ("bedroom", "kitchen", "classroom", "office", "hallway")
CORDS = ("rope", "cord", "twine", "string")


def article(n: int) -> str:
    """'a' or 'an' before a number said aloud: an 8-pound, an 11-pound, a 12-pound."""
    return "an" if str(n).startswith("8") or n in (11, 18) else "a"


@template("units", 1, steps=2, into=TEMPLATES)
def ribbon_pieces(d: Draw):
    who = d.name("who")
    stuff = d.choice("stuff", RIBBONS)
    feet, inches = d.int("feet", 5, 30), d.int("inches", 3, 10)
    d.need(feet * 12 % inches == 0)
    text = (
        f"{who} has {feet} feet of {stuff}. {who.pronoun.capitalize()} cuts all of it into pieces that are each "
        f"{inches} inches long, with nothing left over. How many pieces does {who} get?"
    )
    return text, feet * 12 // inches


@template("units", 2, steps=2, into=TEMPLATES)
def grams_left(d: Draw):
    who = d.name("who")
    grain = d.choice("grain", GRAINS)
    kilos, used = d.int("kilos", 2, 9), d.int("used", 150, 1800, step=50)
    d.need(used < kilos * 1000)
    text = (
        f"{who} bought {article(kilos)} {kilos}-kilogram bag of {grain}. Over the week {who.pronoun} cooked with "
        f"{used} grams of it. How many grams of {grain} are left in the bag?"
    )
    return text, kilos * 1000 - used


@template("units", 3, steps=3, into=TEMPLATES)
def bottles_to_liters(d: Draw):
    who = d.name("who")
    drink = d.choice("drink", DRINKS)
    ml = d.choice("ml", (200, 250, 400, 500, 750))
    per_day, days = d.int("per_day", 2, 6), d.int("days", 2, 14)
    d.need(ml * per_day * days % 1000 == 0)
    text = (
        f"{who} drinks {per_day} bottles of {drink} every day, and each bottle holds {ml} milliliters. How many "
        f"liters of {drink} does {who} drink in {days} days?"
    )
    return text, ml * per_day * days // 1000


@template("units", 4, steps=3, into=TEMPLATES)
def fence_posts(d: Draw):
    who = d.name("who")
    place = d.choice("place", FENCES)
    yards, gap = d.int("yards", 8, 60), d.choice("gap", (4, 5, 6, 8, 9, 10, 12))
    d.need(yards * 3 % gap == 0)
    text = (
        f"{who} is building a straight fence {yards} yards long along one side of a {place}. "
        f"{who.pronoun.capitalize()} puts a post at each end and a post every {gap} feet in between. How many "
        f"posts does the fence have?"
    )
    return text, yards * 3 // gap + 1


@template("units", 5, steps=4, into=TEMPLATES)
def butter_left(d: Draw):
    who = d.name("who")
    friend = d.name("friend", other=[who])
    bake = d.choice("bake", BAKES)
    packs, per_batch, batches = d.int("packs", 2, 6), d.int("per_batch", 3, 12), d.int("batches", 2, 6)
    gift = d.int("gift", 2, 10)
    left = 16 * packs - per_batch * batches - gift
    d.need(left > 0)
    text = (
        f"{who} bought {packs} packs of butter, and each pack weighs 1 pound. A pound is 16 ounces. "
        f"{who.pronoun.capitalize()} made {batches} batches of {bake}, using {per_batch} ounces of butter for each "
        f"batch, and then gave {gift} ounces of butter to {friend}. How many ounces of butter does {who} have left?"
    )
    return text, left


@template("units", 6, steps=4, into=TEMPLATES)
def shelf_space(d: Draw):
    who = d.name("who")
    items = d.choice("items", SHELF_ITEMS)
    shelves, meters, thick = d.int("shelves", 2, 6), d.int("meters", 1, 3), d.choice("thick", (2, 4, 5))
    have = d.int("have", 10, 300)
    room = shelves * (meters * 100 // thick)
    d.need(have < room)
    text = (
        f"{who} has a bookcase with {shelves} shelves, and each shelf is {plural(meters, 'meter')} long. Each of "
        f"{who.his} {items} is {thick} centimeters thick and stands upright on a shelf. {who.pronoun.capitalize()} "
        f"has already put {have} {items} on the shelves. How many more {items} can fit on the bookcase?"
    )
    return text, room - have


@template("units", 7, steps=5, into=TEMPLATES)
def lemonade_profit(d: Draw):
    who = d.name("who")
    gallons, cup = d.int("gallons", 2, 6), d.choice("cup", (8, 12, 16))
    free, price, cost = d.int("free", 2, 10), d.int("price", 1, 3), d.int("cost", 8, 30)
    cups = gallons * 128 // cup
    profit = (cups - free) * price - cost
    d.need(gallons * 128 % cup == 0 and profit > 0)
    text = (
        f"{who} made {gallons} gallons of lemonade for a stand. A gallon is 128 ounces. {who.pronoun.capitalize()} "
        f"poured all of the lemonade into cups that each hold {cup} ounces, gave {free} cups away to friends for "
        f"free, and sold each of the other cups for {money(price)}. The lemons and sugar cost {who.him} "
        f"{money(cost)}. How many dollars of profit did {who} make?"
    )
    return text, profit


@template("units", 8, steps=5, into=TEMPLATES)
def van_load(d: Draw):
    who = d.name("who")
    heavy, bag = d.choice("heavy", HEAVY), d.choice("bag", BAGS)
    limit = d.int("limit", 400, 900, step=50)
    boxes, box_kg = d.int("boxes", 5, 20), d.int("box_kg", 8, 25)
    bags, bag_g = d.int("bags", 4, 40), d.choice("bag_g", (250, 500, 750))
    left = limit * 1000 - boxes * box_kg * 1000 - bags * bag_g
    d.need(bags * bag_g % 1000 == 0 and left >= 0)
    text = (
        f"{who}'s delivery van can carry at most {limit} kilograms. {who.pronoun.capitalize()} loads {boxes} boxes "
        f"of {heavy} that weigh {box_kg} kilograms each, and {bags} bags of {bag} that weigh {bag_g} grams each. "
        f"How many more kilograms can the van carry?"
    )
    return text, left // 1000


@template("units", 9, steps=5, into=TEMPLATES)
def fabric_scarves(d: Draw):
    who = d.name("who")
    garment = d.choice("garment", GARMENTS)
    yards, made, feet_each = d.int("yards", 4, 12), d.int("made", 2, 6), d.int("feet_each", 2, 4)
    scarf = d.choice("scarf", (6, 8, 9, 12, 18))
    left_feet = 3 * yards - made * feet_each
    d.need(left_feet > 0 and left_feet * 12 % scarf == 0)
    text = (
        f"{who} has {yards} yards of cloth. {who.pronoun.capitalize()} sews {made} {garment}s, and each {garment} "
        f"uses {feet_each} feet of the cloth. {who.pronoun.capitalize()} cuts all the cloth that is left into "
        f"strips {scarf} inches long to make scarves. How many scarves does {who} make?"
    )
    return text, left_feet * 12 // scarf


@template("units", 10, steps=6, into=TEMPLATES)
def milk_sales(d: Draw):
    who = d.name("who")
    cows, liters, keep = d.int("cows", 3, 8), d.int("liters", 6, 15), d.int("keep", 2, 10)
    bottle, price, days = d.choice("bottle", (250, 500, 750, 1000)), d.int("price", 1, 3), d.int("days", 2, 5)
    sold = cows * liters - keep
    d.need(sold > 0 and sold * 1000 % bottle == 0)
    text = (
        f"{who} has {cows} cows, and each cow gives {liters} liters of milk a day. Every day {who.pronoun} keeps "
        f"{keep} liters for {who.his} family and pours the rest into bottles that hold {bottle} milliliters each. "
        f"{who.pronoun.capitalize()} sells every bottle for {money(price)}. How many dollars does {who} make from "
        f"milk in {days} days?"
    )
    return text, sold * 1000 // bottle * price * days


@template("units", 11, steps=8, into=TEMPLATES)
def joined_cords(d: Draw):
    who = d.name("who")
    cord = d.choice("cord", CORDS)
    feet1, inches1 = d.int("feet1", 2, 9), d.int("inches1", 1, 11)
    feet2, inches2 = d.int("feet2", 2, 9), d.int("inches2", 1, 11)
    yards = d.int("yards", 2, 5)
    piece = d.choice("piece", (3, 4, 6))
    total = 12 * feet1 + inches1 + 12 * feet2 + inches2 + 36 * yards
    d.need(total % piece == 0)
    text = (
        f"{who} has three pieces of {cord}. The first is {feet1} feet {plural(inches1, 'inch', 'inches')} long, "
        f"the second is {feet2} feet {plural(inches2, 'inch', 'inches')} long, and the third is {yards} yards "
        f"long. {who.pronoun.capitalize()} ties them into one long {cord} (the knots use up no length) and cuts it "
        f"into pieces that are each {piece} inches long, with nothing left over. How many pieces does {who} get?"
    )
    return text, total // piece


@template("units", 12, steps=6, into=TEMPLATES)
def paint_cans(d: Draw):
    who = d.name("who")
    room = d.choice("room", ROOMS)
    walls, ml, coats = d.int("walls", 2, 6), d.int("ml", 500, 1500, step=250), d.choice("coats", (2, 3))
    can, price = d.choice("can", (1, 2, 3)), d.int("price", 9, 30)
    need_ml = walls * ml * coats
    d.need(need_ml % (can * 1000) == 0 and need_ml // (can * 1000) >= 2)
    text = (
        f"{who} is painting {walls} walls of {who.his} {room}. Each coat of paint on one wall takes {ml} "
        f"milliliters of paint, and every wall gets {coats} coats. The paint comes in {can}-liter cans that cost "
        f"{money(price)} each. {who} already has 1 full can at home and buys just enough cans for the rest. How "
        f"many dollars does {who} spend on paint?"
    )
    return text, (need_ml // (can * 1000) - 1) * price


@template("units", 13, steps=7, into=TEMPLATES)
def sugar_sack(d: Draw):
    who = d.name("who")
    sack, old = d.int("sack", 3, 10), d.int("old", 100, 900, step=50)
    cakes, cake_g = d.int("cakes", 1, 3), d.int("cake_g", 100, 300, step=25)
    batches, batch_g = d.int("batches", 1, 3), d.int("batch_g", 75, 250, step=25)
    days = d.int("days", 2, 5)
    left = sack * 1000 + old - days * (cakes * cake_g + batches * batch_g)
    d.need(left >= 0 and cake_g != batch_g)
    text = (
        f"A baker named {who} had {old} grams of sugar left from last week and opened a new {sack}-kilogram sack of "
        f"sugar. Each day {who.pronoun} bakes {plural(cakes, 'cake')} and {plural(batches, 'batch', 'batches')} of "
        f"cookies. Each cake uses {cake_g} grams of sugar, and each batch of cookies uses {batch_g} grams. How "
        f"many grams of sugar does {who} have left after {days} days of baking?"
    )
    return text, left
