"""Each rates template on a handmade instance: the answer worked out by hand from the problem's own numbers."""

import pytest

from dropmatch.lab.word_problems import rates
from dropmatch.lab.word_problems.base import Draw

CASES = {
    # 45 mph x 3 h = 135, 30 mph x 2 h = 60: 195 miles
    1: (dict(who="Ana", speed1=45, hours1=3, speed2=30, hours2=2), 195),
    # 120 pages at 4 + 6 = 10 pages an hour: 12 hours
    2: (dict(who="Omar", friend="Lena", pages=120, own=4, theirs=6), 12),
    # 20 copies x 12 pages = 240 pages, at 15 pages a minute: 240 / 15 = 16 minutes
    3: (dict(who="Mei", pages=12, speed=15, copies=20), 16),
    # 500 - 100 = 400 liters to go, filling at 12 - 2 = 10 liters a minute: 400 / 10 = 40 minutes
    4: (dict(capacity=500, start=100, inflow=12, leak=2), 40),
    # 60 mph x 2 h = 120 miles; 270 - 120 = 150 miles left at 50 mph = 3 h; 2 + 3 = 5 hours
    5: (dict(who="Hugo", speed1=60, hours1=2, speed2=50, distance=270), 5),
    # 2 x 90 = 180 miles; 180 / 30 = 6 gallons; 6 x $4 = $24
    6: (dict(who="Nora", place="lake", distance=90, mpg=30, price=4), 24),
    # Ben alone: 50 x 2 = 100 miles; 370 - 100 = 270 miles left, closing at 50 + 40 = 90 mph: 3 h; 2 + 3 = 5 hours
    7: (dict(first="Ben", second="Sara", speed1=50, speed2=40, later=2, apart=370), 5),
    # head start 12 x 2 = 24 km, closed at 18 - 12 = 6 km an hour: 4 h; Jonas rides 18 x 4 = 72 km
    8: (dict(first="Leila", second="Jonas", slow=12, later=2, fast=18), 72),
    # first hose alone: 10 x 20 = 200 liters; 450 - 200 = 250 liters at 10 + 15 = 25 a minute: 10 min; 20 + 10 = 30
    9: (dict(who="Rosa", first=10, second=15, alone=20, volume=450), 30),
    # 4 workers x 3 chairs x 5 days = 60; (4 + 2) x 3 x 4 days = 72; 60 + 72 = 132; 400 - 132 = 268 chairs
    10: (dict(order=400, workers=4, each=3, days1=5, extra=2, days2=4), 268),
    # there: 20 km at 15 km/h = 80 minutes; back: 20 km at 20 km/h = 60 minutes; 80 + 45 + 60 = 185 minutes
    11: (dict(who="Emil", distance=20, there=15, stay=45, back=20), 185),
    # 8 x 3 = 24 visits; full price 24 x $15 = $360; member 3 x $30 + 24 x $5 = $90 + $120 = $210; 360 - 210 = $150
    12: (dict(who="Grace", visit=15, member_visit=5, fee=30, times=8, months=3), 150),
    # 3 h = 180 min; 5 x 180 = 900 caps; 4 x (180 - 30) = 600 caps; 1500 / 50 = 30 boxes; 30 x $6 = $180
    13: (dict(first=5, second=4, hours=3, stopped=30, box=50, price=6), 180),
}


@pytest.mark.parametrize("number", sorted(CASES))
def test_answer_matches_the_hand_computation(number):
    values, expected = CASES[number]
    t = next(t for t in rates.TEMPLATES if t.number == number)
    text, answer = t.instance(Draw.given(**values))
    assert answer == expected
    for v in values.values():
        assert str(v) in text  # the problem states every number and name it was drawn with


def test_every_template_has_a_handmade_case():
    assert sorted(t.number for t in rates.TEMPLATES) == sorted(CASES)
