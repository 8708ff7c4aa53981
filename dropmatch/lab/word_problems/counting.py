"""Word-problem templates about counting: groups, sharing, leftovers, totals across containers, remainders and
combined inventories."""

from __future__ import annotations

from dropmatch.lab.word_problems.base import Draw, plural, template

TEMPLATES: list = []

BALLS = ("soccer balls", "basketballs", "jump ropes", "cones", "hula hoops")
SMALL_THINGS = ("marbles", "buttons", "beads", "seashells", "toy cars", "stickers")
BAKED = ("cookies", "muffins", "cupcakes", "brownies", "bagels")
FRUIT = ("apples", "oranges", "peaches", "pears", "lemons", "plums")
TWO_LEGGED = ("chickens", "ducks", "geese", "turkeys")
FOUR_LEGGED = ("goats", "sheep", "pigs", "cows", "horses")
CANNED = ("soup", "beans", "tomatoes", "corn", "peas")


def _dividing(d: Draw, key: str, total: int) -> int:
    """Draw `key`, a pack size from 4 to 12 that `total` fills exactly (refused when there is none)."""
    sizes = [n for n in (4, 5, 6, 8, 10, 12) if total % n == 0]
    d.need(bool(sizes))
    return d.choice(key, sizes)


@template("counting", 1, steps=2, into=TEMPLATES)
def teams_and_balls(d: Draw):
    who = d.name("who")
    size = d.int("size", 3, 8)
    kids = d.int("kids", 3 * size, 10 * size, step=size)
    each = d.int("each", 2, 6)
    item = d.choice("item", BALLS)
    text = (
        f"Coach {who} has {kids} kids at practice and splits them into teams of {size}. Each team gets {each} "
        f"{item}. How many {item} does {who} hand out in all?"
    )
    return text, kids // size * each


@template("counting", 2, steps=2, into=TEMPLATES)
def even_out_two_boxes(d: Draw):
    who = d.name("who")
    item = d.choice("item", SMALL_THINGS)
    red = d.int("red", 20, 95)
    blue = d.int("blue", 4 + red % 2, red - 2, step=2)  # the same parity as red: the move comes out whole
    text = (
        f"{who} keeps {item} in two boxes. The red box has {red} {item} and the blue box has {blue} {item}. "
        f"How many {item} must {who} move from the red box to the blue box so that both boxes hold the same "
        f"number?"
    )
    return text, (red - blue) // 2


@template("counting", 3, steps=2, into=TEMPLATES)
def leftovers(d: Draw):
    who = d.name("who")
    item = d.choice("item", BAKED)
    bag = d.int("bag", 4, 12)
    made = d.int("made", 30, 150)
    d.need(made % bag != 0)
    text = (
        f"{who} baked {made} {item} for a school fair. {who.pronoun.capitalize()} puts them into bags of {bag}, "
        f"filling as many bags as {who.pronoun} can, and keeps the ones that do not fill a whole bag. How many "
        f"{item} does {who} keep?"
    )
    return text, made % bag


@template("counting", 4, steps=3, into=TEMPLATES)
def crates_of_fruit(d: Draw):
    fruit = d.choice("fruit", FRUIT)
    crates, boxes = d.int("crates", 3, 12), d.int("boxes", 4, 10)
    each = d.int("each", 6, 24)
    bruised = d.int("bruised", 5, 60)
    d.need(bruised < crates * boxes * each)
    text = (
        f"A truck brings {crates} crates of {fruit} to a market. Each crate holds {boxes} boxes, and each box "
        f"holds {each} {fruit}. When the boxes are opened, {bruised} of the {fruit} are bruised and thrown away. "
        f"How many {fruit} are left to sell?"
    )
    return text, crates * boxes * each - bruised


@template("counting", 5, steps=6, into=TEMPLATES)
def pool_and_share(d: Draw):
    first = d.name("first")
    second = d.name("second", other=[first])
    third = d.name("third", other=[first, second])
    own, friends = d.int("own", 8, 40), d.int("friends", 1, 5)
    # the total, own + (own + more) + 2 * (own + more), must share out evenly among the 3 + friends people
    fits = [more for more in range(3, 21) if (4 * own + 3 * more) % (3 + friends) == 0]
    d.need(bool(fits))
    more = d.choice("more", fits)
    total = own + (own + more) + 2 * (own + more)
    text = (
        f"{first} has {own} marbles. {second} has {more} more marbles than {first}, and {third} has twice as "
        f"many marbles as {second}. They put all their marbles in one bag and share them equally among the 3 of "
        f"them and {plural(friends, 'other friend')}. How many marbles does each person get?"
    )
    return text, total // (3 + friends)


@template("counting", 6, steps=4, into=TEMPLATES)
def empty_bus_seats(d: Draw):
    students, teachers = d.int("students", 40, 200), d.int("teachers", 3, 12)
    seats = d.int("seats", 20, 50, step=2)
    people = students + teachers
    d.need(people % seats != 0 and people > seats)
    buses = -(-people // seats)
    text = (
        f"{students} students and {teachers} teachers are going on a field trip. Each bus has {seats} seats, and "
        f"the school orders the fewest buses that can carry everyone. How many seats on the buses are left "
        f"empty?"
    )
    return text, buses * seats - people


@template("counting", 7, steps=4, into=TEMPLATES)
def egg_cartons(d: Draw):
    who = d.name("who")
    hens, laid = d.int("hens", 4, 20), d.int("laid", 3, 6)
    weeks = d.int("weeks", 2, 6)
    broken = d.int("broken", 2, 15)
    carton = d.choice("carton", (6, 10, 12))
    eggs = hens * laid * weeks - broken
    d.need(eggs >= carton)
    text = (
        f"{who} keeps {hens} hens, and each hen lays {laid} eggs a week. Over {weeks} weeks, {broken} of the eggs "
        f"break. {who} packs the rest into cartons that hold {carton} eggs each. How many cartons can "
        f"{who.pronoun} fill completely?"
    )
    return text, eggs // carton


@template("counting", 8, steps=5, into=TEMPLATES)
def legs_and_heads(d: Draw):
    who = d.name("who")
    birds, beasts = d.choice("birds", TWO_LEGGED), d.choice("beasts", FOUR_LEGGED)
    two, four = d.int("two", 5, 40), d.int("four", 3, 30)
    text = (
        f"On {who}'s farm there are {two} {birds} and {four} {beasts}, and no other animals. Each of the {birds} "
        f"has 2 legs and each of the {beasts} has 4 legs. How many more legs than heads do these animals have "
        f"altogether?"
    )
    return text, (2 * two + 4 * four) - (two + four)


@template("counting", 9, steps=5, into=TEMPLATES)
def pen_shop(d: Draw):
    red, blue = d.int("red", 30, 150), d.int("blue", 30, 150)
    sold_red, sold_blue = d.int("sold_red", 5, red - 1), d.int("sold_blue", 5, blue - 1)
    boxes, per_box = d.int("boxes", 2, 10), d.int("per_box", 10, 24)
    text = (
        f"A stationery shop had {red} red pens and {blue} blue pens. On Monday it sold {sold_red} red pens and "
        f"{sold_blue} blue pens. On Tuesday a delivery of {boxes} boxes arrived, each with {per_box} pens. How "
        f"many pens does the shop have now?"
    )
    return text, red + blue - sold_red - sold_blue + boxes * per_box


@template("counting", 10, steps=6, into=TEMPLATES)
def cans_over_weeks(d: Draw):
    food = d.choice("food", CANNED)
    start, per_case = d.int("start", 4, 20), d.int("per_case", 6, 24, step=6)
    cases = d.int("cases", 2, 10)
    days, sold = d.int("days", 5, 7), d.int("sold", 5, 30)
    weeks = d.int("weeks", 2, 4)
    left = start * per_case + weeks * (cases * per_case - days * sold)
    d.need(left > 0)
    text = (
        f"A small shop has {start} cases of canned {food}, and every case holds {per_case} cans. For the next "
        f"{weeks} weeks, it gets {cases} more cases of the same size at the start of each week. The shop is open "
        f"{days} days a week and sells {sold} cans of {food} on each day it is open. How many cans of {food} does "
        f"the shop have at the end of the {weeks} weeks?"
    )
    return text, left


@template("counting", 11, steps=5, into=TEMPLATES)
def boxes_into_cartons(d: Draw):
    item = d.choice("item", BAKED)
    made = d.int("made", 200, 999)
    box, per_carton = d.int("box", 4, 12), d.int("per_carton", 5, 12)
    d.need(made >= box * per_carton and made % (box * per_carton) != 0)
    shipped = made // box // per_carton * per_carton * box
    text = (
        f"A bakery makes {made} {item}. They are packed {box} to a box, and only full boxes are made. The full "
        f"boxes are then packed {per_carton} to a carton, and only full cartons are shipped to stores. How many "
        f"of the {item} are not shipped?"
    )
    return text, made - shipped


@template("counting", 12, steps=8, into=TEMPLATES)
def art_kits(d: Draw):
    who = d.name("who")
    kits = d.int("kits", 6, 36, step=2)
    pencils, erasers, brushes = d.int("pencils", 2, 6), d.int("erasers", 2, 4), d.int("brushes", 2, 5)
    box = _dividing(d, "box", kits * pencils)
    pack = _dividing(d, "pack", kits * erasers)
    bundle = _dividing(d, "bundle", kits * brushes)
    text = (
        f"{who} is making {kits} art kits for a class. Each kit gets {pencils} pencils, {erasers} erasers and "
        f"{brushes} brushes. Pencils are sold in boxes of {box}, erasers in packs of {pack} and brushes in "
        f"bundles of {bundle}, and {who} buys exactly as many as the kits need, with none left over. How many "
        f"boxes, packs and bundles does {who} buy in all?"
    )
    return text, kits * pencils // box + kits * erasers // pack + kits * brushes // bundle


@template("counting", 13, steps=7, into=TEMPLATES)
def supply_closet(d: Draw):
    crayon_boxes, per_crayon_box = d.int("crayon_boxes", 5, 20), d.int("per_crayon_box", 8, 24, step=8)
    marker_boxes, per_marker_box = d.int("marker_boxes", 3, 15), d.int("per_marker_box", 6, 12, step=2)
    pencils = d.int("pencils", 20, 120)
    crayons, markers = crayon_boxes * per_crayon_box, marker_boxes * per_marker_box
    used_crayons = d.int("used_crayons", 10, crayons - 1)
    used_markers = d.int("used_markers", 5, markers - 1)
    used_pencils = d.int("used_pencils", 5, pencils - 1)
    text = (
        f"A school supply closet has {crayon_boxes} boxes of crayons with {per_crayon_box} crayons in each box, "
        f"{marker_boxes} boxes of markers with {per_marker_box} markers in each box, and {pencils} loose pencils. "
        f"During the term, students use up {used_crayons} crayons, {used_markers} markers and {used_pencils} "
        f"pencils. How many crayons, markers and pencils are left in the closet in all?"
    )
    return text, crayons + markers + pencils - used_crayons - used_markers - used_pencils
