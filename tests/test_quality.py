"""Quality measures from a trace: the repetition-loop detector (table-driven), the cost of a relaxed acceptance,
the target's log-probability of the text, cap-out and the length ratio."""

import math
from dataclasses import replace

import pytest

from dropmatch import metrics
from dropmatch.trace import RoundRecord, TokenRecord, Trace

NOISE = [101, 102, 103, 104, 105, 106, 107]


@pytest.mark.parametrize(
    "ids, expected",
    [
        (list(range(40)), None),  # no repeat at all
        ([7] * 15, (0, 1, 15)),  # one token 15 times: a loop of period 1
        ([7] * 14, None),  # 14 tokens: too short
        ([1, 2, 3, 4, 5] * 3, (0, 5, 15)),  # a 5-token span three times: exactly 15 tokens
        ([1, 2, 3, 4] * 3, None),  # three copies, but only 12 tokens
        ([1, 2, 3, 4] * 4, (0, 4, 16)),  # four copies of 4: 16 tokens
        ([1, 2, 3, 4, 5, 6, 7, 8] * 2, None),  # 16 tokens but only two copies
        (NOISE + [1, 2, 3, 4, 5] * 3 + [1, 2] + NOISE, (7, 5, 17)),  # a partial fourth copy still counts
        ([1, 2] * 10 + NOISE + [9] * 30, (27, 1, 30)),  # the longest loop is reported
    ],
)
def test_repetition_loop(ids, expected):
    assert metrics.repetition_loop(ids) == expected


def record(round_, pos, token, *, kind="draft", accepted=True, lossless=True, p=0.5, p_argmax=0.5, emitted=True):
    reason = {"correction": "correction", "bonus": "bonus"}.get(kind, "exact" if lossless else "js")
    return TokenRecord(
        round=round_,
        pos=pos,
        kind=kind,
        token_id=token,
        text=str(token),
        emitted=emitted,
        reason=reason,
        accepted=accepted if kind == "draft" else None,
        lossless=lossless if kind == "draft" else None,
        p=p,
        p_argmax=p_argmax,
    )


def trace_of(records: list[TokenRecord], finish="eos") -> Trace:
    rounds = sorted({r.round for r in records})
    return Trace(
        config={"method": "dropmatch", "gamma": 5},
        target_id="t",
        draft_id="d",
        prompt="x",
        n_prompt_tokens=1,
        token_ids=[r.token_id for r in records if r.emitted],
        records=records,
        finish=finish,
        rounds=[RoundRecord(t, 5, 6, 0, 0, 0, 0, 0, 1.0) for t in rounds],
    )


def test_cost_of_relaxed_acceptances_and_log_probability_of_the_text():
    recs = [
        record(0, 1, 11, p=0.8, p_argmax=0.8),  # exact: no cost
        record(0, 2, 12, lossless=False, p=0.2, p_argmax=0.5),  # relaxed: ln(0.5 / 0.2)
        record(0, 3, 13, lossless=False, p=0.1, p_argmax=0.4),  # relaxed: ln(0.4 / 0.1)
        record(
            0, 4, 14, accepted=False, lossless=False, p=0.01, p_argmax=0.9, emitted=False
        ),  # rejected: not in the text
        record(0, 4, 15, kind="correction", p=0.9, p_argmax=0.9),
    ]
    q = metrics.quality(trace_of(recs))
    assert q["relaxed_cost_sum"] == pytest.approx(math.log(2.5) + math.log(4))
    assert q["relaxed_cost_mean"] == pytest.approx((math.log(2.5) + math.log(4)) / 2)
    assert q["mean_logp"] == pytest.approx(sum(map(math.log, (0.8, 0.2, 0.1, 0.9))) / 4)
    assert q["capped"] == 0 and q["loop"] == 0 and q["loop_relaxed"] is None


def test_a_loop_is_said_to_hold_a_relaxed_acceptance_only_when_one_sits_inside_it():
    looped = [7, 8, 9, 10, 11] * 3
    plain = [record(t, 1, tok) for t, tok in enumerate(looped)]
    q = metrics.quality(trace_of(plain + [record(20, 1, 99, lossless=False, p=0.1)], finish="length"))
    assert q["loop"] == 1 and q["loop_relaxed"] == 0 and q["capped"] == 1  # the relaxed token sits after the loop
    inside = list(plain)
    inside[6] = record(6, 1, looped[6], lossless=False, p=0.3, p_argmax=0.6)
    assert metrics.quality(trace_of(inside))["loop_relaxed"] == 1


def test_length_ratio_against_the_baseline():
    short, long_ = trace_of([record(0, 1, 5), record(0, 2, 6)]), trace_of([record(0, j, 5) for j in range(1, 5)])
    assert metrics.compare(long_, short)["length_ratio"] == 2.0
    assert metrics.compare(short, long_)["length_ratio"] == 0.5


def test_a_tie_is_counted_apart_from_the_relaxed_acceptances_read_from_the_record_in_old_traces_too():
    """At T = 0 an accepted draft of target rank 1 that is not the argmax's index is a tie (exact match rejected it
    by index order alone), whether the record names it (`tie`) or predates the reason (here `js`)."""
    old_tie = replace(record(0, 1, 11, lossless=False, p=0.4, p_argmax=0.4), target_rank=1, target_argmax=3)
    named = replace(old_tie, pos=2, token_id=12, reason="tie")
    relaxed = replace(record(0, 3, 13, lossless=False, p=0.2, p_argmax=0.5), target_rank=2, target_argmax=3)
    exact = replace(record(0, 4, 3, p=0.5, p_argmax=0.5), target_rank=1, target_argmax=3)
    greedy = trace_of([old_tie, named, relaxed, exact])
    m = metrics.compute(greedy)
    assert (m["ties"], m["ties_share"], m["relaxed_share"]) == (2, 0.5, 0.25)
    assert m["relaxed_emitted"] == 1 and m["relaxed_cost_mean"] == pytest.approx(math.log(2.5))  # ties cost nothing
    assert metrics.round_stats(greedy)[["relaxed", "ties"]].values.tolist() == [[1, 2]]
    sampled = replace(greedy, config={**greedy.config, "temperature": 0.7}, records=[old_tie, relaxed, exact])
    assert metrics.compute(sampled)["ties"] == 0  # at T > 0 the lossless test is a draw, not an index order


def test_relaxed_tokens_name_where_each_relaxed_acceptance_sits_and_its_cost():
    recs = [
        replace(record(0, 1, 11, p=0.8, p_argmax=0.8), text="def"),  # exact
        replace(record(0, 2, 12, lossless=False, p=0.2, p_argmax=0.5), text=" foo"),  # relaxed at offset 3
        replace(record(0, 3, 13, accepted=False, lossless=False, emitted=False), text=" x"),  # rejected: not emitted
        replace(record(0, 3, 15, kind="correction"), text="("),
        replace(record(1, 1, 16, lossless=False, p=0.1, p_argmax=0.4), text="a"),  # relaxed at offset 8
    ]
    trace = trace_of(recs)
    text = "".join(r.text for r in recs if r.emitted)
    got = metrics.relaxed_tokens(trace)
    assert [g[:4] for g in got] == [[1, 3, " foo", "js"], [3, 8, "a", "js"]]
    assert [text[o : o + len(t)] for _, o, t, _, _ in got] == [" foo", "a"]
    assert [g[4] for g in got] == pytest.approx([math.log(2.5), math.log(4)])
    assert metrics.emitted_reasons(trace).split() == ["exact", "js", "correction", "js"]
    assert len(metrics.emitted_reasons(trace).split()) == len(trace.token_ids)
