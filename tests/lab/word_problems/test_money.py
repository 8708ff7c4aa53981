"""Each money template on a handmade instance: the answer worked out by hand from the problem's own numbers."""

import pytest

from dropmatch.lab.word_problems import money
from dropmatch.lab.word_problems.base import Draw

CASES = {
    # 4 x $6 = $24; $50 - $24 = $26 change
    1: (dict(who="Ana", goods="candles", count=4, price=6, bill=50), 26),
    # $220 - $40 = $180 still to save, at $15 a week: 180 / 15 = 12 weeks
    2: (dict(who="Omar", want="guitar", saved=40, weekly=15, cost=220), 12),
    # 25% of $60 = $15 off, $60 - $15 = $45 each, 3 x $45 = $135
    3: (dict(who="Lena", goods="sweaters", price=60, off=25, count=3), 135),
    # 6 x $1.50 = $9, 4 x $0.75 = $3: $9 + $3 = $12
    4: (
        dict(
            who="Diego",
            snack="bagels",
            drink="cups of juice",
            snacks=6,
            drinks=4,
            snack_price="1.50",
            drink_price="0.75",
        ),
        12,
    ),
    # $18 / 3 = $6 on snacks, $18 - $6 = $12 saved a week, 7 x $12 = $84
    5: (dict(who="Hana", part=3, allowance=18, weeks=7), 84),
    # a day: $5 + (6 - 1) x $2 = $5 + $10 = $15; 4 days: 4 x $15 = $60
    6: (dict(who="Pedro", first=5, extra=2, hours=6, days=4), 60),
    # 40 x $16 = $640; overtime 46 - 40 = 6 hours at 1.5 x $16 = $24: 6 x $24 = $144; $640 + $144 = $784
    7: (dict(who="Ingrid", rate=16, base=40, hours=46), 784),
    # first store 48 / 6 = 8 packs x $5 = $40, second 48 / 8 = 6 packs x $9 = $54: $54 - $40 = $14 saved
    8: (dict(who="Bruno", goods="markers", pack1=6, pack2=8, need=48, price1=5, price2=9), 14),
    # 3 x 20 = 60 cookies, 60 / 4 = 15 bags, 15 x $5 = $75; ingredients 3 x $6 = $18: $75 - $18 = $57
    9: (dict(who="Elif", batches=3, bag=4, per_batch=20, price=5, cost=6), 57),
    # 3 x $15 + 5 x $3 = $45 + $15 = $60; tip 20% of $60 = $12; bill $72; $72 / 4 = $18 each
    10: (dict(who="Kofi", pizzas=3, pizza=15, drinks=5, drink=3, tip=20, friends=4), 18),
    # sales 12 x $150 = $1800, 10% = $180; pay $1200 + $180 = $1380; $1380 - $600 - $200 = $580; half: $290
    11: (
        dict(who="Maya", goods="phones", base=1200, share=10, count=12, price=150, rent=600, food=200),
        290,
    ),
    # Saturday 2 x 12 = 24, Sunday 24 - 4 = 20; 12 + 24 + 20 = 56 cups x $0.75 = $42; $42 - $10 = $32
    12: (dict(who="Tomas", friday=12, times=2, fewer=4, price="0.75", spent=10), 32),
    # 10 x 25 + 7 x 10 + 6 x 5 + 8 = 250 + 70 + 30 + 8 = 358 cents; $3.45 = 345 cents: 358 - 345 = 13
    13: (dict(who="Noor", quarters=10, dimes=7, nickels=6, pennies=8, treat="kite", dollars=3, cents=45), 13),
}


@pytest.mark.parametrize("number", sorted(CASES))
def test_answer_matches_the_hand_computation(number):
    values, expected = CASES[number]
    t = next(t for t in money.TEMPLATES if t.number == number)
    text, answer = t.instance(Draw.given(**values))
    assert answer == expected
    for v in values.values():
        assert str(v) in text  # the problem states every number and name it was drawn with


def test_every_template_has_a_handmade_case():
    assert sorted(t.number for t in money.TEMPLATES) == sorted(CASES)
