"""Speculative cascades (TokenV3 and OPT): handcrafted-logit decisions at T = 0 and T > 0, pi and its residual
computed by hand, the statistics the inspector re-decides from, and at T 0.7 the emitted distribution (chi-square).
"""

import math

import pytest
import torch

from dropmatch.config import DecodeConfig
from dropmatch.criteria import KNOBS, RULES
from dropmatch.decode import generate
from dropmatch.evidence import Evidence
from dropmatch.rules.own_distribution import opt_pi, token_v3_pi

P = [0.5, 0.3, 0.15, 0.05]  # the target at T = 1: ratios to its top 1, 0.6, 0.3, 0.1


def evidence(p, q, draft: int, u: float | None = None, T: float = 1.0) -> Evidence:
    """One position: log p as the target's logits (so p1 = p exactly), q the draft's distribution at T = 1."""
    z, zq = torch.tensor([p]).log(), torch.tensor([q]).log()
    uniform = None if u is None else torch.tensor([u])
    return Evidence(torch.tensor([draft]), torch.log_softmax(zq / T, -1), z, T, u=uniform)


def verdict(name: str, ev: Evidence, alpha: float) -> tuple[bool, str | None]:
    """Accepted, and the reason it carries (exact where the lossless test accepts too)."""
    v = RULES[name](ev, alpha)
    reasons = [r for r, hit in v.components.items() if bool(hit[0])]
    assert len(reasons) <= 1 and bool(v.accept[0]) == bool(reasons)
    return bool(v.accept[0]), (reasons or [None])[0]


@pytest.mark.parametrize(
    "draft, alpha, expected",
    [
        (1, 0.5, (True, "cascade")),  # ratio 0.6 >= 0.5: in A
        (1, 0.3, (False, None)),  # 0.6 < 0.7
        (2, 0.5, (False, None)),  # 0.3 < 0.5
        (2, 0.75, (True, "cascade")),  # 0.3 >= 0.25
        (0, -1.0, (True, "exact")),  # A is empty, but the argmax is exact match
        (1, -1.0, (False, None)),
        (1, 0.0, (False, None)),  # alpha 0: only ties with the top-1
    ],
)
def test_token_v3_greedy(draft, alpha, expected):
    q = [0.1, 0.1, 0.1, 0.1]
    q[draft] = 0.7  # the greedy draft is q's argmax
    assert verdict("cascade-token", evidence(P, q, draft), alpha) == expected


@pytest.mark.parametrize(
    "draft, q, alpha, expected",
    [
        (1, [0.1, 0.8, 0.05, 0.05], -0.2, (True, "cascade")),  # max q1 0.8 >= max p1 0.5 + 0.2
        (1, [0.1, 0.8, 0.05, 0.05], -0.35, (False, None)),  # 0.8 < 0.85
        (3, [0.05, 0.05, 0.1, 0.8], 0.0, (True, "cascade")),  # a token the target gives 0.05, kept
        (3, [0.05, 0.05, 0.1, 0.8], -1.0, (False, None)),  # below -1: never at T = 0
        (0, [0.6, 0.2, 0.1, 0.1], -1.0, (True, "exact")),  # the argmax
        (1, [0.3, 0.4, 0.2, 0.1], 0.0, (False, None)),  # the target is the more confident
    ],
)
def test_opt_greedy(draft, q, alpha, expected):
    assert verdict("cascade-opt", evidence(P, q, draft), alpha) == expected


def test_token_v3_pi_and_residual_by_hand():
    """q(A) = 0.3 at alpha 0.5 (A = {0, 1}): pi = q on A + 0.7 p = [0.45, 0.41, 0.105, 0.035]."""
    ev = evidence(P, [0.1, 0.2, 0.6, 0.1], draft=2, u=0.17)
    pi = token_v3_pi(ev, 0.5)[0]
    assert pi.tolist() == pytest.approx([0.45, 0.41, 0.105, 0.035], abs=1e-6)
    residual = (pi - ev.q[0]).clamp_min(0)
    assert (residual / residual.sum()).tolist() == pytest.approx([0.625, 0.375, 0, 0], abs=1e-6)
    assert token_v3_pi(ev, -1.0)[0].tolist() == pytest.approx(P, abs=1e-6)  # A empty: pi = p
    assert token_v3_pi(ev, 1.0)[0].tolist() == pytest.approx(ev.q[0].tolist(), abs=1e-6)  # A everything: pi = q


@pytest.mark.parametrize(
    "u, alpha, expected",
    [
        (0.17, 0.5, (True, "exact")),  # u q(d) 0.102 <= pi(d) 0.105
        (0.18, 0.5, (False, None)),  # 0.108 > 0.105, though the lossless test (0.108 <= p(d) 0.15) accepts
        (0.18, 0.3, (True, "exact")),  # A = {0}: 0.108 <= 0.9 * 0.15
        (0.18, 0.71, (True, "cascade")),  # 0.3 >= 0.29: d joins A, accepted whatever u
        (0.9, 0.5, (False, None)),  # the lossless test rejects, and pi(d) < p(d) off A
    ],
)
def test_token_v3_sampled_is_u_q_against_pi(u, alpha, expected):
    ev = evidence(P, [0.1, 0.2, 0.6, 0.1], draft=2, u=u)
    assert verdict("cascade-token", ev, alpha)[0] is bool(u * 0.6 <= token_v3_pi(ev, alpha)[0, 2])
    if expected[1] == "cascade":  # accepted where the lossless test rejects: the draft in A
        ev = evidence(P, [0.1, 0.1, 0.7, 0.1], draft=2, u=0.9)
    assert verdict("cascade-token", ev, alpha) == expected


def test_token_v3_edge_decides_as_pi_at_every_alpha():
    """The one recorded number `v3_edge` re-decides a position at any alpha exactly as u q(d) <= pi(d)."""
    gen = torch.Generator().manual_seed(1)
    for _ in range(40):
        p, q = torch.rand(6, generator=gen) ** 3, torch.rand(6, generator=gen) ** 3
        p, q = (p / p.sum()).tolist(), (q / q.sum()).tolist()
        draft, u = int(torch.randint(6, (1,), generator=gen)), float(torch.rand(1, generator=gen))
        ev = evidence(p, q, draft, u=u)
        for alpha in torch.linspace(-1, 1, 41).tolist():
            by_pi = bool(u * ev.q_d[0] <= token_v3_pi(ev, alpha)[0, draft] + 1e-7)
            assert verdict("cascade-token", ev, alpha)[0] is by_pi, (p, q, draft, u, alpha)


def test_opt_sampled_picks_q_by_the_T1_maxima_and_the_scaled_tv():
    """max q1 0.6 vs max p1 0.5, TV(q, p) = 0.5 at T = 1: q is picked iff 0.6 >= 0.5 - 0.5 alpha, alpha >= -0.2."""
    ev = evidence(P, [0.1, 0.2, 0.6, 0.1], draft=2, u=0.5)  # lossless: 0.3 > 0.15 rejects
    assert float(ev["tv"][0]) == pytest.approx(0.5, abs=1e-6)
    assert verdict("cascade-opt", ev, -0.1) == (True, "cascade")
    assert verdict("cascade-opt", ev, -0.3) == (False, None)
    assert opt_pi(ev, -0.1)[0].tolist() == pytest.approx(ev.q[0].tolist())
    assert opt_pi(ev, -0.3)[0].tolist() == pytest.approx(P, abs=1e-6)  # then the lossless residual
    hot = evidence(P, [0.1, 0.2, 0.6, 0.1], draft=2, u=0.5, T=0.5)  # the maxima stay at T = 1, TV moves with T
    assert float(hot["q1_max"][0]) == pytest.approx(0.6, abs=1e-6) and float(hot["p1_max"][0]) == pytest.approx(0.5)
    assert float(hot["tv"][0]) == pytest.approx(0.5 * float((hot.p[0] - hot.q[0]).abs().sum()), abs=1e-6)
    assert float(hot["tv"][0]) > 0.5 + 0.1


def test_the_mode_changes_nothing_and_the_strict_knob_decodes_as_lossless(noisy_pair):
    """Both modes decode alike (the rule is the verification); at the strict knob, greedy and at T 0.7, the
    decode is the lossless decode token for token (pi = p: the same test, the same residual, the same draws)."""
    prompt = "Once upon a time"
    for name, strict in (("cascade-token", -1.0), ("cascade-opt", KNOBS["cascade-opt"].lo)):
        for T in (0.0, 0.7):
            base = {"temperature": T, "seed": 4, "max_new_tokens": 24}
            run = {"method": "relative", "criterion": name, **base}
            modes = [generate(noisy_pair, prompt, DecodeConfig(**run, knob=0.2, mode=m)) for m in ("or", "replace")]
            assert modes[0].token_ids == modes[1].token_ids
            assert [r.reason for r in modes[0].records] == [r.reason for r in modes[1].records]
            lossless = generate(noisy_pair, prompt, DecodeConfig(method="lossless", **base))
            strict_run = generate(noisy_pair, prompt, DecodeConfig(**run, knob=strict))
            assert strict_run.token_ids == lossless.token_ids, (name, T)
            assert all(r.reason != "cascade" for r in strict_run.records)


def test_a_record_keeps_what_the_inspector_re_decides_from(noisy_pair):
    """A lazy run records the statistics its rule reads (the uniform u, TokenV3's edge at T > 0)."""
    from viz import rules

    for name in ("cascade-token", "cascade-opt"):
        trace = generate(
            noisy_pair,
            "Once upon a time",
            DecodeConfig(method="relative", criterion=name, knob=0.02, temperature=0.7, seed=1, max_new_tokens=24),
        )
        drafts = [r for r in trace.records if r.kind == "draft" and r.reason != "skipped"]
        assert {r.reason for r in drafts} & {"exact", "cascade"} and any(r.rule_stats["u"] for r in drafts)
        for rec in drafts:
            assert set(RULES[name].reads) - {"native"} <= set(rec.rule_stats)
            assert rules.decide(rec, name, 0.02) is rec.accepted
            assert rules.statistic(rec, name, 0.02).startswith(("p₁(d)", "max q₁"))


def test_the_explanations_say_what_decided():
    ev = evidence(P, [0.1, 0.2, 0.6, 0.1], draft=2, u=0.18)
    line = RULES["cascade-token"].line(ev, 0.5)
    assert line.startswith("p₁(d) 0.15 vs (1 − α)·max p₁ 0.25: outside A") and "1 − α > 0.6" in line
    assert "in A" in RULES["cascade-token"].line(ev, 0.75)
    greedy = evidence(P, [0.1, 0.2, 0.6, 0.1], draft=2)
    assert RULES["cascade-opt"].line(greedy, 0.2) == "max q₁ 0.6 vs max p₁ − α = 0.3: π = q (the draft's)"


def _first_tokens(pair, prompt: str, name: str, alpha: float, runs: int) -> list[int]:
    config = {"method": "relative", "criterion": name, "knob": alpha, "temperature": 0.7, "gamma": 3}
    return [
        generate(pair, prompt, DecodeConfig(**config, seed=seed, max_new_tokens=2)).token_ids[0] for seed in range(runs)
    ]


def _chi2(tokens: list[int], dist: torch.Tensor) -> float:
    """Chi-square of the tokens against `dist`, binned into its five likeliest tokens and the rest (5 df)."""
    bins = dist.topk(5).indices.tolist()
    expected = [float(dist[b]) for b in bins] + [1 - float(dist[bins].sum())]
    observed = [0] * 6
    for tok in tokens:
        observed[bins.index(tok) if tok in bins else 5] += 1
    n = len(tokens)
    return sum((o - n * e) ** 2 / (n * e) for o, e in zip(observed, expected))


@pytest.mark.distribution
@pytest.mark.parametrize("name, default", [("cascade-token", 0.5), ("cascade-opt", 0.5)])
def test_the_emitted_distribution_at_T07_is_p_at_the_strict_knob_and_pi_at_the_default(name, default):
    """The first emitted token over 1000 seeds (tiny pair, noise 0.1, T 0.7): at the strict knob it follows the
    target p (chi-square, 5 df, p = 0.001: 20.52); at the default it follows the rule's pi, which sits closer to the
    draft q than p does: the tokens pi favours over p come out more often than p gives them (4 standard errors)."""
    from tiny_pair import byte_tokenizer, tiny_models

    from dropmatch.models import ModelPair, encode_prompt

    tok = byte_tokenizer()
    target, draft = tiny_models(len(tok), noise=0.1, initializer_range=0.3)
    pair = ModelPair(target, draft, tok, "t", "d", frozenset(), "none")
    prompt, T, runs = "Once upon a time", 0.7, 1000
    with torch.inference_mode():
        ids = torch.tensor([encode_prompt(tok, prompt)])
        z, zq = target(ids).logits[0, -1].float(), draft(ids).logits[0, -1].float()
    ev = Evidence(torch.tensor([0]), torch.log_softmax(zq / T, -1)[None], z[None], T, u=torch.tensor([0.5]))
    p, q, pi = ev.p[0], ev.q[0], RULES[name].pi(ev, default)[0]
    assert default == KNOBS[name].default
    tv = lambda a, b: 0.5 * float((a - b).abs().sum())  # noqa: E731
    assert tv(pi, q) < tv(p, q) - 0.05 and tv(pi, p) > 0.1  # toward the draft, by a margin 1000 runs can see
    strict = _first_tokens(pair, prompt, name, KNOBS[name].lo, runs)
    assert _chi2(strict, p) < 20.52
    relaxed = _first_tokens(pair, prompt, name, default, runs)
    assert _chi2(relaxed, pi) < 20.52
    favoured = pi > p  # where pi moved the target's mass (toward q): p(S) + TV(pi, p) = pi(S)
    share, p_s = sum(bool(favoured[t]) for t in relaxed) / runs, float(p[favoured].sum())
    assert share > p_s + 4 * math.sqrt(p_s * (1 - p_s) / runs), (share, p_s, float(pi[favoured].sum()))
