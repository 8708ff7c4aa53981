"""Every shared constant once, and one frozen, validated configuration for a decoding run.

Importing this module pulls in no torch: the command line, the lab and the app read their choices
(methods, modes, the settings and their ranges, the paper's setting) from here; raw user settings
(the app's, the command line's) become a config through `DecodeConfig.from_settings`. The acceptance rules, with
their knobs and reasons, are the registry's (`dropmatch.criteria.RULES`), which a config reads when it is checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace

# target: target-only reference; lossless: standard speculative decoding; dropmatch: lossless OR a rule on
# the K dropout paths; relative: lossless OR one of the relatives' rules (no paths); truncation: the target alone,
# sampled from its truncated distribution (top-k or min-p sampling, no draft; greedy target decoding at T = 0).
METHODS = ("target", "lossless", "dropmatch", "relative", "truncation")
TARGET_ONLY_METHODS = ("target", "truncation")  # the methods that run no draft
RELAXED_METHODS = ("dropmatch", "relative")  # the methods that run an acceptance rule
KNOB_METHODS = ("relative", "truncation")  # the methods whose criterion may take a knob
MODES = ("or", "replace")
# the draft's weights: as loaded, int8 weight-only, or int4 in groups of 32 (CPU; dropmatch.quant)
DRAFT_QUANTS = ("none", "int8", "int4")
TARGET_QUANTS = ("none", "int4")  # the target's body in 4 bits (its head stays dense: the paths are its products)
# What runs the models: torch (the reference, every device), or llama.cpp on the embedded pair's GGUF files with the
# target's head in torch (dropmatch.llamacpp; optional, CPU)
ENGINES = ("torch", "llama.cpp")
DEFAULT_CRITERION = "js+majority"  # the paper's Algorithm 1 (the registry of rules is dropmatch.criteria.RULES)
# The paper's setting (K 5, p_drop 0.3, Algorithm 1) at draft length 5: the centre every sweep varies around.
PAPER_SETTING = {"gamma": 5, "K": 5, "p_drop": 0.3, "criterion": DEFAULT_CRITERION}
# The paper's Table 2: all K = 5 votes go to one token at 98.4% of HumanEval positions (Llama-3.1-70B, p_drop 0.3);
# `calibrate` measures that count and the stricter one, every path keeping the unmasked top-1, side by side.
PAPER_UNANIMITY = 0.984
# The paper's effect: the share of exact-match rejections DropMatch turns into acceptances, from its Table 6 by
# inverting tau = (1 - a^(L+1)) / (1 - a) for lossless and for DropMatch (lab/paper.relaxed_share; docs/algorithm.md,
# "Calibration"): HumanEval 21-30% (Llama L5 30%, L10 26%; Qwen L5 21%, L10 24%: 0.25 their mean), GSM8K 54%
# (Llama L5), MMLU 25%.
PAPER_RELAX_SHARE = {"humaneval": 0.25, "gsm8k": 0.54, "mmlu": 0.25}
PAPER_JS_SPREAD = (0.0014, 0.031)  # the paper's Table 3: the paths' JS spread max_i JS(p_i || centroid), nats
FACTORS = ("p_drop", "K", "gamma", "criterion")  # what a DropMatch sweep varies, in the order OFAT walks them
# A sweep's methods, in the order its tables list them: the baseline, the method it varies, the relatives, and
# truncation sampling of the target alone (the quality reference at T > 0).
SWEEP_METHODS = ("lossless", "dropmatch", "relative", "truncation")
SETTING_COLUMNS = (
    "method",
    "gamma",
    "K",
    "p_drop",
    "criterion",
    "knob",
    "span_gate",
)  # what names one setting of a sweep


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


@dataclass(frozen=True)
class Bound:
    """The range of one number: [lo, hi], or [lo, hi) where `hi_open`; whole numbers only where `integer`; `says` is
    what its messages call it (its name where empty)."""

    lo: float
    hi: float
    integer: bool = False
    hi_open: bool = False
    says: str = ""

    def check(self, name: str, value):
        """`value` (a number, or a numeric string) as an int or a float in range; otherwise a ValueError naming it."""
        name = self.says or name
        if self.integer:
            return bounded_int(name, value, int(self.lo), int(self.hi))
        return bounded_float(name, value, self.lo, self.hi, hi_open=self.hi_open)


# Every numeric setting's range, checked by `check_setting` alone. seed: what torch.Generator.manual_seed takes once the
# seed is mixed with the round and position (see heads.position_seed), so every seed in range decodes.
RANGES = {
    "gamma": Bound(1, 16, integer=True),
    "K": Bound(1, 32, integer=True),
    "p_drop": Bound(0.0, 1.0, hi_open=True),
    "temperature": Bound(0.0, 5.0),
    "max_new_tokens": Bound(1, 2048, integer=True, says="max new tokens"),
    "seed": Bound(0, 2**31 - 1, integer=True),
    "top_n": Bound(1, 50, integer=True),
}
# What a user picks for one run, in the order the app's controls, its /run and /trace endpoints and the command line
# take them. draft_quant, like draft_vocab, is a property of the loaded pair (PAIR_SETTINGS): the command line asks
# for it with the pair.
SETTINGS = (
    *("gamma", "K", "p_drop", "criterion", "mode", "temperature", "max_new_tokens", "seed", "knob", "draft_quant"),
    "span_gate",
)
PAIR_SETTINGS = ("draft_quant", "draft_vocab")


def bound(name: str, limits: Mapping[str, tuple] | None = None) -> Bound:
    """A setting's range, or a caller's tighter one where `limits` names the setting (the app's tokens per run)."""
    if limits and name in limits:
        lo, hi = limits[name]
        return replace(RANGES[name], lo=lo, hi=hi)
    return RANGES[name]


def check_setting(name: str, value, limits: Mapping[str, tuple] | None = None):
    """One raw numeric setting (a number, or a string from the API, the command line or a sweep grid) as its type,
    checked against its range (`bound`): the one range check of every entry point, with one set of messages."""
    return bound(name, limits).check(name, value)


def sampling_temperature(temperature: float) -> float:
    """The temperature distributions are compared at: greedy decoding (T = 0) still compares T = 1 softmaxes."""
    return temperature if temperature > 0 else 1.0


@dataclass(frozen=True)
class Knob:
    """A rule's (or a truncation's) one setting: its name, default (from its source), inclusive range, meaning (true
    at T = 0 and at T > 0), whole numbers only where `integer`; `strict` and `strict_greedy`, the values at which the
    rule relaxes nothing when sampling and at T = 0 (None where no value does)."""

    name: str
    default: float
    lo: float
    hi: float
    meaning: str
    integer: bool = False
    strict: float | None = None
    strict_greedy: float | None = None

    def check(self, value) -> float:
        """`value` in range (a whole number where `integer`), or a ValueError naming the knob."""
        value = float(Bound(self.lo, self.hi, self.integer).check(self.name, value))
        return int(value) if self.integer else value

    def text(self, value) -> str:
        """A value as a sweep's key and the knob box write it: "0.09"."""
        return f"{value:g}"

    def said(self, value=None) -> str:
        """A value in words, the default where None: "epsilon 0.09"."""
        return f"{self.name} {self.default if value is None else value:g}"

    @property
    def position(self) -> Knob:
        """The part of the knob a rule's curve runs along: the knob itself."""
        return self


@dataclass(frozen=True)
class KnobPair:
    """Two settings of one rule taken together (TensorRT-LLM's relaxed top-K and delta), written "8/0.5" in the app's
    knob box, in --knob and in a sweep's --rule ("8, 0.5" and a two-number list are taken too); held as a tuple.
    `strict` and `strict_greedy` as a Knob's; a rule's curve runs along its second part at a fixed first one."""

    first: Knob
    second: Knob
    meaning: str
    strict: tuple | None = None
    strict_greedy: tuple | None = None
    integer = False

    @property
    def name(self) -> str:
        return f"{self.first.name}/{self.second.name}"

    @property
    def default(self) -> tuple:
        return (self.first.default, self.second.default)

    @property
    def position(self) -> Knob:
        return self.second

    def check(self, value) -> tuple:
        """`value` as (first, second), each in its range; otherwise a ValueError that says how to write it."""
        parts = value.replace(",", "/").split("/") if isinstance(value, str) else value
        if isinstance(parts, (int, float)) or not hasattr(parts, "__len__") or len(parts) != 2:
            raise ValueError(f"{self.name} takes two numbers, written {self.text(self.default)}; got {value!r}")
        return (self.first.check(parts[0]), self.second.check(parts[1]))

    def text(self, value) -> str:
        return "/".join(f"{v:g}" for v in value)

    def said(self, value=None) -> str:
        first, second = self.default if value is None else value
        return f"{self.first.said(first)}, {self.second.said(second)}"


# The statistics of p and q a drafted position's record keeps for the relatives (dropmatch.evidence computes them):
# H(p), JS(p || q), KL(q || p), TV(p, q), z2 / z1, the top-3 entropy H3(p), d's place in the target's order (ties
# in index order), and of the round's lossless test the run of accepts after the position, the draft length and
# the uniform u; the speculative cascades' p1(d), max p1, max q1 (T = 1 softmaxes), TokenV3's edge and the static
# ensemble's edge. A non-finite value is recorded as null: an infinite KL, a ratio that is undefined (z1 <= 0), u and
# TokenV3's edge when greedy (no draw), the ensemble's edge when sampling.
RECORDED_STATISTICS = (
    *("entropy", "js_pq", "kl_qp", "tv", "margin", "h3", "order", "after", "gamma", "u"),
    *("p1_d", "p1_max", "q1_max", "v3_edge", "ens_edge"),
)
NULL_MEANS = {"kl_qp": float("inf")}  # what a null statistic stands for (NaN where not listed)
# Truncation sampling of the target alone (dropmatch.truncation), as transformers' warpers: temperature first, then
# top-k keeps the tokens at least as likely as the k-th (ties kept), min-p drops v with p_T(v) < min_p max p_T.
# Defaults: transformers' top_k 50; min-p 0.1, a common setting (the warper has no default).
TRUNCATION_KNOBS = {
    "top-k-sampling": Knob(
        "k", 50, 1, 1000, "sample from the target's k most likely tokens (ties at the k-th kept); 1 is greedy", True
    ),
    "min-p": Knob("min_p", 0.1, 0.0, 1.0, "sample from {v : p_T(v) >= min_p max p_T}; 0 is plain target sampling"),
}
TRUNCATION_CRITERIA = tuple(TRUNCATION_KNOBS)


def _rules():
    """The registry of acceptance rules (dropmatch.criteria), read when a config is checked: importing this module
    loads no torch, and the registry sits above it."""
    from dropmatch import criteria

    return criteria


def criterion_knob(criterion: str) -> Knob | None:
    """The knob a criterion takes (a rule's or a truncation's), or None."""
    return TRUNCATION_KNOBS.get(criterion) or _rules().KNOBS.get(criterion)


def criterion_names() -> tuple[str, ...]:
    """Every criterion a run can name: the registry's rules, then the truncations of the target."""
    return (*_rules().RULES, *TRUNCATION_CRITERIA)


def criterion_method(criterion: str) -> str:
    """The method that runs a criterion: `dropmatch` for a rule on the paths, `truncation` for a truncation of
    the target, `relative` for the others."""
    if criterion in TRUNCATION_CRITERIA:
        return "truncation"
    rules = _rules()
    if criterion not in rules.RULES:
        raise ValueError(f"criterion must be one of {', '.join(criterion_names())}; got {criterion!r}")
    return "dropmatch" if criterion in rules.DROPMATCH_CRITERIA else "relative"


@dataclass(frozen=True, kw_only=True)
class DecodeConfig:
    """Everything that decides a trace, besides the models and the prompt.

    method: `target` (target-only reference), `lossless` (standard speculative decoding),
        `dropmatch` (K dropout paths on the target's LM head decide semantic acceptance), `relative`
        (one of DropMatch's relatives decides: Fuzzy SD, typical acceptance, top-k, MARS...) or `truncation`
        (the target alone, top-k or min-p sampled: the quality reference a relaxed rule must beat at T > 0).
    gamma: draft tokens proposed per round. K, p_drop: dropout paths and their rate.
    criterion: a rule of the registry (`dropmatch.criteria.RULES`) or a truncation, of the method's family
        (DropMatch's criteria for `dropmatch`, the other rules for `relative`, TRUNCATION_CRITERIA for
        `truncation`). mode: `or` accepts a draft token when the lossless test OR the criterion accepts it;
        `replace` uses the criterion alone (a rule that verifies against its own distribution is the test itself:
        both modes decode alike).
    knob: a rule's or a truncation's one setting (`criterion_knob`; None takes its default, and the config
        keeps the value used); None for the other methods.
    span_gate: the rule relaxes only where the text so far stands inside a comment or a string, or the draft token is
        whitespace (a plain prompt, read as Python); in a chat turn, only on a token that holds no digit. Elsewhere
        the lossless test decides alone (`token_kinds.gate_open`). A rule's switch: False for the other methods.
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
    knob: float | tuple | None = None
    span_gate: bool = False
    draft_quant: str | None = None
    draft_vocab: int | None = None

    def __post_init__(self) -> None:
        for name, allowed in (
            ("method", METHODS),
            ("mode", MODES),
            ("criterion", criterion_names()),
            ("draft_quant", (None, *DRAFT_QUANTS)),
        ):
            if getattr(self, name) not in allowed:
                names = ", ".join(str(a) for a in allowed if a is not None)
                raise ValueError(f"{name} must be one of {names}; got {getattr(self, name)!r}")
        if self.method in (*RELAXED_METHODS, "truncation") and criterion_method(self.criterion) != self.method:
            rules = _rules()
            family = {"dropmatch": rules.DROPMATCH_CRITERIA, "truncation": TRUNCATION_CRITERIA}.get(
                self.method, rules.RELATIVE_CRITERIA
            )
            raise ValueError(
                f"{self.criterion!r} is not a {self.method} criterion; use one of {', '.join(family)} "
                f"(or method {criterion_method(self.criterion)!r})"
            )
        knob = criterion_knob(self.criterion) if self.method in KNOB_METHODS else None
        if knob is not None:
            value = knob.default if self.knob is None else knob.check(self.knob)
            object.__setattr__(self, "knob", value)  # the value used, recorded
        elif self.knob is not None:
            raise ValueError(f"knob is a rule's setting; {self.method} {self.criterion} takes none (got {self.knob!r})")
        gate = (
            {"true": True, "false": False}.get(str(self.span_gate).lower())
            if not isinstance(self.span_gate, bool)
            else self.span_gate
        )
        if gate is None or (gate and self.method not in RELAXED_METHODS):
            raise ValueError(
                f"span_gate switches a rule (dropmatch or relative) on or off, true or false; got {self.span_gate!r}"
                + (f" for method {self.method}" if gate else "")
            )
        object.__setattr__(self, "span_gate", gate)
        for name in RANGES:  # each number as its type (a whole float or a numeric string counts), in range
            object.__setattr__(self, name, check_setting(name, getattr(self, name)))
        vocab = self.draft_vocab
        if vocab is not None and (isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < 1):
            raise ValueError(f"draft_vocab must be a positive integer (or None for the full vocabulary); got {vocab!r}")

    @classmethod
    def from_settings(cls, limits: Mapping[str, tuple] | None = None, **raw) -> DecodeConfig:
        """The one way from raw user settings (API strings, slider floats, command-line arguments, sweep values) to a
        config, with one set of messages: each number as its type and in range (`check_setting`; first within a caller's
        tighter `limits`, such as the app's tokens per run), the method the criterion's where `raw` names none, and
        the knob a relative's alone (empty: its default) and ignored for the other methods."""
        method = raw.pop("method", None) or criterion_method(raw.get("criterion", DEFAULT_CRITERION))
        for name in set(raw) & set(limits or {}):
            raw[name] = check_setting(name, raw[name], limits)
        knob = raw.pop("knob", None)
        if method in KNOB_METHODS and knob not in (None, ""):
            raw["knob"] = knob
        return cls(method=method, **raw)

    def to_dict(self) -> dict:
        return asdict(self)
