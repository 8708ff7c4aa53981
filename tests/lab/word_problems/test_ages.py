"""Each ages template on a handmade instance: the answer worked out by hand from the problem's own numbers."""

import pytest

from dropmatch.lab.word_problems import ages
from dropmatch.lab.word_problems.base import Draw

CASES = {
    # Omar is 12 + 5 = 17 now; in 4 years 17 + 4 = 21
    1: (dict(who="Ana", other="Omar", age=12, diff=5, years=4), 21),
    # Mei was born in 2001 + 3 = 2004; in 2030 she turns 2030 - 2004 = 26
    2: (dict(who="Leo", cousin="Mei", born=2001, gap=3, year=2030), 26),
    # Sara is 4 x 12 + 7 = 55 months old; Ben is 55 + 18 = 73 months old
    3: (dict(who="Sara", other="Ben", years=4, months=7, extra=18), 73),
    # Nora is (50 - 8) / 2 = 21, so Hugo is 21 + 8 = 29
    4: (dict(who="Hugo", other="Nora", total=50, diff=8), 29),
    # Emil is 42 / 3 = 14, always 42 - 14 = 28 years younger than Rosa; when she is 50 he is 50 - 28 = 22
    5: (dict(parent="Rosa", kid="Emil", k=3, age=42, later=50), 22),
    # 15 + 9 = 24 for the first two years, then (7 - 2) x 5 = 25: 24 + 25 = 49
    6: (dict(who="Kenji", first=15, second=9, later=5, dog=7), 49),
    # now 12 + 9 + 4 = 25; the sum grows by 3 a year: (55 - 25) / 3 = 10 years
    7: (dict(a="Lucia", b="Pablo", c="Zoe", age_a=12, age_b=9, age_c=4, total=55), 10),
    # sister 5 + 3 = 8, Ivan 2 x 8 = 16, twins 2 x 5 = 10: 16 + 8 + 10 = 34
    8: (dict(who="Ivan", twins=5, gap=3, times=2), 34),
    # in 5 years Grace is 10 + 5 = 15, her father 30 + 15 = 45, her mother 45 - 4 = 41: 15 + 45 + 41 = 101
    9: (dict(who="Grace", father=30, younger=4, age=10, years=5), 101),
    # Raj 8 x 3 = 24, Yara 24 - 6 = 18, Sam 18 / 2 = 9; now 8 + 24 + 18 + 9 = 59; in 5 years 59 + 4 x 5 = 79
    10: (dict(a="Tara", b="Raj", c="Yara", e="Sam", age_a=8, k=3, diff=6, years=5), 79),
    # 4 years ago Luca was 10 - 4 = 6 and Carmen 4 x 6 = 24, so Carmen is 24 + 4 = 28 and Olga 28 + 3 = 31;
    # Luca turns 18 in 18 - 10 = 8 years: Olga will be 31 + 8 = 39
    11: (dict(parent="Carmen", kid="Luca", sib="Olga", ago=4, times=4, kid_age=10, older=3, turns=18), 39),
    # youngest (41 - 2 - 2 x 3) / 3 = 33 / 3 = 11, middle 11 + 3 = 14, oldest 14 + 2 = 16
    12: (dict(who="Farid", d1=2, d2=3, total=41), 16),
    # ages 5 x 10 + 6 x 12 + 46 = 50 + 72 + 46 = 168, people 5 + 6 + 1 = 12: 168 / 12 = 14
    13: (dict(coach="Jonas", boys=5, boy_avg=10, girls=6, girl_avg=12, coach_age=46), 14),
}


@pytest.mark.parametrize("number", sorted(CASES))
def test_answer_matches_the_hand_computation(number):
    values, expected = CASES[number]
    t = next(t for t in ages.TEMPLATES if t.number == number)
    text, answer = t.instance(Draw.given(**values))
    assert answer == expected
    for v in values.values():
        assert str(v) in text  # the problem states every number and name it was drawn with


def test_every_template_has_a_handmade_case():
    assert sorted(t.number for t in ages.TEMPLATES) == sorted(CASES)
