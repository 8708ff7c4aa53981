"""The generated word-problem suite: reproducible, distinct, every template used, and scored by the final number."""

from fractions import Fraction

import pytest

from dropmatch.lab import suites, word_problems
from dropmatch.lab.word_problems import final_number, problems, score_completion
from dropmatch.tables.verdict import cluster


@pytest.mark.parametrize(
    "completion, expected",
    [
        ("She has 3 + 4 = 7 apples.\nAnswer: 7", 7),
        ("Total: 12 * 5 = 60 dollars.\n\nAnswer: $1,260", 1260),
        ("**Answer:** 45", 45),
        ("The answer is 2.50 dollars.", Fraction(5, 2)),
        ("So 8 - 10 = -2.\nAnswer: -2", -2),
        ("Step 1: 3 x 4 = 12\nStep 2: 12 + 6 = 18\nSo he walks 18 miles.", 18),  # no answer line: the last number
        ("Thus \\boxed{96} boxes, since 12 * 8 = 96 and 8 crates", 96),  # \\boxed before a later number
        ("Answer: 7 (from 3 + 4)", 7),  # the number right after the answer line, not the last one
        ("She buys 1,000 and 250 more: 1,250.", 1250),
        ("Answer: 12, then 3, 4", 12),  # a list is not a thousands separator
    ],
)
def test_the_final_number_of_handmade_completions(completion, expected):
    assert final_number(completion) == expected


def test_a_completion_without_a_number_scores_no_number():
    assert score_completion(5, "I cannot tell.") == {"passed": False, "result": "no number"}
    assert score_completion(5, "Answer: 5") == {"passed": True, "result": "passed"}
    assert score_completion(5, "Answer: 5.0")["passed"]
    assert score_completion(5, "Answer: 6") == {"passed": False, "result": "answered 6, expected 5"}


def test_the_suite_is_reproducible_and_distinct():
    n = 3 * len(word_problems.TEMPLATES)
    first, again = problems(n), problems(n)
    assert first == again
    assert len({p.text for p in first}) == n and len({p.id for p in first}) == n
    assert problems(50) == first[:50]  # a smaller suite is the larger one's head
    assert problems(50, seed=1) != first[:50]


def test_the_first_rounds_cover_every_template_once_each():
    ts = word_problems.TEMPLATES
    heads = problems(len(ts))
    assert [p.template for p in heads] == [t.id for t in ts]
    assert all(cluster(p.id) == p.template for p in heads)
    assert cluster("HumanEval/3") == "HumanEval/3"


def test_at_least_100_templates_across_the_kinds():
    ts = word_problems.TEMPLATES
    assert len(ts) >= 100
    assert len({t.id for t in ts}) == len(ts)
    kinds = {t.kind for t in ts}
    assert {"rates", "fractions", "percentages", "ages", "money", "time", "units", "geometry"} <= kinds
    assert {t.steps for t in ts} >= {2, 3, 4, 5, 6}  # two to eight steps, a spread of them
    assert max(t.steps for t in ts) <= 8


def test_every_answer_is_a_whole_number_and_every_problem_asks_one_question():
    for p in problems(2 * len(word_problems.TEMPLATES)):
        assert isinstance(p.answer, int) and p.answer >= 0, p
        assert p.text.rstrip().endswith("?"), p.text


def test_the_suite_loads_as_chat_items_scored_by_their_answer():
    items = suites.load_suite(suites.WORD_PROBLEMS, limit=5)
    assert [i.id for i in items] == [p.id for p in problems(5)]
    item = items[0]
    assert item.chat and item.problem["answer"] == problems(1)[0].answer
    assert word_problems.INSTRUCTION in item.prompt
    assert suites.score(item, f"Answer: {item.problem['answer']}")["passed"]
    assert not suites.ends_early(item)
    assert suites.suite_name(suites.WORD_PROBLEMS) == "word-problems"
