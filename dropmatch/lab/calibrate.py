"""`calibrate`: how far the K dropout paths split at each p_drop, and the p_drops that transfer the paper's regime.

The paper runs p_drop 0.3 on 32B and 70B heads, where all K = 5 votes go to one token at 98.4% of HumanEval
positions (its Table 2). A narrower head splits far more at the same rate, so the same p_drop relaxes far more.
This measures, on real positions of a suite, per p_drop:
- unanimity, counted two ways: every path's top-1 is the unmasked head's top-1 (`unanimity`, the project's
  count), and all K top-1 votes go to one token (`unanimity_paper`, the paper's count);
- the mean JS threshold max_i JS(p_i || centroid) (nats);
- how often each DropMatch rule would accept the draft's proposal where exact match rejects it (`relax_<rule>`);
and finds, by bisection between the grid values around each, the p_drop of every anchor (`ANCHORS`): the
unanimity the paper reports (both counts), the paper's effect (the share of exact-match rejections DropMatch
relaxes, from its Table 6), and the paper's Table 3 range of the JS threshold. Matching unanimity transfers how
often the paths agree; matching the effect transfers how much DropMatch relaxes, which is what its speed and its
quality follow. When no p_drop reaches an anchor, it says so and names the closest.
It also shows which hidden dimensions drive the splits: for each dimension, how often zeroing it alone moves
the argmax, beside its mean |h|.

Positions: every generated position of a suite's lossless outputs (read from a recorded sweep, or decoded
now). One target forward and one draft forward over prompt + output give, at every position, the final
hidden state h, the unmasked logits z, the draft's distribution q and its greedy proposal d for that prefix.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from dropmatch.config import (
    DEFAULT_CRITERION,
    PAPER_JS_SPREAD,
    PAPER_RELAX_SHARE,
    PAPER_SETTING,
    PAPER_UNANIMITY,
    DecodeConfig,
)
from dropmatch.criteria import DROPMATCH_CRITERIA, RULES
from dropmatch.decode import generate, position_generator, token_pieces
from dropmatch.evidence import Evidence
from dropmatch.heads import PathStats, TargetHead, path_logits
from dropmatch.models import ModelPair, encode_prompt
from dropmatch.token_kinds import gate_open

CHUNK = 16  # positions per batched head product


@dataclass(frozen=True)
class Positions:
    """Every calibration position: h [N, H], unmasked argmax [N], draft proposal d [N], q log-probs [N, V]."""

    h: torch.Tensor
    argmax: torch.Tensor
    draft: torch.Tensor
    q_logprobs: torch.Tensor
    z: torch.Tensor  # [N, V] float32 unmasked logits
    gate: torch.Tensor | None = None  # [N] bool, where the span gate lets a rule relax (`collect(gates=True)`)


@torch.inference_mode()
def collect(
    pair: ModelPair, prompts: list[tuple[str, bool, list[int]]], rejected_only: bool = False, gates: bool = False
) -> Positions:
    """Positions of (prompt, chat, output ids) triples: one target and one draft forward over each sequence.
    `rejected_only` keeps the positions where exact match rejects the draft's proposal (the only ones a relaxed rule
    can change, at a fraction of the memory); `gates` records where the span gate is open at each kept position
    (`token_kinds.gate_open` on the prompt and output so far and the proposal's own text, as a run reads them)."""
    head = TargetHead.of(pair.target)
    hs, zs, qs, gate = [], [], [], []
    for prompt, chat, output in prompts:
        ids = encode_prompt(pair.tokenizer, prompt, chat) + list(output)
        span = slice(len(ids) - len(output) - 1, len(ids) - 1)  # the positions that predict each output token
        x = torch.tensor([ids], device=pair.device)
        h = pair.target.get_decoder()(input_ids=x, use_cache=False).last_hidden_state[0, span]  # [n, H]
        z = head(h).cpu()
        q = torch.log_softmax(pair.draft(input_ids=x, use_cache=False).logits[0, span].float().cpu(), -1)
        kept = (q.argmax(-1) != z.argmax(-1)) if rejected_only else torch.ones_like(z[:, 0], dtype=torch.bool)
        hs.append(h[kept.to(h.device)])
        zs.append(z[kept])
        qs.append(q[kept])
        if gates:
            drafts = q.argmax(-1).tolist()
            for t in kept.nonzero()[:, 0].tolist():
                prefix = prompt + pair.tokenizer.decode(output[:t], skip_special_tokens=False)
                piece = token_pieces(pair.tokenizer, list(output[:t]) + [drafts[t]], t)[0]
                gate.append(gate_open(prefix, piece, code=not chat))
    z, q = torch.cat(zs), torch.cat(qs)
    V = max(z.shape[-1], q.shape[-1])
    z, q = (torch.nn.functional.pad(t, (0, V - t.shape[-1]), value=float("-inf")) for t in (z, q))
    flags = torch.tensor(gate, dtype=torch.bool) if gates else None
    return Positions(h=torch.cat(hs), argmax=z.argmax(-1), draft=q.argmax(-1), q_logprobs=q, z=z, gate=flags)


def uniforms(n: int, K: int, hidden: int, seed: int) -> torch.Tensor:
    """One uniform draw per (position, path, unit); a mask at rate p keeps u >= p, so the masks of a larger
    p_drop drop a superset of the units (the curve is not noise from fresh draws at each rate).  # [N, K, H]"""
    return torch.stack([torch.rand(K, hidden, generator=position_generator(seed, 0, i)) for i in range(n)])


def path_evidence(head: TargetHead, pos: Positions, rows, p_drop: float, u: torch.Tensor) -> Evidence:
    """The evidence at positions `rows` of `pos` with DropMatch's K paths at `p_drop` (masks keep u >= p_drop), the
    paths' logits padded to the positions' vocabulary."""
    logits = path_logits(pos.h[rows], head, u[rows] >= p_drop, p_drop).cpu()  # [P, K, V]
    logits = torch.nn.functional.pad(logits, (0, pos.z.shape[-1] - logits.shape[-1]), value=float("-inf"))
    stats = PathStats(logits=logits, draft=pos.draft[rows], q_logprobs=pos.q_logprobs[rows])
    return Evidence(pos.draft[rows], pos.q_logprobs[rows], pos.z[rows], paths=stats)


@torch.inference_mode()
def measure(pair: ModelPair, pos: Positions, p_drop: float, u: torch.Tensor) -> dict:
    """Unanimity (both counts), mean JS threshold and each DropMatch rule's relax rate at one p_drop."""
    head = TargetHead.of(pair.target)
    unanimous, agreeing, thresholds, relaxed = [], [], [], {name: [] for name in DROPMATCH_CRITERIA}
    for start in range(0, len(pos.argmax), CHUNK):
        rows = slice(start, start + CHUNK)
        ev = path_evidence(head, pos, rows, p_drop, u)
        top1 = ev.paths.logits.argmax(-1)  # [P, K]
        unanimous.append((top1 == pos.argmax[rows, None]).all(-1))
        agreeing.append((top1 == top1[:, :1]).all(-1))  # all K votes for one token, whichever it is
        rejected = pos.draft[rows] != pos.argmax[rows]
        thresholds.append(ev.paths.js_paths.max(-1).values)
        for name in DROPMATCH_CRITERIA:
            relaxed[name].append(RULES[name](ev).accept[rejected])
    rejected_n = int((pos.draft != pos.argmax).sum())
    row = {
        "p_drop": p_drop,
        "unanimity": float(torch.cat(unanimous).float().mean()),
        "unanimity_paper": float(torch.cat(agreeing).float().mean()),
        "js_threshold": float(torch.cat(thresholds).mean()),
        "positions": len(pos.argmax),
        "exact_rejects": rejected_n,
    }
    for name, hits in relaxed.items():
        row[f"relax_{name}"] = float(torch.cat(hits).float().mean()) if rejected_n else float("nan")
    return row


@dataclass(frozen=True, kw_only=True)
class Anchor:
    """One way to carry the paper's regime to this head: a curve column, the paper's value of it, whether the column
    grows with p_drop, and the side of the value a p_drop must stay on (the pick is the p_drop nearest the crossing
    on that side)."""

    name: str
    column: str
    target: float
    rising: bool
    side: str  # "above": the column at least the target; "below": at most
    meaning: str

    def holds(self, value: float) -> bool:
        return value >= self.target if self.side == "above" else value <= self.target

    @property
    def ok_high(self) -> bool:
        """Whether the p_drops on the anchor's side lie above the crossing (else below it)."""
        return self.rising == (self.side == "above")


AT_ZERO = {"unanimity": 1.0, "unanimity_paper": 1.0, "js_threshold": 0.0}  # p_drop 0: every path is the head


def anchors(
    unanimity: float = PAPER_UNANIMITY,
    relax_share: float = PAPER_RELAX_SHARE["humaneval"],
    criterion: str = DEFAULT_CRITERION,
    js_spread: tuple[float, float] = PAPER_JS_SPREAD,
) -> tuple[Anchor, ...]:
    """The anchors a calibration reports side by side (defaults: the paper's HumanEval numbers)."""
    return (
        Anchor(
            name="unanimity",
            column="unanimity",
            target=unanimity,
            rising=False,
            side="above",
            meaning="every path keeps the unmasked top-1 (this project's count)",
        ),
        Anchor(
            name="unanimity (paper's count)",
            column="unanimity_paper",
            target=unanimity,
            rising=False,
            side="above",
            meaning="all K votes go to one token (the paper's Table 2 count)",
        ),
        Anchor(
            name="effect",
            column=f"relax_{criterion}",
            target=relax_share,
            rising=True,
            side="above",
            meaning=f"{criterion} accepts this share of the drafts exact match rejects (the paper's Table 6 effect)",
        ),
        Anchor(
            name="JS spread, low end",
            column="js_threshold",
            target=js_spread[0],
            rising=True,
            side="above",
            meaning="the mean JS threshold reaches the low end of the paper's Table 3 range",
        ),
        Anchor(
            name="JS spread, high end",
            column="js_threshold",
            target=js_spread[1],
            rising=True,
            side="below",
            meaning="the mean JS threshold stays under the high end of the paper's Table 3 range",
        ),
    )


def bracket(rows: list[dict], anchor: Anchor) -> tuple[float | None, float | None]:
    """The measured p_drop nearest the anchor's crossing on its side (p_drop 0 counts where the column's value
    there is known), and the nearest one beyond the crossing; None where there is none."""
    points = [(r["p_drop"], r[anchor.column]) for r in rows if r["p_drop"] > 0]
    if anchor.column in AT_ZERO:
        points.append((0.0, AT_ZERO[anchor.column]))
    ok = [p for p, v in points if anchor.holds(v)]
    bad = [p for p, v in points if not anchor.holds(v)]
    if anchor.ok_high:
        near = min(ok, default=None)
        return near, max((p for p in bad if near is None or p < near), default=None)
    near = max(ok, default=None)
    return near, min((p for p in bad if near is None or p > near), default=None)


def pick(table: pd.DataFrame, anchor: Anchor) -> dict:
    """The anchor's p_drop in a measured table: the nearest the crossing on its side and True, or, where no p_drop
    is on its side, the one whose value comes closest and False."""
    near, _ = bracket(table.to_dict("records"), anchor)
    values = table.set_index("p_drop")[anchor.column]
    if near is None or (near == 0.0 and near not in values.index):
        near, reached = float((values - anchor.target).abs().idxmin()), False
    else:
        reached = True
    value = float(values[near]) if near in values.index else AT_ZERO[anchor.column]
    return {
        "anchor": anchor.name,
        "column": anchor.column,
        "target": anchor.target,
        "p_drop": float(near),
        "reached": reached,
        "value": value,
        "meaning": anchor.meaning,
    }


def curve(
    pair: ModelPair,
    pos: Positions,
    grid: list[float],
    K: int,
    marks: tuple[Anchor, ...] | None = None,
    refine: int = 3,
    seed: int = 0,
) -> tuple[pd.DataFrame, list[dict]]:
    """Measure every p_drop of `grid`, then for each anchor bisect `refine` times between the measured p_drops
    on either side of its crossing (p_drop 0, where every path is the unmasked head, counts as measured).
    Returns the table (sorted by p_drop) and each anchor's pick (`pick`)."""
    marks = anchors() if marks is None else marks
    u = uniforms(len(pos.argmax), K, pos.h.shape[-1], seed)
    rows = [measure(pair, pos, p, u) for p in sorted(set(grid))]
    for anchor in marks:
        for _ in range(refine):
            near, beyond = bracket(rows, anchor)
            if near is None or beyond is None:
                break
            mid = (near + beyond) / 2
            if any(r["p_drop"] == mid for r in rows):
                break
            rows.append(measure(pair, pos, mid, u))
    table = pd.DataFrame(rows).sort_values("p_drop", ignore_index=True)
    return table, [pick(table, anchor) for anchor in marks]


@torch.inference_mode()
def dimension_flips(pair: ModelPair, pos: Positions, limit: int = 256, top: int = 64) -> pd.DataFrame:
    """Per hidden dimension: the share of positions (the first `limit`) where zeroing that dimension alone moves
    the argmax, and its mean |h|. Exact for a linear head followed by a monotone post-processing (soft-capping,
    scaling): only the `top` highest logits can take over unless a dimension's largest possible swing says
    otherwise, and such (position, dimension) pairs are checked over the whole vocabulary."""
    module = pair.target.get_output_embeddings()
    W = module.weight.float()  # [V, H]
    h = pos.h[:limit].to(W.device, torch.float32)  # [N, H], beside the head (a device_map may split the pair)
    raw = torch.nn.functional.linear(h, W, None if module.bias is None else module.bias.float())  # [N, V]
    swing = h.abs() * W.abs().max(0).values  # [N, H]: the most zeroing one unit can move any logit
    vals, cand = raw.topk(top, dim=-1)  # [N, M]
    flips = torch.zeros(h.shape[1], device=h.device)  # [H]: positions where zeroing the unit moves the argmax
    for n in range(h.shape[0]):
        moved = vals[n][None, :] - h[n][:, None] * W[cand[n]].T  # [H, M]: the candidates without each unit
        flip = moved.argmax(-1) != 0
        unsure = ((vals[n, 0] - vals[n, -1]) <= 2 * swing[n]).nonzero()[:, 0]  # a logit outside could take over
        for dims in unsure.split(64):
            exact = raw[n][None, :] - h[n, dims][:, None] * W[:, dims].T  # [d, V]
            flip[dims] = exact.argmax(-1) != cand[n, 0]
        flips += flip.float()
    return pd.DataFrame(
        {"dim": range(h.shape[1]), "flip_rate": (flips / h.shape[0]).tolist(), "mean_abs_h": h.abs().mean(0).tolist()}
    )


def lossless_outputs(pair: ModelPair, items, max_new_tokens: int) -> list[tuple[str, bool, list[int]]]:
    """(prompt, chat, lossless output ids) for suite items decoded now (greedy, gamma 5)."""
    config = DecodeConfig(method="lossless", max_new_tokens=max_new_tokens)
    return [(it.prompt, it.chat, generate(pair, it.prompt, config, chat=it.chat).token_ids) for it in items]


def recorded_outputs(table: pd.DataFrame, items) -> list[tuple[str, bool, list[int]]]:
    """(prompt, chat, output ids) of the lossless rows of a recorded sweep (at the paper's gamma where it ran)."""
    rows = table[table["method"] == "lossless"]
    gammas = set(rows["gamma"])
    gamma = PAPER_SETTING["gamma"] if PAPER_SETTING["gamma"] in gammas or not gammas else min(gammas)
    rows = rows[rows["gamma"] == gamma].set_index("prompt_id")
    missing = [it.id for it in items if it.id not in rows.index]
    if missing:
        raise ValueError(f"the recorded sweep has no lossless output for {', '.join(missing[:5])}")
    ids = {it.id: rows.loc[it.id, "output_ids"] for it in items}
    return [
        (it.prompt, it.chat, [int(t) for t in ids[it.id].split()] if isinstance(ids[it.id], str) else [])
        for it in items
    ]
