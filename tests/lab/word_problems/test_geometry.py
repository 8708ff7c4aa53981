"""Each geometry template on a handmade instance: the answer worked out by hand from the problem's own numbers."""

import pytest

from dropmatch.lab.word_problems import geometry
from dropmatch.lab.word_problems.base import Draw

CASES = {
    # 2 x (30 + 20) = 100 feet around; 100 - 4 for the gate = 96 feet
    1: (dict(who="Tara", place="garden", length=30, width=20, gate=4), 96),
    # 65 + 45 = 110; 180 - 110 = 70 degrees
    2: (dict(who="Kofi", first=65, second=45), 70),
    # 16 / 2 = 8 tiles along, 10 / 2 = 5 tiles across: 8 x 5 = 40 tiles
    3: (dict(who="Lena", room="kitchen", side=2, length=16, width=10), 40),
    # half the perimeter 80 / 2 = 40 = length + width, so the width is 40 - 25 = 15; 25 x 15 = 375 square meters
    4: (dict(who="Pablo", length=25, perimeter=80), 375),
    # 30 - 10 = 20 cm of water added; 60 x 40 x 20 = 48000 cubic cm; 48000 / 1000 = 48 liters
    5: (dict(who="Mei", length=60, width=40, depth=10, full=30), 48),
    # 6 x 10 = 60 m by 4 x 10 = 40 m: 60 x 40 = 2400 square meters
    6: (dict(who="Carlos", place="park", long=6, wide=4, scale=10), 2400),
    # 40 x 30 = 1200; patio 10 x 10 = 100; 1200 - 100 = 1100 sq ft; 1100 / 100 = 11 bags; 11 x $8 = $88
    7: (dict(who="Sofia", length=40, width=30, patio_long=10, patio_wide=10, cover=100, price=8), 88),
    # 15 / 3 = 5, 12 / 3 = 4, 9 / 3 = 3 blocks along each edge: 5 x 4 x 3 = 60 blocks
    8: (dict(who="Raj", side=3, length=15, width=12, height=9), 60),
    # 2 x (12 + 10) = 44 ft around; 44 x 8 = 352 sq ft; door 4 x 8 = 32; 352 - 32 = 320; 320 / 40 = 8 cans
    9: (
        dict(who="Omar", room="bedroom", length=12, width=10, height=8, door_wide=4, door_high=8, cover=40),
        8,
    ),
    # outside 10 + 2 x 2 = 14 by 6 + 2 x 2 = 10: 140 sq m; pool 10 x 6 = 60; path 140 - 60 = 80; 80 x $20 = $1600
    10: (dict(length=10, width=6, path=2, price=20), 1600),
    # wire 2 x (20 + 12) = 64 cm; square side 64 / 4 = 16; 16 x 16 = 256; 20 x 12 = 240; 256 - 240 = 16
    11: (dict(who="Ines", length=20, width=12), 16),
    # 2 x (30 + 18) = 96 m around; 96 / 3 = 32 posts; 32 x $5 = $160
    12: (dict(who="Ravi", gap=3, length=30, width=18, price=5), 160),
    # bottom 20 x 15 = 300; long sides 2 x 20 x 10 = 400; short sides 2 x 15 x 10 = 300; 300 + 400 + 300 = 1000
    13: (dict(who="Elif", length=20, width=15, height=10), 1000),
}


@pytest.mark.parametrize("number", sorted(CASES))
def test_answer_matches_the_hand_computation(number):
    values, expected = CASES[number]
    t = next(t for t in geometry.TEMPLATES if t.number == number)
    text, answer = t.instance(Draw.given(**values))
    assert answer == expected
    for v in values.values():
        assert str(v) in text  # the problem states every number and name it was drawn with


def test_every_template_has_a_handmade_case():
    assert sorted(t.number for t in geometry.TEMPLATES) == sorted(CASES)
