"""`match-knobs`: before a sweep, each relaxed rule's knob that accepts the share of exact-match rejections DropMatch
accepts at its reference setting, on a suite's recorded lossless positions.

A verdict compares rules at matched tau (within `tables.verdict.TAU_TOLERANCE` of each other). Finding each rule's
knob by sweeping it costs a run of every knob on the suite; this reads the positions instead: one target and one
draft forward over each recorded lossless output give, at every position where exact match rejects the draft's
proposal, everything a rule reads (`calibrate.collect`). The share of those rejections a rule accepts is what its tau
follows (each relaxed rejection lets a round go on), so the knob whose share equals DropMatch's (p_drop 0.3, K 5,
js+majority, its paths drawn as `calibrate.uniforms` draws them) predicts DropMatch's tau. It is a prediction, not a
measurement: the positions are lossless's, where a relaxed run soon writes its own text, and a rule that relaxes
where rejections cluster gains less tau than one that relaxes the same share spread out. The sweep then measures the
tau, and the verdict pairs only the settings it finds within the tolerance.

DropMatch behind the span gate (`--span-gate`): the p_drop at which DropMatch's accepts where the gate is open
(`token_kinds.gate_open`: prose anywhere but a token with a digit; code in comments, strings and whitespace) reach
the same share. Per rule, the share is measured on a grid across the knob's range (linear, and geometric toward 0 for
a knob whose small values matter), then on a fine grid between the two values around the crossing, and read by
linear interpolation; an integer knob takes the whole value on either side whose share lies nearer.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from dropmatch.config import PAPER_SETTING, Knob
from dropmatch.criteria import CRITERION_KNOBS, RULES
from dropmatch.evidence import Evidence
from dropmatch.heads import TargetHead
from dropmatch.lab.calibrate import CHUNK, Positions, path_evidence, uniforms
from dropmatch.models import ModelPair
from dropmatch.tables.tradeoff import knob_of, rule_name

COARSE, FINE = 241, 41  # knob values per rule on the grid across its range, and between the two around the crossing
ROWS = 256  # rejected positions per Evidence (each holds their full target and draft distributions)


def rejected(pos: Positions) -> torch.Tensor:
    """Indices of the positions where exact match rejects the draft's proposal."""
    return (pos.draft != pos.argmax).nonzero()[:, 0]


def grid(knob: Knob, points: int = COARSE) -> np.ndarray:
    """Values across a knob's range: evenly spaced, and geometric from a ten-thousandth of its top where it is positive
    (an epsilon of 0.001 and one of 0.01 relax very differently)."""
    lin = np.linspace(knob.lo, knob.hi, points)
    geo = np.geomspace(knob.hi * 1e-4, knob.hi, points // 2) if knob.hi > 0 and knob.lo >= 0 else []
    return np.unique(np.concatenate([lin, geo]))


@torch.inference_mode()
def rule_shares(pos: Positions, name: str, knobs, first=None) -> np.ndarray:
    """The share of exact-match rejections rule `name` accepts at each knob value (for a pair of knobs: the second
    part, with the first held at `first`). A rule's statistics are computed once per block of positions and read at
    every value."""
    idx = rejected(pos)
    hits = np.zeros(len(knobs))
    for rows in idx.split(ROWS) if len(idx) else ():
        ev = Evidence(pos.draft[rows], pos.q_logprobs[rows], pos.z[rows])
        for i, k in enumerate(knobs):
            hits[i] += int(RULES[name](ev, float(k) if first is None else (first, float(k))).accept.sum())
    return hits / max(len(idx), 1)


@torch.inference_mode()
def dropmatch_accepts(
    pair: ModelPair, pos: Positions, p_drop: float, K: int = PAPER_SETTING["K"], criterion: str | None = None, seed=0
) -> torch.Tensor:
    """[R] bool: where DropMatch (`criterion`, the paper's by default) accepts at each rejected position, its K paths
    drawn as `calibrate.measure` draws them (one uniform per position, path and unit: the masks of a larger p_drop
    drop a superset of the units)."""
    idx, head = rejected(pos), TargetHead.of(pair.target)
    if not len(idx):
        return torch.zeros(0, dtype=torch.bool)
    name = criterion or PAPER_SETTING["criterion"]
    u = uniforms(len(pos.argmax), K, pos.h.shape[-1], seed)
    return torch.cat([RULES[name](path_evidence(head, pos, rows, p_drop, u)).accept for rows in idx.split(CHUNK)])


def crossing(knobs: np.ndarray, shares: np.ndarray, target: float) -> tuple[int, float] | None:
    """The first pair of neighbouring knob values (sorted) whose shares lie on either side of `target`: its left index
    and the knob read by linear interpolation; None where the shares never reach it."""
    for i in range(len(knobs) - 1):
        a, b = shares[i] - target, shares[i + 1] - target
        if a == 0:
            return i, float(knobs[i])
        if a * b < 0:
            return i, float(knobs[i] + (knobs[i + 1] - knobs[i]) * a / (a - b))
    return (len(knobs) - 1, float(knobs[-1])) if shares[-1] == target else None


def match(measure, knob: Knob, target: float) -> dict:
    """The knob value whose share (`measure(values) -> shares`) equals `target`: coarse grid, then fine grid around
    the crossing; with the share measured there, or `reached` False and the share range where nothing crosses."""
    coarse = grid(knob)
    shares = measure(coarse)
    found = crossing(coarse, shares, target)
    if found is None:
        return {"knob": float("nan"), "share": float("nan"), "reached": False, "range": (shares.min(), shares.max())}
    i, _ = found
    fine = np.linspace(coarse[i], coarse[min(i + 1, len(coarse) - 1)], FINE)
    fine_shares = measure(fine)
    near = crossing(fine, fine_shares, target)
    value = near[1] if near else found[1]
    if knob.integer:  # the whole value on either side whose share lies nearer the target
        sides = np.array([np.floor(value), np.ceil(value)])
        value = float(sides[np.argmin(np.abs(measure(sides) - target))])
    return {"knob": value, "share": float(measure(np.array([value]))[0]), "reached": True, "range": None}


def matched_knobs(
    pair: ModelPair,
    pos: Positions,
    rules: dict[str, float | None],
    p_drop: float = PAPER_SETTING["p_drop"],
    span_gate: bool = False,
) -> pd.DataFrame:
    """One row per rule of `rules` (name -> the first part of a pair of knobs, else None), and with `span_gate` one for
    DropMatch behind the gate: the knob whose share of exact-match rejections accepted equals DropMatch's at
    `p_drop`, the share there, and DropMatch's own as `share_target`."""
    base = dropmatch_accepts(pair, pos, p_drop)
    if not len(base):
        raise ValueError("no recorded position has exact match reject the draft: there is no share to match")
    target = float(base.float().mean())
    rows = []
    for name, first in rules.items():
        knob = CRITERION_KNOBS[name]
        found = match(lambda values, n=name, f=first: rule_shares(pos, n, values, f), knob.position, target)
        shown = found["knob"] if first is None else f"{first:g}/{found['knob']:.4g}"
        rows.append({"rule": name, "knob_name": knob.name, **found, "knob": shown})
    if span_gate:
        if pos.gate is None:
            raise ValueError("the positions hold no span-gate flags: collect them with gates=True")
        gate = pos.gate[rejected(pos)]

        def gated(value: float) -> float:
            return float((dropmatch_accepts(pair, pos, value) & gate).float().mean())

        found = rising_root(gated, p_drop, target)
        rows.append({"rule": "DropMatch (span-gated)", "knob_name": "p_drop", **found})
    out = pd.DataFrame(rows)
    out["share_target"] = target
    out["rejections"] = len(base)
    return out


def rising_root(measure, start: float, target: float, step: float = 0.1, top: float = 0.9, halvings: int = 5) -> dict:
    """Where a costly share that rises with its knob (gated DropMatch's, one p_drop at a time) reaches `target`, from
    `start`, where it lies at or below it (the gate only takes accepts away): steps of `step` up to `top` until it
    reaches the target, then `halvings` bisections; the nearer end is the knob."""
    lo, s_lo = start, measure(start)
    if s_lo >= target:
        return {"knob": lo, "share": s_lo, "reached": True, "range": None}
    hi = lo
    while True:
        hi = min(hi + step, top)
        s_hi = measure(hi)
        if s_hi >= target:
            break
        if hi >= top:
            return {"knob": float("nan"), "share": float("nan"), "reached": False, "range": (s_lo, s_hi)}
        lo, s_lo = hi, s_hi
    for _ in range(halvings):
        mid = (lo + hi) / 2
        s_mid = measure(mid)
        lo, hi, s_lo, s_hi = (mid, hi, s_mid, s_hi) if s_mid < target else (lo, mid, s_lo, s_mid)
    value, share = (lo, s_lo) if target - s_lo <= s_hi - target else (hi, s_hi)
    return {"knob": value, "share": share, "reached": True, "range": None}


def measured_check(found: pd.DataFrame, points: pd.DataFrame, p_drop: float = PAPER_SETTING["p_drop"]) -> pd.DataFrame:
    """`found` with what a sweep already measured beside each prediction, where it ran the rule at knobs around it:
    DropMatch's pooled tau at `p_drop` (`tau_dropmatch`) and the rule's tau read off its measured curve at the
    predicted knob (`tau_at_knob`, linear between the two measured knobs around it; NaN outside them). `points`:
    `tables.tradeoff.setting_points` of the sweep."""
    plain = rule_name({"method": "dropmatch", "criterion": PAPER_SETTING["criterion"]})  # not span-gated
    dm = points[(points["rule"] == plain) & np.isclose(points["knob"].astype(float), p_drop)]
    out = found.assign(tau_dropmatch=float(dm["tau"].iloc[0]) if len(dm) else float("nan"), tau_at_knob=float("nan"))
    for i, row in out.iterrows():
        if not row["reached"] or row["rule"] not in RULES or row["rule"] not in CRITERION_KNOBS:
            continue
        setting = {"method": "relative", "criterion": row["rule"], "knob": row["knob"]}
        value = knob_of(setting)
        curve = points[(points["rule"] == rule_name(setting))].dropna(subset=["knob", "tau"]).sort_values("knob")
        if len(curve) >= 2 and curve["knob"].min() <= value <= curve["knob"].max():
            knobs, taus = curve["knob"].to_numpy(float), curve["tau"].to_numpy(float)
            out.loc[i, "tau_at_knob"] = float(np.interp(value, knobs, taus))
    return out
