"""Every shared constant once, and one frozen, validated configuration for a decoding run.

Importing this module pulls in no torch: the command line, the lab and the app read their choices
(methods, modes, criteria, limits, the paper's setting) from here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

METHODS = ("target", "lossless", "dropmatch")
MODES = ("or", "replace")
# The registry's names, in the order the app lists them; dropmatch.criteria maps each to its rule.
CRITERION_NAMES = ("js+majority", "js", "majority", "majority-strict", "naive")
DEFAULT_CRITERION = CRITERION_NAMES[0]  # paper Algorithm 1
# Inclusive integer ranges. seed: what torch.Generator.manual_seed takes once the seed is mixed with the
# round and position (see decode.position_generator), so every seed in range decodes.
LIMITS = {"gamma": (1, 16), "K": (1, 32), "max_new_tokens": (1, 2048), "seed": (0, 2**31 - 1), "top_n": (1, 50)}
MAX_TEMPERATURE = 5.0
# The paper's setting (K 5, p_drop 0.3, Algorithm 1) at draft length 5: the centre every sweep varies around.
PAPER_SETTING = {"gamma": 5, "K": 5, "p_drop": 0.3, "criterion": DEFAULT_CRITERION}
FACTORS = ("p_drop", "K", "gamma", "criterion")  # what a sweep can vary, in the order OFAT walks them


def bounded_int(name: str, value, lo: int, hi: int) -> int:
    """`value` as an int in [lo, hi] (a whole float or numeric string counts); otherwise a clear ValueError."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        number = float("nan")
    if isinstance(value, bool) or not number.is_integer() or not lo <= number <= hi:
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}]; got {value!r}")
    return int(number)


def bounded_float(name: str, value, lo: float, hi: float, *, hi_open: bool = False) -> float:
    """`value` as a finite float in [lo, hi] (or [lo, hi)); otherwise a clear ValueError."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        number = float("nan")
    inside = lo <= number < hi if hi_open else lo <= number <= hi
    if isinstance(value, bool) or not inside:  # NaN fails every comparison
        raise ValueError(f"{name} must lie in [{lo:g}, {hi:g}{')' if hi_open else ']'}; got {value!r}")
    return number


def sampling_temperature(temperature: float) -> float:
    """The temperature distributions are compared at: greedy decoding (T = 0) still compares T = 1 softmaxes."""
    return temperature if temperature > 0 else 1.0


@dataclass(frozen=True, kw_only=True)
class DecodeConfig:
    """Everything that decides a trace, besides the models and the prompt.

    method: `target` (target-only reference), `lossless` (standard speculative decoding) or
        `dropmatch` (K dropout paths on the target's LM head decide semantic acceptance).
    gamma: draft tokens proposed per round. K, p_drop: dropout paths and their rate.
    criterion: a name in CRITERION_NAMES. mode: `or` accepts a draft token when the lossless test OR
        the criterion accepts it; `replace` uses the criterion alone.
    temperature: 0 is greedy; > 0 samples (lossless uses rejection sampling).
    evidence: compute the K paths at every drafted position and record top-N distributions for
        display; when False, paths are computed only where the decision needs them (faster, the same
        decisions).
    """

    method: str = "dropmatch"
    gamma: int = PAPER_SETTING["gamma"]
    K: int = PAPER_SETTING["K"]
    p_drop: float = PAPER_SETTING["p_drop"]
    criterion: str = DEFAULT_CRITERION
    mode: str = "or"
    temperature: float = 0.0
    max_new_tokens: int = 64
    seed: int = 0
    evidence: bool = False
    top_n: int = 10

    def __post_init__(self) -> None:
        for name, allowed in (("method", METHODS), ("mode", MODES), ("criterion", CRITERION_NAMES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}")
        for name, (lo, hi) in LIMITS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ValueError(f"{name} must be an integer in [{lo}, {hi}]; got {value!r}")
        bounded_float("p_drop", self.p_drop, 0.0, 1.0, hi_open=True)
        bounded_float("temperature", self.temperature, 0.0, MAX_TEMPERATURE)

    def to_dict(self) -> dict:
        return asdict(self)
