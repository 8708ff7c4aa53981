"""Calibration on the tiny pair: positions from real forwards, the curve, each anchor's pick, the per-dimension view."""

import pandas as pd
import pytest
import torch
from device_checks import DeviceMixing

from dropmatch.config import DecodeConfig
from dropmatch.decode import generate
from dropmatch.lab import calibrate, paper
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
    assert row["unanimity"] == row["unanimity_paper"] == 1.0 and row["js_threshold"] == pytest.approx(0.0, abs=1e-6)
    assert row["exact_rejects"] > 0  # the noisy draft disagrees somewhere: the relax rates mean something
    assert row["relax_naive"] == 0.0 and row["relax_majority"] == 0.0
    heavy = calibrate.measure(noisy_pair, positions, 0.6, u)
    assert heavy["unanimity"] < 1.0 and heavy["js_threshold"] > 0 and heavy["relax_naive"] > 0
    # the paper's count (all K votes for one token) is the looser one: paths agreeing on the head's top-1 agree
    assert heavy["unanimity_paper"] >= heavy["unanimity"]


def anchor(name: str, **targets) -> calibrate.Anchor:
    return next(a for a in calibrate.anchors(**targets) if a.name == name)


def test_the_curve_refines_around_the_target_and_picks_the_largest_p_drop_that_reaches_it(noisy_pair, positions):
    marks = (anchor("unanimity", unanimity=0.9),)
    table, (found,) = calibrate.curve(noisy_pair, positions, [0.0, 0.3, 0.6], K=5, marks=marks, refine=2)
    chosen = found["p_drop"]
    assert list(table["p_drop"]) == sorted(table["p_drop"]) and len(table) >= 3
    assert found["reached"] and table.loc[table["p_drop"] == chosen, "unanimity"].iloc[0] >= 0.9
    assert (table[table["p_drop"] > chosen]["unanimity"] < 0.9).all()


def test_a_target_below_the_whole_grid_is_found_by_bisecting_from_zero(noisy_pair, positions):
    """p_drop 0 is unanimous by definition, so a grid that starts too high is refined towards it."""
    marks = (anchor("unanimity", unanimity=0.95),)
    table, (found,) = calibrate.curve(noisy_pair, positions, [0.6], K=5, marks=marks, refine=4)
    assert len(table) == 5 and table["p_drop"].min() < 0.6 / 8
    assert found["reached"] == bool((table["unanimity"] >= 0.95).any())
    assert found["p_drop"] < 0.6


def test_the_effect_matched_p_drop_is_the_smallest_that_relaxes_the_target_share(noisy_pair, positions):
    """Bisection on the relax rate, which grows with p_drop (nested masks): the pick relaxes at least the target
    share of exact-match rejections, and every measured smaller p_drop relaxes less."""
    u = calibrate.uniforms(len(positions.argmax), 5, positions.h.shape[-1], seed=0)
    share = calibrate.measure(noisy_pair, positions, 0.5, u)["relax_js+majority"] / 2  # reached inside the grid
    assert share > 0
    marks = (anchor("effect", relax_share=share),)
    table, (found,) = calibrate.curve(noisy_pair, positions, [0.05, 0.5], K=5, marks=marks, refine=3)
    assert len(table) == 5  # three bisection steps between 0.05 and 0.5
    chosen, relax = found["p_drop"], table.set_index("p_drop")["relax_js+majority"]
    assert found["reached"] and relax[chosen] >= share and found["value"] == relax[chosen]
    assert (relax[relax.index < chosen] < share).all()


def test_the_js_spread_anchors_bound_the_p_drops_inside_the_range(noisy_pair, positions):
    spread = {"js_spread": (1e-4, 1e-3)}
    marks = (anchor("JS spread, low end", **spread), anchor("JS spread, high end", **spread))
    table, (low, high) = calibrate.curve(noisy_pair, positions, [0.01, 0.1, 0.3, 0.6], K=5, marks=marks, refine=2)
    js = table.set_index("p_drop")["js_threshold"]
    assert js[low["p_drop"]] >= 1e-4 and js[high["p_drop"]] <= 1e-3 and low["p_drop"] <= high["p_drop"]


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
    found = calibrate.pick(table, anchor("unanimity", unanimity=target))
    assert (found["p_drop"], found["reached"]) == expected


@pytest.mark.parametrize(
    "relax, share, expected",
    [
        ([0.0, 0.1, 0.3, 0.6], 0.25, (0.05, True)),  # the smallest p_drop that relaxes at least the share
        ([0.0, 0.1, 0.3, 0.6], 0.1, (0.01, True)),
        ([0.0, 0.01, 0.02, 0.05], 0.25, (0.3, False)),  # never reached: the one that comes closest, said so
    ],
)
def test_pick_the_effect(relax, share, expected):
    table = pd.DataFrame({"p_drop": [0.005, 0.01, 0.05, 0.3], "relax_js+majority": relax})
    found = calibrate.pick(table, anchor("effect", relax_share=share))
    assert (found["p_drop"], found["reached"]) == expected


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


def test_the_calibration_makes_no_tensor_off_the_models_device(noisy_pair, positions):
    """collect, measure and the per-dimension view on the CPU: every tensor they make is placed on a device named
    (on CUDA one made on the default device would mix with h, the head and the masks). The masks' uniforms are
    drawn on the CPU on purpose (one seeded generator per position) and moved where the paths run."""
    outputs = calibrate.lossless_outputs(noisy_pair, [_Item(PROMPTS[0])], 6)
    u = calibrate.uniforms(len(positions.argmax), 3, positions.h.shape[-1], seed=0)
    with DeviceMixing(calibrate.collect, calibrate.measure, calibrate.dimension_flips) as mixing:
        calibrate.collect(noisy_pair, outputs)
        calibrate.measure(noisy_pair, positions, 0.3, u)
        calibrate.dimension_flips(noisy_pair, positions, limit=6, top=3)
    assert [str(c) for c in mixing.calls] == []


@pytest.mark.parametrize("a, L", [(0.0, 5), (0.3, 5), (0.8, 10), (0.95, 10)])
def test_the_acceptance_rate_is_read_back_from_tau(a, L):
    tau = sum(a**i for i in range(L + 1))  # (1 - a^(L+1)) / (1 - a)
    assert paper.acceptance_from_tau(tau, L) == pytest.approx(a, abs=1e-9)


def test_the_relaxed_share_of_rejections():
    """Lossless accepts 60% of drafts, the relaxed rule 70%: it accepts a quarter of the 40% lossless rejects."""
    tau = {a: sum(a**i for i in range(6)) for a in (0.6, 0.7)}
    assert paper.relaxed_share(tau[0.6], tau[0.7], 5) == pytest.approx(0.25)
    with pytest.raises(ValueError, match=r"tau must lie in \[1, 6\]"):
        paper.acceptance_from_tau(7.0, 5)
