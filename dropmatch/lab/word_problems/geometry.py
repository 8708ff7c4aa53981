"""Word-problem templates about geometry: perimeters, areas, volumes, angles and scale drawings."""

from __future__ import annotations

from dropmatch.lab.word_problems.base import Draw, money, plural, template

TEMPLATES: list = []

FENCED = ("garden", "dog run", "chicken yard", "vegetable patch", "play area", "goat pen")
ROOMS = ("kitchen", "hallway", "bathroom", "laundry room", "basement", "sunroom")
PARKS = ("park", "sports field", "parking lot", "school yard", "farm field")


@template("geometry", 1, steps=3, into=TEMPLATES)
def fence_with_gate(d: Draw):
    who = d.name("who")
    place = d.choice("place", FENCED)
    length = d.int("length", 10, 80)
    width = d.int("width", 5, length - 1)
    gate = d.int("gate", 3, 6)
    text = (
        f"{who} wants to put a fence around a rectangular {place} that is {length} feet long and {width} feet "
        f"wide. {who.pronoun.capitalize()} will leave a gap {gate} feet wide for a gate, with no fence across it. "
        f"How many feet of fence does {who} need?"
    )
    return text, 2 * (length + width) - gate


@template("geometry", 2, steps=2, into=TEMPLATES)
def third_angle(d: Draw):
    who = d.name("who")
    first = d.int("first", 20, 110)
    second = d.int("second", 15, 160 - first)
    text = (
        f"{who} cuts a triangle out of colored paper for an art project. One corner of the triangle has an angle "
        f"of {first} degrees and another corner has an angle of {second} degrees. How many degrees is the angle "
        f"at the third corner?"
    )
    return text, 180 - first - second


@template("geometry", 3, steps=3, into=TEMPLATES)
def floor_tiles(d: Draw):
    who = d.name("who")
    room = d.choice("room", ROOMS)
    side = d.int("side", 2, 3)
    length = d.int("length", 4 * side, 12 * side, step=side)
    width = d.int("width", 3 * side, 8 * side, step=side)
    text = (
        f"{who} is covering the floor of a {room} with square tiles. The floor is a rectangle {length} feet long "
        f"and {width} feet wide, and each tile is {side} feet long on each side. How many tiles does "
        f"{who.pronoun} need to cover the whole floor?"
    )
    return text, (length // side) * (width // side)


@template("geometry", 4, steps=3, into=TEMPLATES)
def area_from_perimeter(d: Draw):
    who = d.name("who")
    length = d.int("length", 10, 60)
    perimeter = d.int("perimeter", 2 * length + 4, 4 * length, step=2)
    text = (
        f"{who}'s family has a rectangular lawn. The fence all the way around it is {perimeter} meters long, "
        f"and the lawn is {length} meters long. How many square meters is the area of the lawn?"
    )
    return text, length * (perimeter // 2 - length)


@template("geometry", 5, steps=4, into=TEMPLATES)
def fish_tank(d: Draw):
    who = d.name("who")
    length = d.int("length", 40, 120, step=10)
    width = d.int("width", 20, min(50, length), step=10)
    depth = d.int("depth", 5, 25)
    full = d.int("full", depth + 5, 45)
    d.need(length * width * (full - depth) % 1000 == 0)
    text = (
        f"{who}'s fish tank is shaped like a box. Its bottom is {length} centimeters long and {width} centimeters "
        f"wide. The water in it is {depth} centimeters deep, and {who} adds water until it is {full} centimeters "
        f"deep. Every 1000 cubic centimeters of water is 1 liter. How many liters of water does {who} add?"
    )
    return text, length * width * (full - depth) // 1000


@template("geometry", 6, steps=3, into=TEMPLATES)
def map_scale_area(d: Draw):
    who = d.name("who")
    place = d.choice("place", PARKS)
    long = d.int("long", 3, 10)
    wide = d.int("wide", 2, min(8, long))
    scale = d.choice("scale", (2, 4, 5, 8, 10, 15, 20))
    text = (
        f"On {who}'s town map, a rectangular {place} is drawn {long} centimeters long and {wide} centimeters wide. "
        f"Every centimeter on the map stands for {scale} meters on the ground. How many square meters is the "
        f"real {place}?"
    )
    return text, (long * scale) * (wide * scale)


@template("geometry", 7, steps=5, into=TEMPLATES)
def grass_seed(d: Draw):
    who = d.name("who")
    length, width = d.int("length", 20, 60, step=5), d.int("width", 20, 50, step=5)
    patio_long, patio_wide = d.int("patio_long", 5, 15, step=5), d.int("patio_wide", 5, 15, step=5)
    grass = length * width - patio_long * patio_wide
    cover = d.choice("cover", [c for c in (25, 50, 75, 100, 150, 200) if grass % c == 0])
    price = d.int("price", 4, 15)
    text = (
        f"{who}'s backyard is a rectangle {length} feet long and {width} feet wide. A patio {patio_long} feet "
        f"long and {patio_wide} feet wide takes up one corner, and {who} wants to plant grass on all of the rest. "
        f"One bag of grass seed covers {cover} square feet and costs {money(price)}. How many dollars will {who} "
        f"spend on grass seed?"
    )
    return text, grass // cover * price


@template("geometry", 8, steps=5, into=TEMPLATES)
def blocks_in_a_box(d: Draw):
    who = d.name("who")
    side = d.int("side", 2, 4)
    length = d.int("length", 3 * side, 8 * side, step=side)
    width = d.int("width", 2 * side, 6 * side, step=side)
    height = d.int("height", 2 * side, 5 * side, step=side)
    text = (
        f"{who} is packing wooden blocks into a box. Each block is a cube {side} inches long on each side. The "
        f"box is {length} inches long, {width} inches wide and {height} inches tall. How many blocks does it take "
        f"to fill the box completely?"
    )
    return text, (length // side) * (width // side) * (height // side)


@template("geometry", 9, steps=6, into=TEMPLATES)
def paint_the_walls(d: Draw):
    who = d.name("who")
    room = d.choice("room", ("bedroom", "living room", "playroom", "study", "guest room"))
    length, width = d.int("length", 10, 20), d.int("width", 8, 16)
    height = d.int("height", 8, 10)
    door_wide, door_high = d.int("door_wide", 3, 4), d.int("door_high", 7, 8)
    wall = 2 * (length + width) * height - door_wide * door_high
    fits = [c for c in range(15, 61) if wall % c == 0]
    d.need(bool(fits))
    cover = d.choice("cover", fits)
    text = (
        f"{who} is painting the 4 walls of a {room}. The room is {length} feet long, {width} feet wide and "
        f"{height} feet high. There is one door, {door_wide} feet wide and {door_high} feet high, that {who} "
        f"does not paint; everything else on the walls gets 1 coat. One can of paint covers {cover} square feet. "
        f"How many cans of paint does {who} use?"
    )
    return text, wall // cover


@template("geometry", 10, steps=7, into=TEMPLATES)
def path_around_a_pool(d: Draw):
    length = d.int("length", 8, 25)
    width = d.int("width", 4, min(12, length - 1))
    path = d.int("path", 1, 3)
    price = d.int("price", 5, 30, step=5)
    outer = (length + 2 * path) * (width + 2 * path)
    text = (
        f"A hotel pool is a rectangle {length} meters long and {width} meters wide. The hotel builds a stone path "
        f"{plural(path, 'meter')} wide all the way around the pool, so the pool and path together form a bigger "
        f"rectangle. Laying the stone costs {money(price)} for each square meter of path. How many dollars does "
        f"the path cost?"
    )
    return text, (outer - length * width) * price


@template("geometry", 11, steps=6, into=TEMPLATES)
def square_from_the_same_wire(d: Draw):
    who = d.name("who")
    length = d.int("length", 6, 40)
    width = d.int("width", 2 + length % 2, length - 2, step=2)  # the same parity: the square's side is whole
    side = (length + width) // 2
    text = (
        f"{who} bends a piece of wire into a rectangle {length} centimeters long and {width} centimeters wide, "
        f"using all of the wire. Then {who.pronoun} straightens it and bends the same wire into a square, again "
        f"using all of it. How many square centimeters larger is the area of the square than the area of the "
        f"rectangle?"
    )
    return text, side * side - length * width


@template("geometry", 12, steps=4, into=TEMPLATES)
def fence_posts(d: Draw):
    who = d.name("who")
    gap = d.int("gap", 2, 5)
    length = d.int("length", 5 * gap, 30 * gap, step=gap)
    width = d.int("width", 3 * gap, min(20 * gap, length), step=gap)
    price = d.int("price", 3, 12)
    text = (
        f"{who} is putting fence posts around the edge of a rectangular pasture that is {length} meters long and "
        f"{width} meters wide. There is a post at each corner and a post every {gap} meters along each side. "
        f"Each post costs {money(price)}. How many dollars does {who} spend on posts?"
    )
    return text, 2 * (length + width) // gap * price


@template("geometry", 13, steps=7, into=TEMPLATES)
def open_box(d: Draw):
    who = d.name("who")
    length = d.int("length", 10, 40)
    width = d.int("width", 8, min(30, length))
    height = d.int("height", 5, 25)
    text = (
        f"{who} makes a box with no lid out of cardboard for a school project. The box is {length} centimeters "
        f"long, {width} centimeters wide and {height} centimeters tall. It has a bottom and 4 sides, and no "
        f"cardboard overlaps. How many square centimeters of cardboard does {who} use?"
    )
    return text, length * width + 2 * length * height + 2 * width * height
