"""Each counting template on a handmade instance: the answer worked out by hand from the problem's own numbers."""

import pytest

from dropmatch.lab.word_problems import counting
from dropmatch.lab.word_problems.base import Draw

CASES = {
    # 28 / 4 = 7 teams; 7 x 3 = 21 cones
    1: (dict(who="Diego", size=4, kids=28, each=3, item="cones"), 21),
    # 50 - 30 = 20 more in the red box; moving half of it, 20 / 2 = 10, leaves 40 in each
    2: (dict(who="Hana", item="beads", red=50, blue=30), 10),
    # 45 / 6 = 7 full bags (42 muffins); 45 - 42 = 3 muffins kept
    3: (dict(who="Malik", item="muffins", bag=6, made=45), 3),
    # 5 x 6 = 30 boxes; 30 x 10 = 300 apples; 300 - 25 = 275 apples
    4: (dict(fruit="apples", crates=5, boxes=6, each=10, bruised=25), 275),
    # Omar 10 + 5 = 15, Zoe 2 x 15 = 30; 10 + 15 + 30 = 55 marbles; 3 + 2 = 5 people; 55 / 5 = 11 marbles
    5: (dict(first="Ana", second="Omar", third="Zoe", own=10, friends=2, more=5), 11),
    # 100 + 6 = 106 people; 3 buses hold 90, too few, so 4 buses; 4 x 30 = 120 seats; 120 - 106 = 14 empty
    6: (dict(students=100, teachers=6, seats=30), 14),
    # 10 x 5 = 50 eggs a week; 50 x 3 = 150; 150 - 8 = 142; 142 / 12 = 11 full cartons (132 eggs), 10 eggs over
    7: (dict(who="Lucia", hens=10, laid=5, weeks=3, broken=8, carton=12), 11),
    # legs 12 x 2 + 9 x 4 = 24 + 36 = 60; heads 12 + 9 = 21; 60 - 21 = 39
    8: (dict(who="Farid", birds="ducks", beasts="pigs", two=12, four=9), 39),
    # 80 + 60 = 140 pens; 140 - 25 - 15 = 100; delivery 5 x 20 = 100; 100 + 100 = 200 pens
    9: (dict(red=80, blue=60, sold_red=25, sold_blue=15, boxes=5, per_box=20), 200),
    # start 10 x 12 = 120 cans; each week in 5 x 12 = 60, out 6 x 8 = 48, so 12 more; 3 x 12 = 36; 120 + 36 = 156
    10: (dict(food="beans", start=10, per_case=12, cases=5, days=6, sold=8, weeks=3), 156),
    # 500 / 6 = 83 full boxes; 83 / 10 = 8 full cartons; 8 x 10 x 6 = 480 shipped; 500 - 480 = 20 cookies
    11: (dict(item="cookies", made=500, box=6, per_carton=10), 20),
    # pencils 20 x 3 = 60, 60 / 10 = 6 boxes; erasers 20 x 2 = 40, 40 / 8 = 5 packs; brushes 20 x 4 = 80,
    # 80 / 5 = 16 bundles; 6 + 5 + 16 = 27
    12: (dict(who="Maya", kits=20, pencils=3, erasers=2, brushes=4, box=10, pack=8, bundle=5), 27),
    # 10 x 16 = 160 crayons; 5 x 8 = 40 markers; 160 + 40 + 50 = 250; used 60 + 15 + 20 = 95; 250 - 95 = 155
    13: (
        dict(
            crayon_boxes=10,
            per_crayon_box=16,
            marker_boxes=5,
            per_marker_box=8,
            pencils=50,
            used_crayons=60,
            used_markers=15,
            used_pencils=20,
        ),
        155,
    ),
}


@pytest.mark.parametrize("number", sorted(CASES))
def test_answer_matches_the_hand_computation(number):
    values, expected = CASES[number]
    t = next(t for t in counting.TEMPLATES if t.number == number)
    text, answer = t.instance(Draw.given(**values))
    assert answer == expected
    for v in values.values():
        assert str(v) in text  # the problem states every number and name it was drawn with


def test_every_template_has_a_handmade_case():
    assert sorted(t.number for t in counting.TEMPLATES) == sorted(CASES)
