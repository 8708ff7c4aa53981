"""`headbench`: time the K-path LM-head products and the criteria on random weights of any head shape.

Compares with the paper's Table 4 (a 70B head, hidden 8192, vocab 128256, on an A100; dropmatch.lab.paper)
on any machine without a 70B download.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn.functional as F

from dropmatch.config import DEFAULT_CRITERION
from dropmatch.criteria import RULES
from dropmatch.evidence import Evidence
from dropmatch.heads import PathStats, dropout_masks, path_logits, sparse_complement_logits


def _timeit(fn, device: torch.device, repeat: int) -> float:
    """Median milliseconds of `repeat` calls after two warm-up calls."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(repeat):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append((time.perf_counter() - start) * 1e3)
    return float(torch.tensor(times).median())


@dataclass(frozen=True)
class HeadInputs:
    """A random head and one round's positions, all on one device: W [V, H] (a bias-free head), h [P, H], masks
    [P, K, H], z [P, V] = W h, q_logprobs [P, V] (a random draft distribution), draft [P] (z's argmax)."""

    W: torch.Tensor
    h: torch.Tensor
    masks: torch.Tensor
    z: torch.Tensor
    q_logprobs: torch.Tensor
    draft: torch.Tensor


def head_inputs(
    hidden: int, vocab: int, K: int, positions: int, device: str | torch.device, dtype: torch.dtype, p_drop: float
) -> HeadInputs:
    """The inputs headbench times, drawn on the CPU from one seeded generator (the same numbers on every device),
    then moved to `device` once: nothing the timed products read is made anywhere else."""
    dev = torch.device(device)
    g = torch.Generator().manual_seed(0)
    W = (torch.randn(vocab, hidden, generator=g) / hidden**0.5).to(dev, dtype)  # [V, H]
    h = torch.randn(positions, hidden, generator=g).to(dev, dtype)  # [P, H]
    masks = dropout_masks(positions, K, hidden, p_drop, g).to(dev)  # [P, K, H]
    q_logprobs = torch.log_softmax(torch.randn(positions, vocab, generator=g), -1).to(dev)  # [P, V]
    z = F.linear(h, W)  # [P, V]
    return HeadInputs(W=W, h=h, masks=masks, z=z, q_logprobs=q_logprobs, draft=z.argmax(-1))


def timed_rows(x: HeadInputs, p_drop: float, sparse: bool = True) -> dict[str, Callable[[], object]]:
    """What headbench times, by row name: the plain head, the K-path products (dense, lazy, sparse-complement)
    and the criteria on them, each a call on `x` alone."""
    K, W, h, masks, z = x.masks.shape[1], x.W, x.h, x.masks, x.z
    head = functools.partial(F.linear, weight=W)  # a plain bias-free head: [..., H] -> [..., V]

    def stats(logits=None) -> Evidence:
        paths = None if logits is None else PathStats(logits=logits, draft=x.draft, q_logprobs=x.q_logprobs)
        return Evidence(draft=x.draft, q_logprobs=x.q_logprobs, target_logits=z.float(), paths=paths)

    one = slice(0, 1)
    rows = {
        "plain head, all positions": lambda: F.linear(h, W),
        f"K={K} paths, dense, all positions": lambda: path_logits(h, head, masks, p_drop),
        f"K={K} paths, dense, 1 position (lazy)": lambda: path_logits(h[one], head, masks[one], p_drop),
    }
    if sparse:
        W_t = W.t().contiguous()  # [H, V]: a dropped hidden unit is one row
        rows[f"K={K} paths, sparse-complement, all positions"] = lambda: sparse_complement_logits(
            z, h, W_t, masks, p_drop
        )
    logits = path_logits(h, head, masks, p_drop)
    rows[f"K={K} paths + naive, all positions"] = lambda: RULES["naive"](stats(path_logits(h, head, masks, p_drop)))
    rows[f"K={K} paths + js, all positions"] = lambda: RULES["js"](stats(path_logits(h, head, masks, p_drop)))
    rule = RULES[DEFAULT_CRITERION]
    rows[f"K={K} paths + {DEFAULT_CRITERION}, all positions"] = lambda: rule(stats(path_logits(h, head, masks, p_drop)))
    rows[f"criteria only: {DEFAULT_CRITERION} on ready paths"] = lambda: rule(stats(logits))
    for name in ("fuzzy-js", "typical", "mars"):  # the relatives read the unmasked head only: no paths
        rows[f"relative only: {name}, all positions"] = lambda name=name: RULES[name](stats())
    return rows


@torch.inference_mode()
def run_headbench(
    hidden: int,
    vocab: int,
    K: int,
    positions: int,
    device: str,
    dtype: torch.dtype,
    p_drop: float = 0.3,
    repeat: int = 10,
    sparse: bool = True,
) -> pd.DataFrame:
    """Median milliseconds of each timed row (`timed_rows`) on a random head of this shape, and each over the
    plain head's."""
    dev = torch.device(device)
    rows = timed_rows(head_inputs(hidden, vocab, K, positions, dev, dtype, p_drop), p_drop, sparse)
    out = pd.DataFrame({"ms": {name: _timeit(fn, dev, repeat) for name, fn in rows.items()}})
    out["x plain"] = out["ms"] / out.loc["plain head, all positions", "ms"]
    return out
