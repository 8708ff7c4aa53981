"""Matching a rule's knob to DropMatch's share of relaxed rejections: handmade positions with known answers, and the
tiny pair end to end (the knob found accepts DropMatch's share; rejected-only positions are the full ones' subset)."""

import numpy as np
import pytest
import torch

from dropmatch.config import Knob
from dropmatch.lab import calibrate, knob_match
from dropmatch.lab.calibrate import Positions


def handmade() -> Positions:
    """Six positions over 8 tokens: at the first two the draft proposes the argmax (exact match accepts); at the
    other four it proposes the target's 2nd, 3rd, 4th and 5th token."""
    z = torch.tensor([[8.0, 7, 6, 5, 4, 3, 2, 1]]).repeat(6, 1)
    draft = torch.tensor([0, 0, 1, 2, 3, 4])
    q = torch.full((6, 8), -10.0)
    q[torch.arange(6), draft] = 0.0
    return Positions(h=torch.zeros(6, 4), argmax=z.argmax(-1), draft=draft, q_logprobs=torch.log_softmax(q, -1), z=z)


def test_rule_shares_count_only_the_rejections():
    pos = handmade()
    assert knob_match.rejected(pos).tolist() == [2, 3, 4, 5]
    # top-k accepts d among the target's k most likely: ranks 2..5 at the four rejections
    assert knob_match.rule_shares(pos, "top-k", [1, 2, 3, 5, 8]).tolist() == [0.0, 0.25, 0.5, 1.0, 1.0]
    # relaxed top-K/delta: within delta nats of the top log-probability (one nat per place here) and among the top K
    got = knob_match.rule_shares(pos, "relaxed-top-k", [0.5, 1.0, 2.5, 10.0], first=3)
    assert got.tolist() == [0.0, 0.25, 0.5, 0.5]


def test_crossing_interpolates_between_the_neighbours_around_the_target():
    knobs, shares = np.array([0.0, 1, 2, 3]), np.array([0.0, 0.2, 0.6, 1.0])
    assert knob_match.crossing(knobs, shares, 0.4) == (1, 1.5)
    assert knob_match.crossing(knobs, shares, 0.2) == (1, 1.0)
    assert knob_match.crossing(knobs, shares[::-1].copy(), 0.4) == (1, 1.5)  # a share that falls with its knob
    assert knob_match.crossing(knobs, shares, 1.5) is None


def test_match_finds_an_integer_knob_and_says_when_nothing_reaches():
    pos = handmade()
    knob = Knob("k", 2, 1, 20, "top-k", integer=True)
    found = knob_match.match(lambda v: knob_match.rule_shares(pos, "top-k", v), knob, 0.5)
    assert found["reached"] and found["knob"] in (3.0, 4.0) and found["share"] in (0.5, 0.75)
    never = knob_match.match(lambda v: knob_match.rule_shares(pos, "top-k", v), knob, 1.5)
    assert not never["reached"] and never["range"] == (0.0, 1.0)


def test_rising_root_steps_then_bisects():
    calls = []

    def share(p):
        calls.append(p)
        return p

    found = knob_match.rising_root(share, 0.3, 0.37)
    assert found["reached"] and found["knob"] == pytest.approx(0.37, abs=0.1 / 2**5)
    assert len(calls) == 2 + 5  # the start, one step up, five halvings
    assert knob_match.rising_root(share, 0.3, 0.3)["knob"] == 0.3  # already there
    assert not knob_match.rising_root(lambda p: 0.0, 0.3, 0.5)["reached"]


@pytest.fixture(scope="module")
def outputs(noisy_pair):
    items = [type("Item", (), {"prompt": p, "chat": False, "id": p}) for p in ("def add(a, b):", "# a comment: x")]
    return calibrate.lossless_outputs(noisy_pair, items, 24)


def test_the_matched_knob_accepts_dropmatchs_share_on_the_tiny_pair(noisy_pair, outputs):
    every = calibrate.collect(noisy_pair, outputs)
    pos = calibrate.collect(noisy_pair, outputs, rejected_only=True, gates=True)
    keep = every.draft != every.argmax
    assert torch.equal(pos.draft, every.draft[keep]) and torch.equal(pos.z, every.z[keep])
    assert pos.gate is not None and len(pos.gate) == len(pos.draft) > 0
    rules = {"top-k": None, "ensemble": None, "relaxed-top-k": 100}
    table = knob_match.matched_knobs(noisy_pair, pos, rules, p_drop=0.35, span_gate=True).set_index("rule")
    target, step = table["share_target"].iloc[0], 1 / len(pos.draft)
    assert 0.2 < target < 0.8 and (table["rejections"] == len(pos.draft)).all()
    for rule in ("ensemble", "relaxed-top-k", "DropMatch (span-gated)"):
        assert table.loc[rule, "reached"] and abs(table.loc[rule, "share"] - target) <= step + 1e-9
    assert table.loc["relaxed-top-k", "knob"].startswith("100/")  # a pair: its first part held
    whole = table.loc["top-k", "knob"]
    assert whole == int(whole) and abs(table.loc["top-k", "share"] - target) <= 2 * step
    assert table.loc["DropMatch (span-gated)", "knob"] >= 0.35  # the gate only takes accepts away


def test_the_measured_check_reads_each_rules_curve_at_the_predicted_knob():
    import pandas as pd

    points = pd.DataFrame(
        [
            {"rule": "DropMatch js+majority", "method": "dropmatch", "knob": 0.3, "tau": 5.4},
            {"rule": "DropMatch js+majority", "method": "dropmatch", "knob": 0.1, "tau": 4.9},
            {"rule": "typical", "method": "relative", "knob": 0.3, "tau": 5.5},
            {"rule": "typical", "method": "relative", "knob": 0.65, "tau": 5.3},
            {"rule": "relaxed-top-k K8", "method": "relative", "knob": 0.5, "tau": 5.0},
            {"rule": "relaxed-top-k K8", "method": "relative", "knob": 1.5, "tau": 6.0},
        ]
    )
    found = pd.DataFrame(
        [
            {"rule": "typical", "knob": 0.475, "reached": True},
            {"rule": "relaxed-top-k", "knob": "8/1", "reached": True},
            {"rule": "ensemble", "knob": 0.5, "reached": True},  # not swept: nothing to read
            {"rule": "typical", "knob": 0.9, "reached": True},  # outside the measured knobs
            {"rule": "DropMatch (span-gated)", "knob": 0.32, "reached": True},
        ]
    )
    got = knob_match.measured_check(found, points)
    assert (got["tau_dropmatch"] == 5.4).all()
    assert got["tau_at_knob"].iloc[:2].round(6).tolist() == [5.4, 5.5]
    assert got["tau_at_knob"].iloc[2:].isna().all()


def test_no_rejection_is_a_clear_error(noisy_pair):
    pos = handmade()
    agreeing = Positions(h=pos.h, argmax=pos.argmax, draft=pos.argmax.clone(), q_logprobs=pos.q_logprobs, z=pos.z)
    with pytest.raises(ValueError, match="no recorded position has exact match reject"):
        knob_match.matched_knobs(noisy_pair, agreeing, {"top-k": None})
