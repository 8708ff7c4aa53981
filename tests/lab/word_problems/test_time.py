"""Each time template on a handmade instance: the answer worked out by hand from the problem's own numbers."""

import pytest

from dropmatch.lab.word_problems import time_
from dropmatch.lab.word_problems.base import Draw

CASES = {
    # 12 pounds x 15 minutes = 180 minutes, + 30 minutes of rest: 210 minutes
    1: (dict(who="Ana", meat="turkey", pounds=12, per_pound=15, rest=30), 210),
    # 3 weeks x 7 = 21 days, + 4 days late: 25 days
    2: (dict(who="Omar", item="book", weeks=3, late=4), 25),
    # 9:40 a.m. to noon = 140 minutes, noon to 2:15 p.m. = 135 minutes: 275 minutes
    3: (dict(who="Lena", place="zoo", h1=9, m1=40, h2=2, m2=15), 275),
    # 24 / 6 = 4 pills a day, x 10 days = 40 pills, 60 - 40: 20 pills
    4: (dict(who="Kenji", bottle=60, every=6, days=10), 20),
    # 6:15 to 9:45 = 210 minutes, 210 / 15 = 14 gaps, + 1: 15 buses
    5: (dict(stop="bus stop", h1=6, m1=15, h2=9, m2=45, every=15), 15),
    # 3 x 30 + 60 = 150 minutes a week, x 4 weeks = 600 minutes, / 60: 10 hours
    6: (dict(who="Maya", instrument="violin", weekday=30, saturday=60, weeks=4), 10),
    # 6:50 to 8:15 = 85 minutes, 10 + 20 + 25 = 55 minutes of getting there, 85 - 55: 30 minutes early
    7: (dict(who="Diego", h1=6, m1=50, m2=15, shower=10, breakfast=20, walk=25), 30),
    # 3 x 7 + 2 = 23 days, - 5 = 18 days, / 3 cities: 6 days
    8: (dict(who="Priya", weeks=3, extra=2, grandparents=5, cities=3), 6),
    # 2:30 to 6:00 = 210 minutes, - 30 = 180 minutes, / 4 subjects: 45 minutes
    9: (dict(who="Felix", h1=2, m1=30, h2=6, m2=0, pause=30, subjects=4), 45),
    # 8:30 a.m. to 4:00 p.m. = 210 + 240 = 450 minutes, - 30 = 420 minutes = 7 hours, x 5 days = 35 hours,
    # x $15: $525
    10: (dict(who="Rosa", job="bakery", h1=8, m1=30, h2=4, m2=0, lunch=30, days=5, wage=15), 525),
    # 9:30 p.m. to 6:30 a.m. = 540 minutes, x 7 nights = 3780, + 2 x 60 = 3900 minutes, / 60: 65 hours
    11: (dict(who="Leo", h1=9, m1=30, h2=6, m2=30, longer=60), 65),
    # 8:00 a.m. to 3:30 p.m. = 240 + 210 = 450 minutes, 90 + 60 + 120 + 30 = 300 minutes of travel: 150 minutes
    12: (dict(who="Sara", event="workshop", h1=8, m1=0, h2=3, m2=30, first=90, layover=60, second=120, taxi=30), 150),
    # 9:30 a.m. to 2:30 p.m. = 5 hours, $5 + 4 x $3 = $17, $50 - $17: $33
    13: (dict(who="Tomas", h1=9, h2=2, minute=30, first=5, later=3, bill=50), 33),
}


@pytest.mark.parametrize("number", sorted(CASES))
def test_answer_matches_the_hand_computation(number):
    values, expected = CASES[number]
    t = next(t for t in time_.TEMPLATES if t.number == number)
    text, answer = t.instance(Draw.given(**values))
    assert answer == expected
    for v in values.values():
        assert str(v) in text  # the problem states every number and name it was drawn with


def test_every_template_has_a_handmade_case():
    assert sorted(t.number for t in time_.TEMPLATES) == sorted(CASES)
