"""The shared constants and the validated config: ranges, clear errors, the one boundary from raw settings, and no
torch needed to import it (checking a config's rule reads the registry, which does)."""

import subprocess
import sys

import pytest

from dropmatch.config import (
    RANGES,
    SETTINGS,
    TRUNCATION_CRITERIA,
    DecodeConfig,
    bounded_float,
    bounded_int,
    check_setting,
    criterion_names,
)
from dropmatch.criteria import RULES
from dropmatch.decode import position_generator


def test_a_config_names_exactly_the_registrys_rules_and_the_truncations():
    assert criterion_names() == (*RULES, *TRUNCATION_CRITERIA)
    for name, rule in RULES.items():  # each rule's knob: its default and its strict value lie in its range
        if rule.knob is not None:
            assert rule.knob.check(rule.knob.default) == rule.knob.default, name
            for strict in (rule.knob.strict, rule.knob.strict_greedy):
                assert strict is None or rule.knob.check(strict) == strict, name
            assert DecodeConfig(method="relative", criterion=name).knob == rule.knob.default, name


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"seed": 2**31}, "seed must be an integer in [0, 2147483647]"),
        ({"seed": -1}, "seed must be an integer"),
        ({"seed": 10**20}, "seed must be an integer"),
        ({"gamma": True}, "gamma must be an integer"),
        ({"K": 33}, "K must be an integer in [1, 32]"),
        ({"p_drop": float("nan")}, "p_drop must lie in [0, 1)"),
        ({"p_drop": 1.0}, "p_drop must lie in [0, 1)"),
        ({"temperature": 5.5}, "temperature must lie in [0, 5]"),
        ({"criterion": "psychic"}, "criterion must be one of js+majority"),
        ({"mode": "and"}, "mode must be one of or, replace"),
        ({"criterion": "typical"}, "'typical' is not a dropmatch criterion"),
        ({"method": "relative"}, "'js+majority' is not a relative criterion"),
        ({"method": "relative", "criterion": "top-k", "knob": 2.5}, "k must be an integer in [1, 1000]"),
        ({"method": "relative", "criterion": "fuzzy-js", "knob": 0.9}, "threshold must lie in [0, 0.693147]"),
        ({"method": "relative", "criterion": "typical", "knob": "nan"}, "epsilon must lie in [0, 1]"),
        ({"method": "dropmatch", "knob": 0.1}, "knob is a rule's setting; dropmatch js+majority takes none"),
    ],
)
def test_bad_values_are_clear_errors(kwargs, message):
    with pytest.raises(ValueError) as err:
        DecodeConfig(**kwargs)
    assert message in str(err.value)


def test_a_relative_records_the_knob_it_used():
    assert DecodeConfig(method="relative", criterion="typical").knob == 0.09  # Medusa's default, kept in the trace
    assert DecodeConfig(method="relative", criterion="top-k", knob="3").knob == 3
    assert DecodeConfig(method="lossless").knob is None


def test_every_seed_in_range_gives_its_own_mask_generators():
    """At both ends of the seed range, every (round, position) up to the largest a run can reach (round 2048,
    position 16) gets a generator of its own seed, and the two ends share none."""
    lo, hi = RANGES["seed"].lo, RANGES["seed"].hi
    drawn = {}
    for seed in (lo, hi):
        assert DecodeConfig(seed=seed).seed == seed
        drawn[seed] = {position_generator(seed, r, j).initial_seed() for r in (0, 1, 2047, 2048) for j in range(17)}
        assert len(drawn[seed]) == 4 * 17
    assert not drawn[lo] & drawn[hi]


def test_bounded_helpers():
    assert bounded_int("n", "7", 1, 9) == 7 and bounded_int("n", 3.0, 1, 9) == 3
    for bad in ("x", 2.5, None, True, float("inf"), 10):
        with pytest.raises(ValueError, match=r"n must be an integer in \[1, 9\]"):
            bounded_int("n", bad, 1, 9)
    assert bounded_float("p", "0.25", 0, 1) == 0.25
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\)"):
        bounded_float("p", 1, 0, 1, hi_open=True)


def test_raw_settings_become_a_config_through_one_boundary():
    raw = {"gamma": "4", "K": 3.0, "p_drop": "0.25", "temperature": "0", "max_new_tokens": "16", "seed": "7"}
    cfg = DecodeConfig.from_settings(**raw, criterion="naive", knob="0.3")  # strings and whole floats, as the API
    assert (cfg.method, cfg.gamma, cfg.K, cfg.p_drop, cfg.max_new_tokens, cfg.seed) == ("dropmatch", 4, 3, 0.25, 16, 7)
    assert type(cfg.K) is int and type(cfg.temperature) is float and cfg.knob is None  # DropMatch takes no knob
    relative = DecodeConfig.from_settings(criterion="top-k", knob="3")
    assert relative.method == "relative" and relative.knob == 3
    assert DecodeConfig.from_settings(criterion="typical", knob="").knob == 0.09  # empty: the source's default
    assert DecodeConfig.from_settings(method="lossless", criterion="typical", knob=0.3).knob is None
    assert DecodeConfig.from_settings(gamma=3) == DecodeConfig(gamma=3)  # nothing else changes


@pytest.mark.parametrize(
    "raw, limits, message",
    [
        (
            {"max_new_tokens": "abc"},
            {"max_new_tokens": (1, 256)},
            "max new tokens must be an integer in [1, 256]; got 'abc'",
        ),
        ({"max_new_tokens": 300}, {"max_new_tokens": (1, 256)}, "max new tokens must be an integer in [1, 256]"),
        ({"max_new_tokens": 3000}, None, "max new tokens must be an integer in [1, 2048]"),
        ({"p_drop": "nan"}, None, "p_drop must lie in [0, 1); got 'nan'"),
        ({"gamma": 2.5}, None, "gamma must be an integer in [1, 16]; got 2.5"),
        ({"criterion": "median"}, None, "criterion must be one of js+majority"),
        ({"criterion": "typical", "knob": "x"}, None, "epsilon must lie in [0, 1]; got 'x'"),
        ({"draft_quant": "int2"}, None, "draft_quant must be one of none, int8, int4; got 'int2'"),
    ],
)
def test_the_boundary_names_a_bad_setting(raw, limits, message):
    with pytest.raises(ValueError) as err:
        DecodeConfig.from_settings(limits, **raw)
    assert message in str(err.value)


def test_every_range_is_checked_in_one_place():
    """The config, a sweep grid and a caller's tighter limit all go through check_setting: the same messages."""
    for name, bound in RANGES.items():
        inside = bound.hi - 1 if bound.hi_open and bound.integer else (bound.lo + bound.hi) / 2
        inside = round(inside) if bound.integer else inside
        assert check_setting(name, str(inside)) == inside and type(check_setting(name, str(inside))) is type(inside)
        with pytest.raises(ValueError) as err:
            check_setting(name, bound.hi + 1)
        with pytest.raises(ValueError) as config_err:
            DecodeConfig(**{name: bound.hi + 1})
        assert str(err.value) == str(config_err.value)
    assert check_setting("max_new_tokens", 8, {"max_new_tokens": (8, 256)}) == 8
    with pytest.raises(ValueError, match=r"max new tokens must be an integer in \[8, 256\]; got 7"):
        check_setting("max_new_tokens", 7, {"max_new_tokens": (8, 256)})
    assert set(SETTINGS) <= {f for f in DecodeConfig.__dataclass_fields__}


def test_importing_the_config_imports_no_torch():
    code = "import sys, dropmatch.config as c; c.RANGES['seed'].check('seed', 3); assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
