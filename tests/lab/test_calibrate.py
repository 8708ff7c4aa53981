"""Calibration on the tiny pair: positions from real forwards, the unanimity curve, the pick, the per-dimension view."""

import pandas as pd
import pytest
import torch

from dropmatch.config import DecodeConfig
from dropmatch.decode import generate
from dropmatch.lab import calibrate
from dropmatch.models import encode_prompt

PROMPTS = ["def add(a, b):", "The quick brown fox"]


@pytest.fixture(scope="module")
def positions(noisy_pair):
    outputs = calibrate.lossless_outputs(noisy_pair, [_Item(p) for p in PROMPTS], 20)
    return calibrate.collect(noisy_pair, outputs)


class _Item:
    def __init__(self, prompt):
        self.prompt, self.chat, self.id = prompt, False, prompt


def test_positions_are_what_the_decoder_saw(noisy_pair, positions):
    """The target's argmax at every position is the token lossless emitted there (greedy, float32)."""
    emitted = [
        t
        for p in PROMPTS
        for t in generate(noisy_pair, p, DecodeConfig(method="lossless", max_new_tokens=20)).token_ids
    ]
    assert positions.argmax.tolist() == emitted
    ids = encode_prompt(noisy_pair.tokenizer, PROMPTS[0])
    with torch.inference_mode():
        q = torch.softmax(noisy_pair.draft(torch.tensor([ids])).logits[0, -1].float(), -1)
    assert int(positions.draft[0]) == int(q.argmax())  # the draft's proposal for the first position
    assert torch.allclose(positions.q_logprobs[0].exp(), q, atol=1e-5)


def test_no_dropout_is_unanimous_and_relaxes_nothing(noisy_pair, positions):
    u = calibrate.uniforms(len(positions.argmax), 5, positions.h.shape[-1], seed=0)
    row = calibrate.measure(noisy_pair, positions, 0.0, u)
    assert row["unanimity"] == 1.0 and row["js_threshold"] == pytest.approx(0.0, abs=1e-6)
    assert row["exact_rejects"] > 0  # the noisy draft disagrees somewhere: the relax rates mean something
    assert row["relax_naive"] == 0.0 and row["relax_majority"] == 0.0
    heavy = calibrate.measure(noisy_pair, positions, 0.6, u)
    assert heavy["unanimity"] < 1.0 and heavy["js_threshold"] > 0 and heavy["relax_naive"] > 0


def test_the_curve_refines_around_the_target_and_picks_the_largest_p_drop_that_reaches_it(noisy_pair, positions):
    table, chosen, reached = calibrate.curve(noisy_pair, positions, [0.0, 0.3, 0.6], K=5, target=0.9, refine=2)
    assert list(table["p_drop"]) == sorted(table["p_drop"]) and len(table) >= 3
    assert reached and table.loc[table["p_drop"] == chosen, "unanimity"].iloc[0] >= 0.9
    assert (table[table["p_drop"] > chosen]["unanimity"] < 0.9).all()


def test_a_target_below_the_whole_grid_is_found_by_bisecting_from_zero(noisy_pair, positions):
    """p_drop 0 is unanimous by definition, so a grid that starts too high is refined towards it."""
    table, chosen, reached = calibrate.curve(noisy_pair, positions, [0.6], K=5, target=0.95, refine=4)
    assert len(table) == 5 and table["p_drop"].min() < 0.6 / 8
    assert reached == bool((table["unanimity"] >= 0.95).any())
    assert chosen < 0.6


@pytest.mark.parametrize(
    "unanimity, target, expected",
    [
        ([1.0, 0.99, 0.95, 0.8], 0.984, (0.01, True)),
        ([1.0, 0.99, 0.95, 0.8], 0.999, (0.005, True)),
        ([0.97, 0.96, 0.95, 0.8], 0.984, (0.005, False)),  # out of reach: the most unanimous one, said so
    ],
)
def test_pick(unanimity, target, expected):
    table = pd.DataFrame({"p_drop": [0.005, 0.01, 0.05, 0.3], "unanimity": unanimity})
    assert calibrate.pick(table, target) == expected


def test_dimension_flips_equal_brute_force(noisy_pair, positions):
    """The fast view (top candidates, exact fallback) equals zeroing each unit and taking the full argmax."""
    fast = calibrate.dimension_flips(noisy_pair, positions, limit=6, top=3)  # a tiny top forces the fallback
    W = noisy_pair.target.get_output_embeddings().weight.detach().float()
    h = positions.h[:6].float()
    brute = torch.zeros(h.shape[1])
    for i in range(h.shape[1]):
        zeroed = h.clone()
        zeroed[:, i] = 0
        brute[i] = ((zeroed @ W.T).argmax(-1) != (h @ W.T).argmax(-1)).float().mean()
    assert fast["flip_rate"].tolist() == pytest.approx(brute.tolist())
    assert fast["flip_rate"].sum() > 0
