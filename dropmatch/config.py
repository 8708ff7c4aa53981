"""One frozen, validated configuration for a decoding run (method, draft length, dropout paths, criterion)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

METHODS = ("target", "lossless", "dropmatch")
MODES = ("or", "replace")
LIMITS = {"gamma": (1, 16), "K": (1, 32), "max_new_tokens": (1, 2048)}


def bounded_int(name: str, value, lo: int, hi: int) -> int:
    """`value` as an int in [lo, hi] (a whole float or numeric string counts); otherwise a clear ValueError."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not number.is_integer() or not lo <= number <= hi:
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}]; got {value!r}")
    return int(number)


@dataclass(frozen=True, kw_only=True)
class DecodeConfig:
    """Everything that decides a trace, besides the models and the prompt.

    method: `target` (target-only reference), `lossless` (standard speculative decoding) or
        `dropmatch` (K dropout paths on the target's LM head decide semantic acceptance).
    gamma: draft tokens proposed per round. K, p_drop: dropout paths and their rate.
    criterion: a name in `dropmatch.criteria.CRITERIA`. mode: `or` accepts a draft token when the
        lossless test OR the criterion accepts it; `replace` uses the criterion alone.
    temperature: 0 is greedy; > 0 samples (lossless uses rejection sampling).
    evidence: compute the K paths at every drafted position and record top-N distributions for
        display; when False, paths are computed only where the decision needs them (faster, the same
        decisions).
    """

    method: str = "dropmatch"
    gamma: int = 5
    K: int = 5
    p_drop: float = 0.3
    criterion: str = "js+majority"
    mode: str = "or"
    temperature: float = 0.0
    max_new_tokens: int = 64
    seed: int = 0
    evidence: bool = False
    top_n: int = 10

    def __post_init__(self) -> None:
        from dropmatch.criteria import CRITERIA

        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}; got {self.method!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}; got {self.criterion!r}")
        for name, (lo, hi) in LIMITS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ValueError(f"{name} must be an integer in [{lo}, {hi}]; got {value!r}")
        if not 0.0 <= self.p_drop < 1.0:
            raise ValueError(f"p_drop must lie in [0, 1); got {self.p_drop!r}")
        if not 0.0 <= self.temperature <= 5.0:
            raise ValueError(f"temperature must lie in [0, 5]; got {self.temperature!r}")
        if not 1 <= self.top_n <= 50:
            raise ValueError(f"top_n must lie in [1, 50]; got {self.top_n!r}")

    def to_dict(self) -> dict:
        return asdict(self)
