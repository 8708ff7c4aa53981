"""Each fractions template on a handmade instance: the answer worked out by hand from the problem's own numbers."""

import pytest

from dropmatch.lab.word_problems import fractions_
from dropmatch.lab.word_problems.base import Draw

CASES = {
    # 3/4 of 120 = 90 sold: 120 - 90 = 30 muffins left
    1: (dict(who="Ana", item="muffins", den=4, num=3, baked=120), 30),
    # 18 liters / (3/4 liter) = 24 bottles, 24 x $2 = 48 dollars
    2: (dict(who="Omar", drink="lemonade", den=4, num=3, liters=18, price=2), 48),
    # 2/3 of 120 = 80 girls, 1/4 of 80 = 20 signed up: 80 - 20 = 60 girls
    3: (dict(who="Lena", activity="archery lessons", den1=3, num1=2, den2=4, num2=1, children=120), 60),
    # 6 x 20 = 120 plants; 3/5 of 120 = 72 tomatoes, 1/4 of 120 = 30 peppers, 120 - 72 - 30 = 18 beans: 72 - 18 = 54
    4: (dict(who="Kofi", den1=5, num1=3, den2=4, num2=1, rows=6, per_row=20), 54),
    # 1/3 of $240 = $80, 240 - 80 = 160 left; 3/4 of 160 = 120: 160 - 120 = 40 dollars
    5: (dict(who="Sofia", big="backpack", small="books", den1=3, num1=1, den2=4, num2=3, had=240), 40),
    # 40 left is 1 - 3/5 = 2/5 of the start: 40 / (2/5) = 100 at first, 100 - 40 = 60 given away
    6: (dict(who="Ivan", things="marbles", den=5, num=3, left=40), 60),
    # 3/4 of 240 = 180 liters, 1/3 of 180 = 60 used, 180 - 60 = 120 left; 240 - 120 = 120 missing, 120 / 5 = 24 min
    7: (dict(who="Grace", den1=4, num1=3, den2=3, num2=1, capacity=240, rate=5), 24),
    # 10 x $12 = $120 pay, 1/4 of 120 = 30 saved; 2/5 of $50 = 20 saved; (30 + 20) x 8 weeks = 400; 400 - 300 = 100
    8: (
        dict(
            who="Hugo",
            friend="Mei",
            gift="telescope",
            hours=10,
            wage=12,
            den1=4,
            num1=1,
            den2=5,
            num2=2,
            earns=50,
            weeks=8,
            cost=300,
        ),
        100,
    ),
    # 2/3 of 90 = 60, 60 + 15 = 75: 90 + 60 + 75 = 225 stamps
    9: (dict(first="Nora", second="Ben", third="Yusuf", things="stamps", den=3, num=2, count=90, more=15), 225),
    # 96 / 12 = 8 batches, 8 x 3/4 = 6 cups, 6 x $3 = $18: 50 - 18 = 32 dollars
    10: (dict(who="Leo", item="muffins", batch=12, den=4, num=3, wanted=96, price=3, bill=50), 32),
    # 20 green is 1 - 3/4 = 1/4 of the not-red: 80 not red; 80 is 1 - 1/3 = 2/3 of the jar: 80 / (2/3) = 120
    11: (dict(who="Zoe", den1=3, num1=1, den2=4, num2=3, green=20), 120),
    # 1/2 of 60 = 30 small, 1/3 of 60 = 20 medium, 60 - 30 - 20 = 10 large: 30 x 8 + 20 x 10 + 10 x 12 = 560
    12: (dict(who="Raj", den1=2, num1=1, den2=3, num2=1, shirts=60, small=8, medium=10, large=12), 560),
    # 6 x 8 = 48 slices, 1/2 of 48 = 24 eaten by children, 4 x 3 = 12 by adults: 48 - 24 - 12 = 12, 12 / 3 = 4
    13: (dict(who="Elif", event="class picnic", pizzas=6, slices=8, den=2, num=1, adults=4, each=3, helpers=3), 4),
}


@pytest.mark.parametrize("number", sorted(CASES))
def test_answer_matches_the_hand_computation(number):
    values, expected = CASES[number]
    t = next(t for t in fractions_.TEMPLATES if t.number == number)
    text, answer = t.instance(Draw.given(**values))
    assert answer == expected
    for v in values.values():
        assert str(v) in text  # the problem states every number and name it was drawn with


def test_every_template_has_a_handmade_case():
    assert sorted(t.number for t in fractions_.TEMPLATES) == sorted(CASES)
