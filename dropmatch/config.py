"""Every shared constant once, and one frozen, validated configuration for a decoding run.

Importing this module pulls in no torch: the command line, the lab and the app read their choices
(methods, modes, criteria, limits, the paper's setting) from here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

# target: target-only reference; lossless: standard speculative decoding; dropmatch: lossless OR a rule on
# the K dropout paths; relative: lossless OR one of the relatives' rules (no paths).
METHODS = ("target", "lossless", "dropmatch", "relative")
RELAXED_METHODS = ("dropmatch", "relative")  # the methods that run an acceptance rule
MODES = ("or", "replace")
DRAFT_QUANTS = ("none", "int8")  # the draft's weights: as loaded, or int8 weight-only (dropmatch.quant)
# The registry's names, in the order the app lists them; dropmatch.criteria maps each to its rule.
DROPMATCH_CRITERIA = ("js+majority", "js", "majority", "majority-strict", "naive")
DEFAULT_CRITERION = DROPMATCH_CRITERIA[0]  # paper Algorithm 1
# Inclusive integer ranges. seed: what torch.Generator.manual_seed takes once the seed is mixed with the
# round and position (see decode.position_generator), so every seed in range decodes.
LIMITS = {"gamma": (1, 16), "K": (1, 32), "max_new_tokens": (1, 2048), "seed": (0, 2**31 - 1), "top_n": (1, 50)}
MAX_TEMPERATURE = 5.0
# The paper's setting (K 5, p_drop 0.3, Algorithm 1) at draft length 5: the centre every sweep varies around.
PAPER_SETTING = {"gamma": 5, "K": 5, "p_drop": 0.3, "criterion": DEFAULT_CRITERION}
# the paper's Table 2: all 5 paths keep the unmasked top-1 at 98.4% of HumanEval positions (Llama-3.1-70B, p_drop 0.3)
PAPER_UNANIMITY = 0.984
FACTORS = ("p_drop", "K", "gamma", "criterion")  # what a DropMatch sweep varies, in the order OFAT walks them
# A sweep's methods, in the order its tables list them: the baseline, the method it varies, the relatives.
SWEEP_METHODS = ("lossless", "dropmatch", "relative")
SETTING_COLUMNS = ("method", "gamma", "K", "p_drop", "criterion", "knob")  # what names one setting of a sweep
# Why a drafted token is accepted, in order of precedence (when several accept, the first names it): the lossless
# test, DropMatch's criteria on the paths, the relatives' rules (dropmatch.relatives gives each rule its reason;
# the three fuzzy rules share one). A drafted position no rule accepts is `rejected`, one after it `skipped`.
SEMANTIC_REASONS = ("js", "majority", "naive")
RELATIVE_REASONS = ("fuzzy", "typical", "top-k", "mars")
ACCEPT_REASONS = ("exact", *SEMANTIC_REASONS, *RELATIVE_REASONS)
DRAFT_REASONS = (*ACCEPT_REASONS, "rejected", "skipped")


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


@dataclass(frozen=True)
class Knob:
    """A relative's one setting: its name, default (from its source), inclusive range and meaning."""

    name: str
    default: float
    lo: float
    hi: float
    meaning: str
    integer: bool = False

    def check(self, value) -> float:
        """`value` in range (a whole number where `integer`), or a ValueError naming the knob."""
        if self.integer:
            return float(bounded_int(self.name, value, int(self.lo), int(self.hi)))
        return bounded_float(self.name, value, self.lo, self.hi)


# The relatives: one knob each (dropmatch.relatives has each rule, its source and its equation). Defaults come
# from the sources where they give one (FSD's README uses JS 0.4; Medusa's code epsilon 0.09; MARS's code
# theta 0.9); the KL and TV thresholds have none there and sit where they relax about as often as DropMatch
# at its paper setting on the embedded pair; top-k starts at 2.
LN2 = 0.6931471805599453
KNOBS = {
    "fuzzy-js": Knob("threshold", 0.4, 0.0, LN2, "accept when JS(p || q) <= threshold (nats); larger relaxes more"),
    "fuzzy-kl": Knob("threshold", 1.0, 0.0, 100.0, "accept when KL(q || p) <= threshold (nats); larger relaxes more"),
    "fuzzy-tv": Knob("threshold", 0.5, 0.0, 1.0, "accept when TV(p, q) <= threshold; larger relaxes more"),
    "typical": Knob(
        "epsilon", 0.09, 0.0, 1.0, "accept when p(d) > min(epsilon, sqrt(epsilon) * exp(-H(p))); smaller relaxes more"
    ),
    "top-k": Knob(
        "k", 2, 1, 1000, "accept when d is among the target's k most likely tokens; larger relaxes more", integer=True
    ),
    "mars": Knob(
        "theta", 0.9, 0.0, 1.0, "accept d = the target's second token when z2 / z1 > theta; smaller relaxes more"
    ),
}
RELATIVE_CRITERIA = tuple(KNOBS)
# The statistics of p and q a drafted position's record keeps for the relatives (dropmatch.evidence computes them):
# H(p), JS(p || q), KL(q || p), TV(p, q), z2 / z1. A non-finite value is recorded as null: an infinite KL, or a
# ratio that is undefined (z1 <= 0).
RECORDED_STATISTICS = ("entropy", "js_pq", "kl_qp", "tv", "margin")
NULL_MEANS = {"kl_qp": float("inf")}  # what a null statistic stands for (NaN where not listed)
CRITERION_NAMES = (*DROPMATCH_CRITERIA, *RELATIVE_CRITERIA)


def criterion_method(criterion: str) -> str:
    """The method that runs a criterion: `dropmatch` for a rule on the paths, `relative` for the others."""
    if criterion not in CRITERION_NAMES:
        raise ValueError(f"criterion must be one of {', '.join(CRITERION_NAMES)}; got {criterion!r}")
    return "dropmatch" if criterion in DROPMATCH_CRITERIA else "relative"


@dataclass(frozen=True, kw_only=True)
class DecodeConfig:
    """Everything that decides a trace, besides the models and the prompt.

    method: `target` (target-only reference), `lossless` (standard speculative decoding),
        `dropmatch` (K dropout paths on the target's LM head decide semantic acceptance) or `relative`
        (one of DropMatch's relatives decides: Fuzzy SD, typical acceptance, top-k, MARS).
    gamma: draft tokens proposed per round. K, p_drop: dropout paths and their rate.
    criterion: a name in CRITERION_NAMES, of the method's family (DROPMATCH_CRITERIA for `dropmatch`,
        RELATIVE_CRITERIA for `relative`). mode: `or` accepts a draft token when the lossless test OR
        the criterion accepts it; `replace` uses the criterion alone.
    knob: a relative's one setting (KNOBS; None takes its source's default, and the config keeps the
        value used); None for the other methods.
    temperature: 0 is greedy; > 0 samples (lossless uses rejection sampling).
    evidence: compute the K paths at every drafted position and record top-N distributions for
        display; when False, paths are computed only where the decision needs them (faster, the same
        decisions).
    draft_quant, draft_vocab: the lean draft, properties of the loaded pair (DRAFT_QUANTS; the number of
        frequent tokens its head scores): None runs whatever the pair holds, a value must match it; the trace
        records the pair's (draft_vocab None there: the full vocabulary).
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
    knob: float | None = None
    draft_quant: str | None = None
    draft_vocab: int | None = None

    def __post_init__(self) -> None:
        for name, allowed in (
            ("method", METHODS),
            ("mode", MODES),
            ("criterion", CRITERION_NAMES),
            ("draft_quant", (None, *DRAFT_QUANTS)),
        ):
            if getattr(self, name) not in allowed:
                names = ", ".join(str(a) for a in allowed if a is not None)
                raise ValueError(f"{name} must be one of {names}; got {getattr(self, name)!r}")
        if self.method in RELAXED_METHODS and criterion_method(self.criterion) != self.method:
            family = DROPMATCH_CRITERIA if self.method == "dropmatch" else RELATIVE_CRITERIA
            raise ValueError(
                f"{self.criterion!r} is not a {self.method} criterion; use one of {', '.join(family)} "
                f"(or method {criterion_method(self.criterion)!r})"
            )
        if self.method == "relative":
            knob = KNOBS[self.criterion]
            value = knob.default if self.knob is None else knob.check(self.knob)
            object.__setattr__(self, "knob", int(value) if knob.integer else value)  # the value used, recorded
        elif self.knob is not None:
            raise ValueError(f"knob is a relative's setting; {self.method} takes none (got {self.knob!r})")
        for name, (lo, hi) in LIMITS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ValueError(f"{name} must be an integer in [{lo}, {hi}]; got {value!r}")
        vocab = self.draft_vocab
        if vocab is not None and (isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < 1):
            raise ValueError(f"draft_vocab must be a positive integer (or None for the full vocabulary); got {vocab!r}")
        bounded_float("p_drop", self.p_drop, 0.0, 1.0, hi_open=True)
        bounded_float("temperature", self.temperature, 0.0, MAX_TEMPERATURE)

    def to_dict(self) -> dict:
        return asdict(self)
