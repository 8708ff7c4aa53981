"""Handcrafted-logit cases with known answers for every DropMatch criterion, the prefix rule and the lossless tests.

(The relatives' cases are in test_relatives.py.)
"""

import math

import pytest
import torch

from dropmatch.criteria import RULES, accepted_length, residual_sample
from dropmatch.evidence import Evidence
from dropmatch.heads import PathStats, js_divergence

HI, LO = 10.0, -10.0


class _Criteria:
    """RULES[name] applied to path statistics alone (the DropMatch criteria read nothing else)."""

    def __getitem__(self, name):
        def rule(stats: PathStats):
            unmasked = torch.zeros_like(stats.q_logprobs)  # never read by a rule on the paths
            return RULES[name](Evidence(stats.draft, stats.q_logprobs, unmasked, paths=stats))

        return rule


CRITERIA = _Criteria()


def paths_voting(votes: list[int], V: int = 4) -> torch.Tensor:
    """One position whose K paths put a +10 logit on the given tokens.  # [1, K, V]"""
    logits = torch.full((1, len(votes), V), LO)
    for i, tok in enumerate(votes):
        logits[0, i, tok] = HI
    return logits


def stats(votes: list[int], draft: int, q: list[float] | None = None, V: int = 4) -> PathStats:
    q = torch.tensor([q or [1.0 / V] * V]).log()
    return PathStats(logits=paths_voting(votes, V), draft=torch.tensor([draft]), q_logprobs=q)


@pytest.mark.parametrize(
    "votes, draft, naive, majority, strict",
    [
        ([0, 0, 0, 0, 0], 0, True, True, True),  # unanimous for the draft
        ([1, 1, 1, 0, 2], 0, True, False, False),  # one path agrees: naive only
        ([0, 0, 1, 1, 2], 0, True, False, False),  # 2-2 tie: no majority
        ([0, 0, 1, 2, 3], 0, True, True, False),  # plurality with 2 of 5 votes, not > K/2
        ([0, 0, 0, 1, 2], 0, True, True, True),  # 3 of 5 votes
        ([1, 2, 3, 1, 1], 0, False, False, False),  # no path votes for the draft
    ],
)
def test_vote_rules(votes, draft, naive, majority, strict):
    s = stats(votes, draft)
    assert bool(CRITERIA["naive"](s).accept[0]) is naive
    assert bool(CRITERIA["majority"](s).accept[0]) is majority
    assert bool(CRITERIA["majority-strict"](s).accept[0]) is strict


def test_js_accepts_draft_inside_path_spread_and_rejects_outside():
    # Paths disagree mildly around token 0; centroid is near token 0.
    logits = torch.tensor([[[3.0, 1.0, 0.0, 0.0], [2.0, 2.0, 0.0, 0.0], [3.0, 0.0, 1.0, 0.0]]])
    near = torch.log_softmax(torch.tensor([[2.7, 1.0, 0.3, 0.0]]), -1)  # close to the centroid
    far = torch.log_softmax(torch.tensor([[0.0, 0.0, 0.0, 5.0]]), -1)  # mass on a token no path likes
    inside = PathStats(logits=logits, draft=torch.tensor([0]), q_logprobs=near)
    outside = PathStats(logits=logits, draft=torch.tensor([3]), q_logprobs=far)
    assert bool(CRITERIA["js"](inside).accept[0])
    assert not bool(CRITERIA["js"](outside).accept[0])
    assert float(inside.js_draft[0]) <= float(inside.js_paths.max())


def test_js_plus_majority_is_js_or_majority_with_both_reasons():
    # Three paths sure of token 0, two leaning slightly to token 1: a tight spread, a majority for 0.
    logits = torch.tensor([[[HI, 0.0, 0.0, 0.0]] * 3 + [[5.0, 5.5, 0.0, 0.0]] * 2])
    far = torch.tensor([[0.01, 0.01, 0.01, 0.97]]).log()  # q puts its mass where no path does
    v = CRITERIA["js+majority"](PathStats(logits=logits, draft=torch.tensor([0]), q_logprobs=far))
    assert v.components["js"].tolist() == [False]
    assert v.components["majority"].tolist() == [True]
    assert v.accept.tolist() == [True]
    assert list(v.components) == ["js", "majority"]  # the order reasons are given in


def test_centroid_is_softmax_of_mean_logits():
    logits = torch.randn(2, 5, 7, generator=torch.Generator().manual_seed(0))
    s = PathStats(
        logits=logits, draft=torch.zeros(2, dtype=torch.long), q_logprobs=torch.log_softmax(torch.randn(2, 7), -1)
    )
    assert torch.allclose(s.centroid_logprobs.exp(), torch.softmax(logits.mean(1), -1), atol=1e-6)
    mean_of_probs = torch.softmax(logits, -1).mean(1)
    assert not torch.allclose(s.centroid_logprobs.exp(), mean_of_probs, atol=1e-3)


def test_js_divergence_known_values():
    p = torch.tensor([1.0, 0.0]).log()
    q = torch.tensor([0.0, 1.0]).log()
    assert math.isclose(float(js_divergence(p, q)), math.log(2), rel_tol=1e-6)  # disjoint: ln 2, nats
    assert float(js_divergence(p, p)) == pytest.approx(0.0, abs=1e-7)
    a, b = torch.tensor([0.5, 0.5]), torch.tensor([0.9, 0.1])
    m = (a + b) / 2
    expected = 0.5 * float((a * (a / m).log()).sum()) + 0.5 * float((b * (b / m).log()).sum())
    assert float(js_divergence(a.log(), b.log())) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize(
    "mask, length",
    [([1, 1, 1], 3), ([1, 0, 1], 1), ([0, 1, 1], 0), ([], 0), ([1, 1, 0, 1, 1], 2)],
)
def test_prefix_rule(mask, length):
    assert accepted_length(torch.tensor(mask, dtype=torch.bool)) == length


def native(draft, target_logits, q, u=None) -> list[bool]:
    """The lossless test as a round runs it (Evidence.native), on handmade logits and draft distributions."""
    ev = Evidence(torch.tensor(draft), torch.log(torch.as_tensor(q, dtype=torch.float)), target_logits, u=u)
    return ev.native.tolist()


def test_lossless_greedy_exact_match():
    z = torch.tensor([[HI, LO, LO], [LO, HI, LO], [LO, LO, HI]])
    assert native([0, 2, 2], z, torch.full((3, 3), 1 / 3)) == [True, False, True]


def test_rejection_sampling_edge_probabilities():
    z = torch.tensor([[0.0, -math.inf], [-math.inf, 0.0]])  # p = one-hot on token 0, then on token 1
    q = torch.full((2, 2), 0.5)
    for u in torch.rand(20, 2, generator=torch.Generator().manual_seed(0)):  # p(d) >= q(d): always; p(d) = 0: never
        assert native([0, 0], z, q, u=u) == [True, False]


def test_the_runs_after_each_position_count_later_lossless_accepts():
    z = torch.tensor([[HI, LO]] * 5)
    ev = Evidence(torch.tensor([0, 1, 0, 0, 1]), torch.log(torch.full((5, 2), 0.5)), z)
    assert ev.native.tolist() == [True, False, True, True, False]
    assert ev.after.tolist() == [0, 2, 1, 0, 0]
    part = ev.rows([1, 3])
    assert part.native.tolist() == [False, True] and part.after.tolist() == [2, 0]  # counted over the whole round


def test_rejection_sampling_reproduces_target_distribution():
    """Draft from q, accept/resample as Leviathan et al.: the emitted token is distributed as p."""
    g = torch.Generator().manual_seed(1)
    p = torch.tensor([0.5, 0.3, 0.15, 0.05])
    q = torch.tensor([0.1, 0.2, 0.3, 0.4])
    n = 40_000
    drafts = torch.multinomial(q, n, replacement=True, generator=g)
    u = torch.rand(n, generator=g)
    ok = Evidence(drafts, torch.log(q).expand(n, 4), torch.log(p).expand(n, 4), u=u).native
    out = drafts.clone()
    for i in (~ok).nonzero()[:, 0].tolist():
        out[i] = residual_sample(p, q, g)
    freq = torch.bincount(out, minlength=4).float() / n
    assert torch.allclose(freq, p, atol=0.01), freq
    # and the draft alone is clearly not p, so the test can fail
    assert not torch.allclose(torch.bincount(drafts, minlength=4).float() / n, p, atol=0.05)


def test_js_threshold_is_the_max_over_paths_not_the_min_or_mean():
    # Five paths: four tight around token 0, one spread out. The draft's JS to the centroid lies strictly
    # between the smallest path JS and the largest one (and above their mean): only max accepts it.
    logits = torch.tensor([[[4.0, 1.0, 0.0, 0.0]] * 4 + [[1.0, 1.0, 1.0, 0.0]]])
    stats_ = PathStats(
        logits=logits, draft=torch.tensor([0]), q_logprobs=torch.log_softmax(torch.tensor([[2.0, 1.0, 0.5, 0.0]]), -1)
    )
    js_paths, js_draft = stats_.js_paths[0], float(stats_.js_draft[0])
    assert float(js_paths.min()) < js_draft <= float(js_paths.max())
    assert js_draft > float(js_paths.mean())
    assert CRITERIA["js"](stats_).accept.tolist() == [True]
