"""Each units template on a handmade instance: the answer worked out by hand from the problem's own numbers."""

import pytest

from dropmatch.lab.word_problems import units
from dropmatch.lab.word_problems.base import Draw

CASES = {
    # 10 feet x 12 = 120 inches, / 8 inches: 15 pieces
    1: (dict(who="Ana", stuff="ribbon", feet=10, inches=8), 15),
    # 3 kilograms = 3000 grams, - 450: 2550 grams
    2: (dict(who="Omar", grain="rice", kilos=3, used=450), 2550),
    # 500 ml x 3 = 1500 ml a day, x 4 days = 6000 ml: 6 liters
    3: (dict(who="Lena", drink="water", ml=500, per_day=3, days=4), 6),
    # 20 yards x 3 = 60 feet, / 6 feet = 10 gaps, + 1: 11 posts
    4: (dict(who="Kenji", place="garden", yards=20, gap=6), 11),
    # 3 x 16 = 48 ounces, 8 x 4 = 32 ounces baked, 48 - 32 - 6: 10 ounces
    5: (dict(who="Maya", friend="Ben", bake="muffins", packs=3, per_batch=8, batches=4, gift=6), 10),
    # 2 meters = 200 cm, / 5 cm = 40 a shelf, x 4 shelves = 160, - 100: 60 books
    6: (dict(who="Diego", items="books", shelves=4, meters=2, thick=5, have=100), 60),
    # 2 x 128 = 256 ounces, / 8 = 32 cups, - 4 free = 28 sold, x $1 = $28, - $10: $18
    7: (dict(who="Priya", gallons=2, cup=8, free=4, price=1, cost=10), 18),
    # 10 x 20 = 200 kg, 12 x 500 g = 6000 g = 6 kg, 500 - 200 - 6: 294 kilograms
    8: (dict(who="Felix", heavy="tiles", bag="flour", limit=500, boxes=10, box_kg=20, bags=12, bag_g=500), 294),
    # 5 yards x 3 = 15 feet, - 3 x 3 = 9 feet = 6 feet, x 12 = 72 inches, / 9: 8 scarves
    9: (dict(who="Rosa", garment="apron", yards=5, made=3, feet_each=3, scarf=9), 8),
    # 4 x 10 = 40 liters, - 5 = 35 liters = 35000 ml, / 500 = 70 bottles, x $2 = $140 a day, x 3 days: $420
    10: (dict(who="Leo", cows=4, liters=10, keep=5, bottle=500, price=2, days=3), 420),
    # 4 x 12 + 5 = 53 inches, 3 x 12 + 7 = 43 inches, 2 x 36 = 72 inches, 53 + 43 + 72 = 168, / 6: 28 pieces
    11: (dict(who="Sara", cord="rope", feet1=4, inches1=5, feet2=3, inches2=7, yards=2, piece=6), 28),
    # 4 x 750 = 3000 ml, x 2 coats = 6000 ml = 6 liters, / 2 = 3 cans, - 1 owned = 2 cans, x $20: $40
    12: (dict(who="Tomas", room="bedroom", walls=4, ml=750, coats=2, can=2, price=20), 40),
    # 5 kg = 5000 g, + 400 = 5400 g, 2 x 250 + 3 x 100 = 800 g a day, x 4 days = 3200, 5400 - 3200: 2200 grams
    13: (dict(who="Nora", sack=5, old=400, cakes=2, cake_g=250, batches=3, batch_g=100, days=4), 2200),
}


@pytest.mark.parametrize("number", sorted(CASES))
def test_answer_matches_the_hand_computation(number):
    values, expected = CASES[number]
    t = next(t for t in units.TEMPLATES if t.number == number)
    text, answer = t.instance(Draw.given(**values))
    assert answer == expected
    for v in values.values():
        assert str(v) in text  # the problem states every number and name it was drawn with


def test_every_template_has_a_handmade_case():
    assert sorted(t.number for t in units.TEMPLATES) == sorted(CASES)
