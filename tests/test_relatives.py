"""Handcrafted-logit cases with known answers for DropMatch's relatives (Fuzzy SD, typical acceptance, top-k, MARS,
FLy, EARS) and for the statistics they read, greedy (T = 0: exact match is the lossless test) and sampled (T > 0:
the round's uniforms u decide the lossless test)."""

import math

import pytest
import torch

from dropmatch.config import KnobPair
from dropmatch.criteria import KNOBS, REASONS, RULES
from dropmatch.evidence import Evidence
from dropmatch.rules.target_only import typical_bound


def evidence(
    p: list[float] | None = None,
    q: list[float] | None = None,
    draft: int = 0,
    z: list[float] | None = None,
    u: float | None = None,
):
    """One position: target logits z (or log p, so p is exact), draft distribution q (uniform by default); with `u`,
    a sampled round (T = 1) whose lossless test is u q(d) <= p(d); without, greedy (exact match)."""
    logits = torch.tensor([z]) if z is not None else torch.tensor([p]).log()
    V = logits.shape[-1]
    q_logprobs = torch.tensor([q or [1.0 / V] * V]).log()
    u = None if u is None else torch.tensor([u])
    return Evidence(draft=torch.tensor([draft]), q_logprobs=q_logprobs, target_logits=logits, u=u)


def round_of(p_rows: list[list[float]], drafts: list[int], gamma: int, u: list[float] | None = None) -> Evidence:
    """A whole round: one target distribution per drafted position (exact, as log p), a uniform draft."""
    logits = torch.tensor(p_rows).log()
    V = logits.shape[-1]
    return Evidence(
        draft=torch.tensor(drafts),
        q_logprobs=torch.full((len(drafts), V), -math.log(V)),
        target_logits=logits,
        u=None if u is None else torch.tensor(u),
        gamma=gamma,
    )


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
        ([5.0, 4.0, 3.0, 2.0], 2, 2, False),  # third in the target's order
        ([5.0, 4.0, 3.0, 2.0], 2, 3, True),
        ([5.0, 4.0, 4.0, 2.0], 2, 2, False),  # tied for second, but id 1 comes first: third, as argmax orders them
        ([5.0, 4.0, 4.0, 2.0], 1, 2, True),
        ([5.0, 5.0, 3.0, 2.0], 1, 2, True),  # tied with the argmax (id 0): second, so k = 2 accepts it
        ([5.0, 5.0, 3.0, 2.0], 1, 1, False),  # ... and k = 1 does not: exact match decides
        ([5.0, 4.0, 3.0, 2.0], 0, 1, True),  # the argmax at T = 0: exact match accepts it
    ],
)
def test_top_k_membership_at_T0(z, draft, k, expected):
    assert accepts("top-k", evidence(z=z, draft=draft), k) is expected


@pytest.mark.parametrize("k", [1, 2, 3])
def test_top_k_sends_the_argmax_through_the_lossless_test_at_T_above_0(k):
    """At T > 0 the target's top-1 is not accepted outright (that emitted it 72% of the time at k 1 on the tiny
    pair): p(0) = 0.5 and q(0) = 0.9 pass only for u <= 0.556; the second token is accepted from k 2 on."""
    p, q = [0.5, 0.3, 0.2], [0.9, 0.05, 0.05]
    for u in (0.1, 0.5, 0.6, 0.99):
        assert accepts("top-k", evidence(p, q, draft=0, u=u), k) is (u * 0.9 <= 0.5)
    assert accepts("top-k", evidence(p, [0.1, 0.8, 0.1], draft=1, u=0.99), k) is (k >= 2)  # 0.99 * 0.8 > 0.3


@pytest.mark.parametrize(
    "z, draft, theta, expected",
    [
        ([10.0, 9.5, 1.0], 1, 0.9, True),  # z2 / z1 = 0.95 > 0.9: the second token is accepted
        ([10.0, 9.5, 1.0], 2, 0.9, False),  # ... but never the third
        ([10.0, 8.0, 1.0], 1, 0.9, False),  # 0.8: a clear top-1
        ([10.0, 8.0, 1.0], 1, 0.75, True),
        ([10.0, 9.0, 1.0], 1, 0.9, False),  # exactly 0.9 is not above it
        ([-1.0, -1.05, -5.0], 1, 0.9, False),  # z1 <= 0: the ratio means nothing, no relaxation
        ([-1.0, -1.05, -5.0], 0, 0.9, True),  # elsewhere exact match decides: the top-1 is accepted at T = 0
        ([10.0, 9.99, 1.0], 1, 1.0, False),  # theta 1: no ratio is above it, nothing relaxes
    ],
)
def test_mars_margin_rule_at_T0(z, draft, theta, expected):
    assert accepts("mars", evidence(z=z, draft=draft), theta) is expected


def test_mars_at_T_above_0_relaxes_only_where_the_target_hesitates():
    """Where z2 / z1 <= theta the lossless test decides, for the top-1 too; where it hesitates, the top 2 and only
    they are accepted (as the code's deterministic test: a third token is rejected even where u passes it)."""
    clear = [math.log(x) + 10 for x in (0.7, 0.2, 0.1)]  # z2 / z1 = 8.39 / 9.64 = 0.87 at T = 1
    q = [0.9, 0.05, 0.05]
    assert accepts("mars", evidence(z=clear, q=q, draft=0, u=0.7), 0.9)  # 0.7 * 0.9 <= 0.7
    assert not accepts("mars", evidence(z=clear, q=q, draft=0, u=0.9), 0.9)  # 0.9 * 0.9 > 0.7: rejected
    assert accepts("mars", evidence(z=clear, q=q, draft=0, u=0.9), 0.85)  # hesitates at 0.85: the top-1 passes
    assert not accepts("mars", evidence(z=clear, q=[0.1, 0.1, 0.8], draft=2, u=0.01), 0.85)  # rank 3, u passes
    for u in (0.2, 0.5, 0.8, 0.95):  # theta 1: the lossless test exactly
        ev = evidence(z=clear, q=q, draft=0, u=u)
        assert accepts("mars", ev, 1.0) is bool(ev.native[0])


def test_rules_run_at_their_sources_default_knob():
    ev = evidence([0.6, 0.3, 0.1], draft=2)
    assert RULES["typical"](ev).accept.tolist() == RULES["typical"](ev, KNOBS["typical"].default).accept.tolist()
    assert KNOBS["typical"].default == 0.09 and KNOBS["mars"].default == 0.9


def test_a_rule_reads_the_same_from_evidence_and_from_recorded_numbers():
    """The inspector rebuilds a verdict from a record's numbers: a dict of one-element tensors decides as the
    Evidence it came from."""
    gen = torch.Generator().manual_seed(0)
    for u in (None, torch.rand(3, generator=gen)):  # greedy (u NaN in the record) and sampled
        ev = Evidence(
            draft=torch.tensor([1, 4, 2]),
            q_logprobs=torch.log_softmax(torch.randn(3, 6, generator=gen), -1),
            target_logits=torch.randn(3, 6, generator=gen) * 3 + 2,
            u=u,
            gamma=2,
        )
        for name, rule in RULES.items():
            if rule.needs_paths:
                continue
            for row in range(3):
                numbers = {s: ev[s][row : row + 1] for s in rule.reads}
                for knob in (0.05, 0.3, 0.6, 2) if rule.knob is not None else (None,):
                    if isinstance(rule.knob, KnobPair):
                        knob = (3, knob)
                    elif rule.knob is not None:
                        knob = max(knob, 1) if rule.knob.integer else min(knob, rule.knob.hi)
                    want = [bool(rule(ev, knob).accept[row])]
                    assert rule.decide(numbers, knob).accept.tolist() == want, (name, row)


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
    assert f"vs bound {bound:.3g} " in RULES["typical"].line(ev, epsilon)
    accepted, numbers = RULES["typical"].reading(ev, epsilon)
    assert accepted is (p_d > bound) and numbers["bound"] == pytest.approx(bound)  # the verdict carries its bound


def test_every_rule_but_dropmatchs_is_one_entry_that_decides_explains_and_draws_from_its_own_numbers():
    """A rule is all the registry needs: it decides at its default knob, its reasons are in the legend, and its explain
    line and figure read the statistics it shows and the numbers its verdict computed, nothing else."""
    greedy = evidence([0.5, 0.3, 0.2], q=[0.2, 0.3, 0.5], draft=1)
    sampled = evidence([0.5, 0.3, 0.2], q=[0.2, 0.3, 0.5], draft=1, u=0.7)
    for name, rule in RULES.items():
        if rule.needs_paths:
            continue
        assert rule.label.endswith(rule.title) and rule.color.startswith("#")
        assert all(REASONS[reason.name] is reason for reason in rule.reasons)
        for ev in (greedy, sampled):
            accepted, numbers = rule.reading(ev)
            assert set(numbers) >= set(rule.shows)
            assert rule.explain(numbers, rule.setting(None))
            what, panels = rule.figure(numbers, rule.setting(None), accepted)
            assert what and panels, name


FLAT, SURE = [0.4, 0.3, 0.2, 0.1], [0.97, 0.01, 0.01, 0.01]  # H3 1.0496 and 0.1216 nats


def test_fly_h3_is_the_entropy_of_the_top_three_probabilities_as_they_are():
    """Not renormalised, not divided by log 3: a uniform p over 4 gives 3 * 0.25 * ln 4, over 10 gives 0.3 ln 10."""
    ev = round_of([FLAT, SURE, [0.25] * 4], [0, 0, 0], gamma=3)
    want = [-sum(x * math.log(x) for x in FLAT[:3]), -0.97 * math.log(0.97) - 0.02 * math.log(0.01), 0.75 * math.log(4)]
    assert ev["h3"].tolist() == pytest.approx(want, rel=1e-5)
    assert float(round_of([[0.1] * 10], [0], gamma=1)["h3"][0]) == pytest.approx(0.3 * math.log(10), rel=1e-5)


def fly_round(first: list[float], draft0: int, rest_ok: list[bool], gamma: int = 5) -> Evidence:
    """Greedy round: position 0 drafts `draft0` under `first`; each later position drafts the argmax (0) of FLAT
    where `rest_ok`, else token 1 (rejected by exact match)."""
    return round_of([first] + [FLAT] * len(rest_ok), [draft0] + [0 if ok else 1 for ok in rest_ok], gamma)


@pytest.mark.parametrize(
    "first, rest_ok, gamma, theta, expected",
    [
        (FLAT, [True] * 4, 5, 0.3, True),  # H3 1.05 >= 0.3, W = 4 natively accepted drafts follow: deferred
        (FLAT, [True] * 4, 5, 1.04, True),
        (FLAT, [True] * 4, 5, 1.05, False),  # H3 below theta
        (FLAT, [True] * 4, 5, 1.1, False),  # theta above ln 3: never
        (SURE, [True] * 4, 5, 0.3, False),  # a confident target: H3 0.12
        (FLAT, [True, True, False, True], 5, 0.3, False),  # the window holds a native rejection
        (FLAT, [True] * 3, 5, 0.3, False),  # a short round (4 drafts): the window of 4 does not fit
        (FLAT, [True, True], 3, 0.3, True),  # gamma 3: W = 2
        (FLAT, [True] * 6, 7, 0.3, True),  # gamma 7: W = 6
        (FLAT, [True] * 5, 8, 0.3, False),  # gamma 8: W = 6 still, but a 6-draft round holds only 5 after
        (FLAT, [], 1, 0.3, True),  # gamma 1: W = 0, vLLM defers with no window
        (FLAT, [True] * 4, 0, 0.3, False),  # the draft length unknown: no window, no deferral
    ],
)
def test_fly_defers_a_rejection_at_T0(first, rest_ok, gamma, theta, expected):
    ev = fly_round(first, 1, rest_ok, gamma)
    assert not ev.native[0]  # exact match rejects draft 1 (the argmax is 0)
    assert bool(RULES["fly"](ev, theta).accept[0]) is expected


def test_fly_at_gamma_5_defers_only_the_first_draft_and_reads_native_verdicts():
    # drafts 1 and 2 both rejected, at high entropy: draft 1 cannot be deferred (3 drafts follow, W = 4), and
    # draft 0's window counts the native rejection at 1, not a deferral there
    ev = round_of([FLAT] * 5, [1, 1, 0, 0, 0], gamma=5)
    assert RULES["fly"](ev, 0.0).accept.tolist() == [False, False, True, True, True]
    assert ev.after.tolist() == [0, 3, 2, 1, 0]


def test_fly_needs_the_target_to_allow_the_draft():
    z = [math.log(x) for x in FLAT[:3]] + [-math.inf]  # p(d) = 0 at d = 3
    logits = torch.cat([torch.tensor([z]), torch.tensor([FLAT] * 4).log()])
    ev = Evidence(
        draft=torch.tensor([3, 0, 0, 0, 0]), q_logprobs=torch.full((5, 4), -math.log(4)), target_logits=logits, gamma=5
    )
    assert float(ev["p_d"][0]) == 0 and float(ev["h3"][0]) > 1.0 and ev.after.tolist()[0] == 4
    assert not RULES["fly"](ev, 0.3).accept[0]


def test_fly_at_T_above_0_reads_the_rounds_own_uniforms():
    """u q(d) <= p(d) with q uniform over 4 (0.25): u 0.9 rejects p(d) 0.2, u 0.5 accepts it."""
    drafts = [2, 2, 2, 2, 2]
    deferred = round_of([FLAT] * 5, drafts, gamma=5, u=[0.9, 0.5, 0.5, 0.5, 0.5])
    blocked = round_of([FLAT] * 5, drafts, gamma=5, u=[0.9, 0.5, 0.5, 0.9, 0.5])
    assert deferred.native.tolist() == [False, True, True, True, True]
    assert RULES["fly"](deferred, 0.3).accept.tolist() == [True] * 5
    assert RULES["fly"](blocked, 0.3).accept.tolist() == [False, True, True, False, True]
    assert RULES["fly"](deferred, 1.1).accept.tolist() == deferred.native.tolist()


@pytest.mark.parametrize(
    "u, beta, expected",
    [
        # p(d) 0.2, q(d) 0.5: ratio 0.4; max p 0.4, so the tolerance is beta * 0.6
        (0.39, 0.0, True),  # the lossless test accepts
        (0.41, 0.0, False),  # beta 0: the lossless test exactly
        (0.6, 0.5, True),  # 0.6 < 0.4 + 0.3
        (0.69, 0.5, True),
        (0.71, 0.5, False),
        (0.99, 1.0, True),  # 0.4 + 0.6 = 1: every u
    ],
)
def test_ears_widens_the_lossless_threshold_by_the_targets_uncertainty_at_T_above_0(u, beta, expected):
    ev = evidence([0.4, 0.2, 0.2, 0.2], [0.1, 0.5, 0.2, 0.2], draft=1, u=u)
    assert accepts("ears", ev, beta) is expected


@pytest.mark.parametrize(
    "p, q, draft, beta, expected",
    [
        ([0.4, 0.2, 0.2, 0.2], [0.1, 0.5, 0.2, 0.2], 1, 1.0, True),  # 0.4 + 1.0 * 0.6 >= 1: certain
        ([0.4, 0.2, 0.2, 0.2], [0.1, 0.5, 0.2, 0.2], 1, 0.9, False),  # 0.4 + 0.54 < 1
        ([0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.2, 0.5], 1, 0.0, True),  # p1(d) >= q1(d): certain even at beta 0
        ([0.4, 0.2, 0.2, 0.2], [0.7, 0.1, 0.1, 0.1], 0, 0.0, True),  # the argmax: exact match
    ],
)
def test_ears_at_T0_is_the_projects_reading_the_acceptance_certain_whatever_u(p, q, draft, beta, expected):
    assert accepts("ears", evidence(p, q, draft=draft), beta) is expected


def test_ears_accepts_a_superset_of_the_lossless_test():
    gen = torch.Generator().manual_seed(1)
    ev = Evidence(
        draft=torch.randint(0, 6, (200,), generator=gen),
        q_logprobs=torch.log_softmax(torch.randn(200, 6, generator=gen), -1),
        target_logits=torch.randn(200, 6, generator=gen) * 2,
        u=torch.rand(200, generator=gen),
    )
    previous = ev.native
    for beta in (0.0, 0.2, 0.5, 1.0, 2.0):
        hit = RULES["ears"](ev, beta).accept
        assert bool((hit >= previous).all())  # larger beta relaxes more, never less
        previous = hit
    assert RULES["ears"](ev, 0.0).accept.tolist() == ev.native.tolist()
    assert int(previous.sum()) > int(ev.native.sum())


@pytest.mark.parametrize("name", ["fly", "ears"])
def test_the_new_rules_explain_what_they_read(name):
    ev = round_of([FLAT] * 5, [3, 0, 0, 0, 0], gamma=5, u=[0.9, 0.1, 0.1, 0.1, 0.1])  # 0.9 * 0.25 > p(d) 0.1
    line = RULES[name].line(ev)
    want = (
        "H3 1.05 vs θ 0.3; lossless rejects d; it accepts the next 4 in a row (window W 4" if name == "fly" else "u 0.9"
    )
    assert want in line, line
