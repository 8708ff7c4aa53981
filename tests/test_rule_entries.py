"""The rules added as one registry entry each (the static ensemble, lenience, the tie-only control), and what every
entry promises: handcrafted-logit cases with known answers at T = 0 and T > 0, a strict knob that decodes token for
token as lossless, and the ensemble equal to transformers' own `assistant_ensemble_weight`, token for token."""

from __future__ import annotations

import math

import pytest
import torch
from tiny_pair import byte_tokenizer, tiny_models

import viz
from dropmatch.config import DecodeConfig
from dropmatch.criteria import RULES, residual_sample
from dropmatch.decode import generate
from dropmatch.evidence import Evidence
from dropmatch.models import ModelPair, encode_prompt
from dropmatch.rules.own_distribution import mixture


def evidence(p: list[float], q: list[float], draft: int, u: float | None = None) -> Evidence:
    """One position: the target's p (exact, as log p) and the draft's q; greedy without `u`, sampled (T = 1) with it."""
    return Evidence(
        draft=torch.tensor([draft]),
        q_logprobs=torch.tensor([q]).log(),
        target_logits=torch.tensor([p]).log(),
        u=None if u is None else torch.tensor([u]),
    )


def accepts(name: str, ev: Evidence, knob=None) -> bool:
    return bool(RULES[name](ev, knob).accept[0])


# ---- the static ensemble ------------------------------------------------------------------------------------------
def test_the_ensemble_accepts_at_t0_exactly_where_d_is_the_mixtures_argmax():
    """Greedy, the draft is q's argmax; d is accepted iff it is argmax(w p + (1 - w) q), ties to the lower index, at
    every w: its edge (the largest such w) decides as the argmax does, on random distributions and a grid of w."""
    gen = torch.Generator().manual_seed(0)
    checked = 0
    for _ in range(200):
        p = torch.softmax(3 * torch.randn(6, generator=gen), -1)
        q = torch.softmax(3 * torch.randn(6, generator=gen), -1)
        d = int(q.argmax())
        ev = evidence(p.tolist(), q.tolist(), d)
        edge = float(ev["ens_edge"][0])
        for w in torch.linspace(0, 1, 21).tolist():
            if abs(w - edge) < 1e-5:
                continue  # on the edge itself float rounding decides
            v = w * ev.p[0] + (1 - w) * ev.q[0]
            assert accepts("ensemble", ev, w) is (int(v.argmax()) == d), (p, q, w, edge)
            checked += 1
    assert checked > 3000


def test_the_ensemble_by_hand_greedy():
    # p favours token 0, the draft token 1: v(1) = 0.4 w + 0.7 (1 - w), v(0) = 0.6 w + 0.2 (1 - w): equal at w = 5/7
    ev = evidence([0.6, 0.4, 0.0 + 1e-9], [0.2, 0.7, 0.1], draft=1)
    assert float(ev["ens_edge"][0]) == pytest.approx(5 / 7, abs=1e-6)
    assert accepts("ensemble", ev, 0.7) and not accepts("ensemble", ev, 0.72)
    assert not accepts("ensemble", ev, 1.0)  # w = 1 is the lossless test: d is not the argmax
    rejected = evidence([0.6, 0.4, 1e-9], [0.2, 0.7, 0.1], draft=1)
    assert int(RULES["ensemble"].greedy_pick(rejected, 0.9)[0]) == 0  # the correction: argmax of the mixture
    assert int(RULES["ensemble"].greedy_pick(rejected, 0.6)[0]) == 1  # it leans toward the draft


def test_a_tie_in_the_mixture_goes_to_the_lower_index_as_argmax_breaks_it():
    ev = evidence([0.5, 0.5], [0.5, 0.5], draft=1)  # v is flat at every w: argmax is token 0
    assert float(ev["ens_edge"][0]) == -1.0 and not any(accepts("ensemble", ev, w) for w in (0.0, 0.5, 1.0))
    ev = evidence([0.5, 0.5], [0.5, 0.5], draft=0)
    assert float(ev["ens_edge"][0]) == 1.0 and all(accepts("ensemble", ev, w) for w in (0.0, 0.5, 1.0))


@pytest.mark.parametrize("w", [0.2, 0.5, 0.9])
def test_the_ensemble_by_hand_sampled_accepts_with_1_minus_w_plus_w_p_over_q(w):
    p, q = [0.1, 0.6, 0.3], [0.5, 0.3, 0.2]  # d = 0: p/q = 0.2
    chance = 1 - w + w * 0.2
    assert accepts("ensemble", evidence(p, q, 0, u=chance - 1e-4), w)
    assert not accepts("ensemble", evidence(p, q, 0, u=chance + 1e-4), w)
    ev = evidence(p, q, 0, u=0.5)
    pi = mixture(ev, w)[0]
    assert pi.tolist() == pytest.approx([w * a + (1 - w) * b for a, b in zip(p, q)])
    # the residual norm(max(pi - q, 0)) = norm(w max(p - q, 0)): the lossless one, [0, 1, 0.3 - 0.2] / 0.4
    draws = [residual_sample(pi, ev.q[0], torch.Generator().manual_seed(s)) for s in range(400)]
    assert draws.count(0) == 0 and 0.65 < draws.count(1) / 400 < 0.85


# ---- lenience -----------------------------------------------------------------------------------------------------
def test_lenience_by_hand():
    p, q = [0.5, 0.2, 0.3], [0.2, 0.5, 0.3]  # d = 1: p/q = 0.4
    assert accepts("lenience", evidence(p, q, 1, u=0.79), 0.5)  # u l q = 0.1975 <= 0.2
    assert not accepts("lenience", evidence(p, q, 1, u=0.81), 0.5)
    for u in (0.1, 0.39, 0.41, 0.9):  # l = 1 is the lossless test when sampling
        ev = evidence(p, q, 1, u=u)
        assert accepts("lenience", ev, 1.0) is bool(ev.native[0])
    greedy = evidence(p, q, 1)  # T = 0 (the project's reading): accept iff p(d) >= l q(d)
    assert accepts("lenience", greedy, 0.39) and not accepts("lenience", greedy, 0.41)
    assert RULES["lenience"].line(evidence(p, q, 1, u=0.5), 0.5) == "p(d)/q(d) 0.4 vs u·l, u 0.5, l 0.5"


# ---- relaxed top-K / delta --------------------------------------------------------------------------------------
def test_relaxed_top_k_delta_by_hand():
    """Accept d when it is in the target's top K and log max p - log p(d) <= delta; its two knobs written K/delta."""
    p = [0.5, 0.3, 0.15, 0.05]  # gaps below the top-1: ln(5/3) 0.511, ln(10/3) 1.204, ln 10 2.303
    for draft, knob, want in [
        (1, (8, 0.52), True),
        (1, (8, 0.50), False),  # 0.511 nats below: outside delta
        (2, (8, 1.3), True),
        (2, (2, 1.3), False),  # third place: outside K 2
        (3, (4, 2.4), True),
        (1, (1, 20.0), False),  # K 1 relaxes nothing
    ]:
        assert accepts("relaxed-top-k", evidence(p, [0.25] * 4, draft), knob) is want, (draft, knob)
    accepted, numbers = RULES["relaxed-top-k"].reading(evidence(p, [0.25] * 4, 1), (8, 0.5))
    assert numbers["gap"] == pytest.approx(math.log(5 / 3), abs=1e-6) and not accepted
    assert accepts("relaxed-top-k", evidence(p, [0.25] * 4, 0), (1, 0.0))  # the argmax: the lossless test's
    for u in (0.1, 0.9):  # T > 0: the same test, whatever u, beside the lossless one
        assert accepts("relaxed-top-k", evidence(p, [0.05, 0.9, 0.025, 0.025], 1, u=u), (8, 0.52))
    line = RULES["relaxed-top-k"].line(evidence(p, [0.25] * 4, 1), (8, 0.5))
    assert line == "d's place 2 vs K 8; log max p − log p(d) 0.511 nats vs δ 0.5"
    knob = RULES["relaxed-top-k"].knob
    assert knob.check("8/0.5") == knob.check("8, 0.5") == knob.check([8, 0.5]) == (8, 0.5) == knob.default
    assert knob.said((4, 1.5)) == "K 4, delta 1.5" and knob.text((4, 1.5)) == "4/1.5"
    for bad in ("8", "8/0.5/1", "0/0.5", "8/-1", 3.0):
        with pytest.raises(ValueError):
            knob.check(bad)


def test_relaxed_top_k_counts_a_gap_of_exactly_delta_alike_on_every_cpu():
    """bf16 logits make a gap of exactly delta common (here 0.5: logits 12.5 and 12); its float32 log-probabilities
    may round either side of delta, so a gap within GAP_ROUNDING of it is accepted, and one clearly past it is not."""
    z = torch.tensor([[12.5, 12.0, 9.0, 1.0]], dtype=torch.bfloat16).float()
    ev = Evidence(draft=torch.tensor([1]), q_logprobs=torch.full((1, 4), 0.25).log(), target_logits=z)
    assert accepts("relaxed-top-k", ev, (8, 0.5)) and not accepts("relaxed-top-k", ev, (8, 0.49))
    p_max = 0.4
    for over, want in ((1e-6, True), (1e-4, False)):  # float32 cannot tell 1e-6 nats from zero; 1e-4 it can
        p_d = p_max * math.exp(-0.5 - over)
        assert accepts("relaxed-top-k", evidence([p_max, p_d, 1 - p_max - p_d], [1 / 3] * 3, 1), (8, 0.5)) is want


def test_a_pair_knob_rides_the_config_and_the_trace(noisy_pair):
    config = DecodeConfig.from_settings(method="relative", criterion="relaxed-top-k", knob="4/1.5", max_new_tokens=8)
    assert config.knob == (4, 1.5)
    trace = generate(noisy_pair, "def add(a, b):", config)
    again = type(trace).from_json(trace.to_json())
    assert again.config["knob"] in ([4, 1.5], (4, 1.5)) and DecodeConfig(**again.config).knob == (4, 1.5)
    assert viz.rules.setting(RULES["relaxed-top-k"], (4, 1.5)) == "K 4, delta 1.5"


# ---- the tie-only control -----------------------------------------------------------------------------------------
def test_the_tie_only_control_accepts_a_tie_at_t0_and_nothing_more():
    tied = Evidence(
        draft=torch.tensor([2, 1]),
        q_logprobs=torch.full((2, 3), -math.log(3)),
        target_logits=torch.tensor([[1.0, 0.0, 1.0], [2.0, 1.0, 0.0]]),
    )
    verdict = RULES["tie-only"](tied)
    assert verdict.accept.tolist() == [True, False]  # token 2 ties token 0; token 1 is below the argmax
    assert verdict.components["tie"].tolist() == [True, False] and not verdict.components["exact"].any()
    sampled = Evidence(  # the lossless test rejects token 2 (u q(d) 0.89 > p(d) 0.42): a tie changes nothing
        draft=torch.tensor([2]),
        q_logprobs=torch.tensor([[0.05, 0.05, 0.9]]).log(),
        target_logits=torch.tensor([[1.0, 0.0, 1.0]]),
        u=torch.tensor([0.99]),
    )
    assert RULES["tie-only"](sampled).accept.tolist() == sampled.native.tolist() == [False]  # T > 0: nothing relaxed


# ---- every entry: the strict knob decodes as lossless ---------------------------------------------------------
PROMPTS = ("def add(a, b):", "Once upon a time")


def _strict(name: str, greedy: bool):
    rule = RULES[name]
    if rule.knob is None:
        return None
    return rule.knob.strict_greedy if greedy else rule.knob.strict


STRICT = [
    (name, greedy)
    for name, rule in RULES.items()
    for greedy in (True, False)
    if not rule.needs_paths and (rule.knob is None or _strict(name, greedy) is not None)
]


@pytest.mark.parametrize("name, greedy", STRICT)
def test_a_strict_knob_decodes_token_for_token_as_lossless(name, greedy, noisy_pair):
    """Every rule at the knob its entry calls strict (T = 0 and T > 0 apart; the tie-only control has none) decodes
    as lossless: the same tokens, every acceptance the lossless test's (FLy at gamma 3, where it can look ahead)."""
    settings = {"max_new_tokens": 24, "gamma": 3 if name == "fly" else 5}
    settings |= {} if greedy else {"temperature": 0.7, "seed": 3}
    for prompt in PROMPTS:
        lossless = generate(noisy_pair, prompt, DecodeConfig(method="lossless", **settings))
        config = DecodeConfig(method="relative", criterion=name, knob=_strict(name, greedy), **settings)
        got = generate(noisy_pair, prompt, config)
        assert got.token_ids == lossless.token_ids, (name, greedy, prompt)
        assert all(r.reason in ("exact", "rejected", "skipped", "correction", "bonus") for r in got.records)


def test_the_rules_without_a_lossless_knob_say_so():
    """Typical acceptance has none; EARS and lenience relax at T = 0 at every knob (this project's greedy reading)."""
    assert RULES["typical"].knob.strict is None is RULES["typical"].knob.strict_greedy
    for name, symbol in (("ears", "beta"), ("lenience", "l")):
        assert RULES[name].knob.strict is not None and RULES[name].knob.strict_greedy is None
        assert f"which no {symbol} makes lossless" in RULES[name].knob.meaning


# ---- the ensemble against transformers' own ----------------------------------------------------------------------
def _bare_pair(noise: float) -> ModelPair:
    """The tiny pair in float32 with no end token, so both decoders run their whole length."""
    tok = byte_tokenizer()
    target, draft = tiny_models(len(tok), noise=noise, initializer_range=0.3)
    return ModelPair(target, draft, tok, "t", "d", frozenset(), "none")


def transformers_ensemble(pair: ModelPair, prompt: str, w: float, gamma: int, n: int, chat: bool = False) -> list[int]:
    """transformers' generate(..., assistant_model=draft, assistant_ensemble_weight=w, do_sample=False): a constant
    draft length gamma and no early stop on the draft's confidence, as this decoder drafts; it stops at the pair's end
    tokens (none: n tokens). The pad id is one no model emits (a generated pad token would be masked out)."""
    draft = pair.draft.generation_config
    draft.num_assistant_tokens, draft.num_assistant_tokens_schedule = gamma, "constant"
    draft.assistant_confidence_threshold = 0.0
    ids = torch.tensor([encode_prompt(pair.tokenizer, prompt, chat)])
    ends = sorted(pair.eos_ids) or None
    out = pair.target.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        assistant_model=pair.draft,
        assistant_ensemble_weight=w,
        do_sample=False,
        max_new_tokens=n,
        eos_token_id=ends,
        pad_token_id=pair.target.config.vocab_size + 1,
    )
    return out[0, ids.shape[1] :].tolist()


@pytest.mark.parametrize("w, gamma", [(0.3, 5), (0.5, 3), (0.8, 5)])
def test_the_ensemble_decodes_as_transformers_own_token_for_token(w, gamma):
    pair = _bare_pair(0.1)
    relaxed = 0
    for prompt in ("def add(a, b):", "Once upon a time", "1, 2, 3, 4,"):
        ours = generate(
            pair, prompt, DecodeConfig(method="relative", criterion="ensemble", knob=w, gamma=gamma, max_new_tokens=40)
        )
        assert ours.token_ids == transformers_ensemble(pair, prompt, w, gamma, 40), (w, gamma, prompt)
        relaxed += sum(r.reason == "ensemble" for r in ours.records)
    assert relaxed > 0  # the mixture accepted drafts the lossless test rejects: the comparison saw the rule act


def test_the_inspector_draws_each_new_rules_own_test(noisy_pair):
    for name in ("ensemble", "lenience", "tie-only"):
        trace = generate(
            noisy_pair,
            "def add(a, b):",
            DecodeConfig(method="relative", criterion=name, evidence=True, max_new_tokens=24),
        )
        for rec in (r for r in trace.records if r.kind == "draft"):
            fig = viz.rule_test_figure(trace, rec)
            assert fig.layout.meta["rule"] == name and fig.layout.meta["verdict"] == rec.verdicts[name], (name, rec.pos)


# ---- span gating: a switch any rule takes ---------------------------------------------------------------------------
GATED = [("typical", "relative", 0.3), ("js+majority", "dropmatch", None), ("ensemble", "relative", 0.3)]


@pytest.mark.parametrize("criterion, method, knob", GATED)
def test_the_span_gate_keeps_the_rule_out_where_it_is_closed(criterion, method, knob, noisy_pair, monkeypatch):
    """A gate that never opens decodes as lossless token for token; one that always opens decodes as the rule alone;
    the real gate decides by the lossless test wherever it closed, lazily as in evidence mode, and every trace passes
    the file check."""
    import json

    from dropmatch import decode
    from dropmatch.trace import check

    prompt = "def f(x):\n    return "
    base = {"method": method, "criterion": criterion, "knob": knob, "max_new_tokens": 40}
    lossless = generate(noisy_pair, prompt, DecodeConfig(method="lossless", max_new_tokens=40))
    free = generate(noisy_pair, prompt, DecodeConfig(**base))
    with monkeypatch.context() as m:
        m.setattr(decode, "gate_open", lambda *_: False)
        assert generate(noisy_pair, prompt, DecodeConfig(**base, span_gate=True)).token_ids == lossless.token_ids
        m.setattr(decode, "gate_open", lambda *_: True)
        assert generate(noisy_pair, prompt, DecodeConfig(**base, span_gate=True)).token_ids == free.token_ids
    lazy = generate(noisy_pair, prompt, DecodeConfig(**base, span_gate=True))
    full = generate(noisy_pair, prompt, DecodeConfig(**base, span_gate=True, evidence=True))
    assert lazy.token_ids == full.token_ids
    drafts = [r for r in full.records if r.kind == "draft"]
    assert any(r.gated for r in drafts) and not all(r.gated for r in drafts)
    for r in drafts:
        if r.gated and r.reason != "skipped":
            assert r.accepted is r.lossless and r.reason in ("exact", "rejected")
    for trace in (lazy, full):
        check(json.loads(trace.to_json()))
    assert all(r.gated is None for r in free.records)


def test_the_span_gate_is_a_rules_switch_and_the_file_check_holds_it_to_that():

    with pytest.raises(ValueError, match="span_gate switches a rule"):
        DecodeConfig(method="lossless", span_gate=True)
    with pytest.raises(ValueError, match="true or false"):
        DecodeConfig(span_gate="sometimes")
    assert DecodeConfig(span_gate="true").span_gate is True


def test_a_gated_record_decided_otherwise_than_the_lossless_test_is_refused(noisy_pair):
    import json

    from dropmatch.trace import check

    config = DecodeConfig(method="relative", criterion="typical", knob=0.3, span_gate=True, max_new_tokens=40)
    data = json.loads(generate(noisy_pair, "def f(x):\n    return ", config).to_json())
    i = next(i for i, r in enumerate(data["records"]) if r["gated"] and r["reason"] == "exact")
    data["records"][i]["gated"] = None
    with pytest.raises(ValueError, match=rf"records\[{i}\].gated .*says true or false"):
        check(data)
    data["records"][i] |= {"gated": True, "lossless": False}
    with pytest.raises(ValueError, match=rf"records\[{i}\]"):
        check(data)
    plain = json.loads(
        generate(noisy_pair, "x", DecodeConfig(method="relative", criterion="typical", max_new_tokens=6)).to_json()
    )
    plain["records"][0]["gated"] = False
    with pytest.raises(ValueError, match="only a draft of a span-gated run"):
        check(plain)
