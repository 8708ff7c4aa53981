"""Each percentages template on a handmade instance: the answer worked out by hand from the problem's own numbers."""

import pytest

from dropmatch.lab.word_problems import percentages
from dropmatch.lab.word_problems.base import Draw

CASES = {
    # 25% of $80 = $20 off: 80 - 20 = 60 dollars
    1: (dict(who="Ana", item="lamp", price=80, off=25), 60),
    # $120 is 40% of the price: 120 / 0.40 = $300, 300 - 120 = 180 dollars more
    2: (dict(who="Omar", item="bike", share=40, saved=120), 180),
    # 5% of $60 = $3 tax, 20% of $60 = $12 tip: 60 + 3 + 12 = 75 dollars
    3: (dict(who="Lena", meal="lunch", bill=60, tax=5, tip=20), 75),
    # 40% of 500 = 200 play a sport, 25% of 200 = 50 on the team: 200 - 50 = 150 students
    4: (dict(who="Kofi", sport="volleyball", students=500, play=40, team=25), 150),
    # 25% of $120 = $30 off, sale price $90; 20% of 90 = $18 off: 90 - 18 = 72 dollars
    5: (dict(who="Sofia", item="blender", price=120, off=25, coupon=20), 72),
    # 400 - 160 = 240 girls; 30% of 160 = 48 boys, 50% of 240 = 120 girls: 48 + 120 = 168, 168 / 400 = 42%
    6: (dict(who="Ivan", club="school choir", students=400, boys=160, boys_pct=30, girls_pct=50), 42),
    # 52 - 40 = $12 more, 12 / 40 = 0.30: 30 percent
    7: (dict(who="Grace", ticket="museum pass", before=40, after=52), 30),
    # 50 x 4 = 200 made, 10% of 200 = 20 defective, 40% of 20 = 8 repaired, 200 - 20 + 8 = 188 sold, 188 x $5 = 940
    8: (dict(goods="mugs", who="Hugo", per_day=50, days=4, bad=10, fixed=40, price=5), 940),
    # 8 + 12 = 20 phones, 20 x $300 = $6000, 5% of 6000 = $300; 2 x $200 = $400 base: 400 + 300 = 700 dollars
    9: (dict(who="Mei", base=200, rate=5, first=8, second=12, phone=300), 700),
    # 50% of $6 = $3, sold for $9; 30 x 9 = $270 taken in, 40 x 6 = $240 paid: 270 - 240 = 30 dollars
    10: (dict(who="Leo", goods="candles", bought=40, markup=50, cost=6, sold=30), 30),
    # 30% + 20% = 50% spent, 50% of $2000 = $1000 left, half = $500 a month: 500 x 3 = 1500 dollars
    11: (dict(who="Zoe", income=2000, rent=30, food=20, months=3), 1500),
    # 75% of 80 = 60 at $8 = $480; 80 - 60 = 20 left, 25% of $8 = $2 off, 20 x $6 = $120: 480 + 120 = 600 dollars
    12: (dict(who="Raj", goods="pies", baked=80, full=75, price=8, off=25), 600),
    # 20% of 200 = 40, 200 + 40 = 240; 25% of 240 = 60, 240 - 60 = 180: 200 + 240 + 180 = 620 points
    13: (dict(who="Elif", team1="Sharks", team2="Hawks", team3="Bears", points=200, more=20, fewer=25), 620),
}


@pytest.mark.parametrize("number", sorted(CASES))
def test_answer_matches_the_hand_computation(number):
    values, expected = CASES[number]
    t = next(t for t in percentages.TEMPLATES if t.number == number)
    text, answer = t.instance(Draw.given(**values))
    assert answer == expected
    for v in values.values():
        assert str(v) in text  # the problem states every number and name it was drawn with


def test_every_template_has_a_handmade_case():
    assert sorted(t.number for t in percentages.TEMPLATES) == sorted(CASES)
