"""Handcrafted-logit cases with known answers for DropMatch's relatives (Fuzzy SD, typical acceptance, top-k, MARS)
and for the statistics they read."""

import math

import pytest
import torch

from dropmatch.config import KNOBS
from dropmatch.criteria import REASONS, RULES
from dropmatch.evidence import Evidence
from dropmatch.relatives import RELATIVES, typical_bound


def evidence(p: list[float] | None = None, q: list[float] | None = None, draft: int = 0, z: list[float] | None = None):
    """One position: target logits z (or log p, so p is exact), draft distribution q (uniform by default)."""
    logits = torch.tensor([z]) if z is not None else torch.tensor([p]).log()
    V = logits.shape[-1]
    q_logprobs = torch.tensor([q or [1.0 / V] * V]).log()
    return Evidence(draft=torch.tensor([draft]), q_logprobs=q_logprobs, target_logits=logits)


def accepts(name: str, ev: Evidence, knob=None) -> bool:
    return bool(RULES[name](ev, knob).accept[0])


def test_fuzzy_tv_compares_the_whole_distributions_whatever_the_draft():
    p, q = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]  # TV = (0.3 + 0 + 0.3) / 2 = 0.3
    assert float(evidence(p, q)["tv"]) == pytest.approx(0.3, abs=1e-6)
    for draft in range(3):  # Fuzzy SD ignores which token was drafted
        assert accepts("fuzzy-tv", evidence(p, q, draft), 0.3001)
        assert not accepts("fuzzy-tv", evidence(p, q, draft), 0.2999)


def test_fuzzy_kl_is_kl_of_the_draft_from_the_target():
    p, q = [0.5, 0.5], [0.9, 0.1]
    kl_qp = 0.9 * math.log(0.9 / 0.5) + 0.1 * math.log(0.1 / 0.5)  # 0.368: the official code's direction
    kl_pq = 0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(0.5 / 0.1)  # 0.511: the other one
    assert float(evidence(p, q)["kl_qp"]) == pytest.approx(kl_qp, rel=1e-5)
    assert accepts("fuzzy-kl", evidence(p, q), 0.4)  # KL(p || q) would reject at this threshold
    assert kl_pq > 0.4


def test_fuzzy_kl_is_infinite_where_the_target_misses_the_drafts_support():
    ev = evidence(z=[0.0, 0.0, float("-inf")], q=[0.25, 0.25, 0.5])  # a padded id: p = 0 where q = 0.5
    assert math.isinf(float(ev["kl_qp"]))
    assert not accepts("fuzzy-kl", ev, 100.0)
    assert float(ev["js_pq"]) <= math.log(2)


def test_fuzzy_js_known_values_in_nats():
    assert float(evidence([1.0, 0.0], [0.0, 1.0])["js_pq"]) == pytest.approx(math.log(2), rel=1e-6)  # disjoint
    assert float(evidence([0.3, 0.7], [0.3, 0.7])["js_pq"]) == pytest.approx(0.0, abs=1e-7)
    assert accepts("fuzzy-js", evidence([0.3, 0.7], [0.3, 0.7], draft=0), 0.0)  # identical: accepted at 0


@pytest.mark.parametrize(
    "p, draft, epsilon, expected",
    [
        # H(p) = 0.898, exp(-H) = 0.407: bound = min(0.2, sqrt(0.2) * 0.407 = 0.182) = 0.182
        ([0.6, 0.3, 0.1], 1, 0.2, True),  # 0.3 > 0.182
        ([0.6, 0.3, 0.1], 2, 0.2, False),  # 0.1 < 0.182
        # Medusa's default: min(0.09, 0.3 * 0.407 = 0.122) = 0.09, so 0.1 passes
        ([0.6, 0.3, 0.1], 2, 0.09, True),
        # uniform over 4: the entropy term binds, min(0.3, 0.548 * 0.25 = 0.137) = 0.137 < 0.25
        ([0.25, 0.25, 0.25, 0.25], 3, 0.3, True),
        # a confident target: min(0.3, 0.548 * exp(-H) = 0.52) = 0.3 > 0.02
        ([0.98, 0.02], 1, 0.3, False),
    ],
)
def test_typical_acceptance(p, draft, epsilon, expected):
    H = -sum(x * math.log(x) for x in p)
    bound = min(epsilon, math.sqrt(epsilon) * math.exp(-H))
    assert (p[draft] > bound) is expected  # the case means what it says
    assert accepts("typical", evidence(p, draft=draft), epsilon) is expected


def test_typical_uses_the_smaller_of_the_two_bounds():
    # uniform over 4 at epsilon 0.3: a max() instead of min() would require p(d) > 0.3 and reject 0.25
    assert accepts("typical", evidence([0.25] * 4, draft=0), 0.3)


@pytest.mark.parametrize(
    "z, draft, k, expected",
    [
        ([5.0, 4.0, 3.0, 2.0], 2, 2, False),  # rank 3
        ([5.0, 4.0, 3.0, 2.0], 2, 3, True),
        ([5.0, 4.0, 4.0, 2.0], 2, 2, True),  # tied for second: rank 2 (only strictly larger logits count)
        ([5.0, 4.0, 3.0, 2.0], 0, 1, True),  # the top-1 always
    ],
)
def test_top_k_membership(z, draft, k, expected):
    assert accepts("top-k", evidence(z=z, draft=draft), k) is expected


@pytest.mark.parametrize(
    "z, draft, theta, expected",
    [
        ([10.0, 9.5, 1.0], 1, 0.9, True),  # z2 / z1 = 0.95 > 0.9: the second token is accepted
        ([10.0, 9.5, 1.0], 2, 0.9, False),  # ... but never the third
        ([10.0, 8.0, 1.0], 1, 0.9, False),  # 0.8: a clear top-1
        ([10.0, 8.0, 1.0], 1, 0.75, True),
        ([10.0, 9.0, 1.0], 1, 0.9, False),  # exactly 0.9 is not above it
        ([-1.0, -1.05, -5.0], 1, 0.9, False),  # z1 <= 0: the ratio means nothing, no relaxation
        ([-1.0, -1.05, -5.0], 0, 0.9, True),  # the top-1 is always accepted
    ],
)
def test_mars_margin_rule(z, draft, theta, expected):
    assert accepts("mars", evidence(z=z, draft=draft), theta) is expected


def test_rules_run_at_their_sources_default_knob():
    ev = evidence([0.6, 0.3, 0.1], draft=2)
    assert RULES["typical"](ev).accept.tolist() == RULES["typical"](ev, KNOBS["typical"].default).accept.tolist()
    assert KNOBS["typical"].default == 0.09 and KNOBS["mars"].default == 0.9


def test_a_rule_reads_the_same_from_evidence_and_from_recorded_numbers():
    """The inspector rebuilds a verdict from a record's numbers: a dict of one-element tensors decides as the
    Evidence it came from."""
    gen = torch.Generator().manual_seed(0)
    ev = Evidence(
        draft=torch.tensor([1, 4, 2]),
        q_logprobs=torch.log_softmax(torch.randn(3, 6, generator=gen), -1),
        target_logits=torch.randn(3, 6, generator=gen) * 3 + 2,
    )
    for name in KNOBS:
        rule = RULES[name]
        for row in range(3):
            numbers = {s: ev[s][row : row + 1] for s in rule.reads}
            for knob in (0.05, 0.3, 0.6, 2):
                knob = max(knob, 1) if KNOBS[name].integer else min(knob, KNOBS[name].hi)
                assert rule.decide(numbers, knob).accept.tolist() == [bool(rule(ev, knob).accept[row])], (name, row)


def test_relatives_never_ask_for_paths_and_dropmatch_rules_refuse_without_them():
    ev = evidence([0.6, 0.3, 0.1])
    assert all(not RULES[name].needs_paths for name in KNOBS)
    with pytest.raises(ValueError, match="needs the K dropout paths"):
        RULES["js"](ev)


@pytest.mark.parametrize("epsilon", [0.09, 0.2, 0.3])
def test_typical_explains_its_decision_by_the_bound_it_decides_by(epsilon):
    ev = evidence([0.6, 0.3, 0.1], draft=2)
    p_d, H = float(ev["p_d"][0]), float(ev["entropy"][0])
    bound = float(typical_bound(ev["entropy"], epsilon)[0])
    assert bound == pytest.approx(min(epsilon, math.sqrt(epsilon) * math.exp(-H)), rel=1e-6)
    assert accepts("typical", ev, epsilon) is (p_d > bound)
    assert f"vs bound {bound:.3g} " in RULES["typical"].explain({"p_d": p_d, "entropy": H}, epsilon)


def test_every_relative_is_one_registry_entry_with_its_presentation():
    """A relative's RELATIVES entry is all the registry needs: its rule decides as its test, and carries its title,
    its reads, its knob and a legend entry for its reason."""
    ev = evidence([0.5, 0.3, 0.2], q=[0.2, 0.3, 0.5], draft=1)
    for name, rel in RELATIVES.items():
        rule = RULES[name]
        assert rule.reads == rel.reads and rule.knob is KNOBS[name] and rule.label == f"Relative: {rel.title}"
        assert rule(ev).accept.tolist() == rel.test(ev, KNOBS[name].default).tolist()
        assert REASONS[rel.reason].word == rel.reason_word and REASONS[rel.reason].family == "relative"
        assert rule.explain({s: float(ev[s][0]) for s in rule.shows}, KNOBS[name].default)
