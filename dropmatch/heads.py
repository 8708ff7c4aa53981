"""K Monte Carlo dropout paths on the LM head: the model's own head, masks, batched products, statistics.

Only the hidden state that the LM head consumes is dropped (inverted dropout; docs/algorithm.md); the
transformer blocks and the KV cache are untouched, so the paths cost K extra head products and no forward
pass. Every product, unmasked or masked, goes through `TargetHead`: the model's head module (its bias and
accelerate's device hooks included) followed by the model's own logit post-processing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import torch
import torch.nn.functional as F

Head = Callable[[torch.Tensor], torch.Tensor]  # final hidden states [..., H] -> float32 logits [..., V]


@dataclass(frozen=True)
class TargetHead:
    """A causal LM's head as the model itself applies it: module(h), then the family's post-processing.

    softcap: Gemma-2/3 `final_logit_softcapping` (z = c * tanh(z / c)); divide: Granite `logits_scaling`
    (z = z / s); multiply: Cohere `logit_scale` (z = z * s). The steps run in the model's dtype, in the
    model's order, so the result equals the model's own forward logits; then float32.
    """

    module: torch.nn.Module
    softcap: float | None = None
    divide: float | None = None
    multiply: float | None = None

    @classmethod
    def of(cls, model: torch.nn.Module) -> TargetHead:
        config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
        return cls(
            module=model.get_output_embeddings(),
            softcap=getattr(config, "final_logit_softcapping", None),
            divide=getattr(config, "logits_scaling", None),
            multiply=getattr(model, "logit_scale", None) or None,
        )

    def __call__(self, h: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        """The head on h * scale, as float32 logits.

        A scale other than 1 (inverted dropout's 1 / (1 - p_drop), `path_logits`) multiplies the module's product in
        float32, not h in the model's dtype, where the scale itself would be rounded (in bf16, 1 / 0.7 becomes 1.4297)
        and every scaled unit rounded again. The module is affine (W h + b), so module(h * s) = s * (module(h) - b) + b,
        with b read as module(0) (through the module's own hooks); the post-processing then runs in float32.
        """
        z = self.module(h)  # [..., V]
        if scale != 1.0:
            z = z.float()
            if getattr(self.module, "bias", None) is None and isinstance(self.module, torch.nn.Linear):
                z = z * scale
            else:
                b = self.module(h.new_zeros(1, h.shape[-1])).float()  # [1, V]: the bias, or zeros
                z = (z - b) * scale + b
        if self.multiply is not None:
            z = z * self.multiply
        if self.divide is not None:
            z = z / self.divide
        if self.softcap is not None:
            z = torch.tanh(z / self.softcap) * self.softcap
        return z.float()


def pad_vocab(logits: torch.Tensor, vocab: int) -> torch.Tensor:
    """Logits widened to the pair's vocabulary with -inf (a model with a narrower head never proposes those ids)."""
    if logits.shape[-1] == vocab:
        return logits
    pad = logits.new_full((*logits.shape[:-1], vocab - logits.shape[-1]), float("-inf"))
    return torch.cat([logits, pad], dim=-1)


# The radices of the mask seeds (position_seed): each larger than what it multiplies can reach within the settings'
# ranges (config.RANGES: a position < gamma <= 16, a round < max_new_tokens <= 2048). Primes by history; any larger
# would do.
POSITION_RADIX, ROUND_RADIX = 1_009, 1_000_003


def position_seed(seed: int, round_: int, pos: int) -> int:
    """The seed of the masks at one (round, position) of a run: the mixed-radix number (seed, round_, pos).

    Within config.RANGES it is collision-free: pos < POSITION_RADIX and round_ < ROUND_RADIX, so distinct
    (seed, round_, pos) give distinct seeds, and the largest, about 2.2e18 at seed 2**31 - 1, stays within the
    64 bits torch.Generator.manual_seed takes.
    """
    return (seed * ROUND_RADIX + round_) * POSITION_RADIX + pos


def position_generator(seed: int, round_: int, pos: int) -> torch.Generator:
    """A generator per (round, position): the masks there do not depend on which other positions ran paths, so a
    lazy run draws the same masks as an evidence run."""
    return torch.Generator().manual_seed(position_seed(seed, round_, pos))


def dropout_masks(positions: int, K: int, hidden: int, p_drop: float, generator: torch.Generator) -> torch.Tensor:
    """Bernoulli(1 - p_drop) keep-masks, fresh per position and path.  # [P, K, H] bool"""
    u = torch.rand(positions, K, hidden, generator=generator)
    return u >= p_drop


def inverted_scale(p_drop: float) -> float:
    """Inverted dropout's 1 / (1 - p_drop): the kept units' scale, so a path's expected logits are the unmasked ones."""
    return 1.0 / (1.0 - p_drop)


def path_logits(h: torch.Tensor, head: Head, masks: torch.Tensor, p_drop: float) -> torch.Tensor:
    """Dense form: one batched head product head(h * m / (1 - p_drop)) for all K paths.

    h: [P, H] final hidden states (after the final norm); head: the target's head (`TargetHead`, or a bias-free
    linear callable on [..., H]); masks: [P, K, H]. Returns float32 logits [P, K, V].

    h * m is exact in h's dtype (m is 0 or 1); the scale multiplies the head's product in float32 (`TargetHead`,
    or here for a linear head), never h in h's dtype, where it would be rounded (in bf16, 1 / 0.7 becomes 1.4297:
    every path's logits 0.08% too large) and every scaled unit rounded again.
    """
    dropped = h[:, None, :] * masks.to(h.device, h.dtype)  # [P, K, H]
    scale = inverted_scale(p_drop)
    if isinstance(head, TargetHead):
        return head(dropped, scale)  # [P, K, V]
    return head(dropped).float() * scale  # [P, K, V]


def sparse_complement_logits(
    z: torch.Tensor, h: torch.Tensor, weight_t: torch.Tensor, masks: torch.Tensor, p_drop: float
) -> torch.Tensor:
    """Sparse-complement form: (W h - W[:, D] h[D]) / (1 - p_drop), reading only the dropped columns D.

    z: [P, V] unmasked logits W h; weight_t: [H, V] (a contiguous transposed copy of W, so a dropped
    hidden unit is one row), on h's device; masks: [P, K, H], moved to h's device as `path_logits` moves them.
    Equal to `path_logits` up to float rounding; as there, the scale multiplies the product in float32.
    """
    P, K, H = masks.shape
    drop = ~masks.to(h.device).reshape(P * K, H)  # [P*K, H]
    rows, cols = drop.nonzero(as_tuple=True)  # which path, which hidden unit
    weights = h.repeat_interleave(K, dim=0)[rows, cols]
    offsets = torch.zeros(P * K, dtype=torch.long, device=drop.device)  # [P*K]: where each path's units start
    offsets[1:] = torch.cumsum(drop.sum(-1), 0)[:-1]
    removed = F.embedding_bag(cols, weight_t, offsets, mode="sum", per_sample_weights=weights)  # [P*K, V]
    out = z.float()[:, None, :] - removed.float().reshape(P, K, -1)
    return out * inverted_scale(p_drop)


def js_divergence(log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence in nats (in [0, ln 2]) over the last axis, from log-probabilities.

    Written as H(M) - (H(P) + H(Q)) / 2 with M = (P + Q) / 2: three passes over the vocabulary instead
    of two KL terms, and xlogy keeps 0 log 0 = 0 for tokens outside the support. Not its square root
    (scipy's `jensenshannon` returns the distance, the root of this).
    """
    p, q = log_p.exp(), log_q.exp()
    m = 0.5 * (p + q)
    xlogy = torch.special.xlogy
    return (0.5 * (xlogy(p, p).sum(-1) + xlogy(q, q).sum(-1)) - xlogy(m, m).sum(-1)).clamp_min(0.0)


# What a DropMatch criterion can read of the paths (PathStats' statistics): a rule that reads one needs the paths.
PATH_STATISTICS = ("tokens", "votes", "majority", "js_paths", "js_draft")


@dataclass(frozen=True)
class PathStats:
    """What every criterion reads: the K path distributions at P positions, the draft tokens and q.

    logits: [P, K, V] float32 path logits; draft: [P] draft token ids; q_logprobs: [P, V] draft model's
    log-distribution at the comparison temperature T (the run's, or 1 when greedy: config.sampling_temperature);
    generators: when sampling (T > 0), one per position, and each path's token is sampled from it with that
    position's generator (docs/algorithm.md, "Sampling"); empty when greedy, and each path's token is its argmax.
    """

    logits: torch.Tensor
    draft: torch.Tensor
    q_logprobs: torch.Tensor
    T: float = 1.0
    generators: tuple[torch.Generator, ...] = ()

    @property
    def K(self) -> int:
        return self.logits.shape[1]

    @cached_property
    def logprobs(self) -> torch.Tensor:
        return torch.log_softmax(self.logits / self.T, dim=-1)  # [P, K, V]

    @cached_property
    def centroid_logprobs(self) -> torch.Tensor:
        """The centroid is softmax of the MEAN LOGITS of the paths (paper Eq. 5), not a mean of probabilities."""
        return torch.log_softmax(self.logits.mean(1) / self.T, dim=-1)  # [P, V]

    @cached_property
    def tokens(self) -> torch.Tensor:
        """Each path's token: its top-1 when greedy, a sample from it at T > 0.  # [P, K]"""
        if not self.generators:
            return self.logits.argmax(-1)
        probs = self.logprobs.exp()  # each position's draws come from its own generator, on the CPU (a host read)
        drawn = [torch.multinomial(probs[i].to(g.device), 1, generator=g)[:, 0] for i, g in enumerate(self.generators)]
        return torch.stack(drawn).to(self.logits.device)

    @cached_property
    def js_paths(self) -> torch.Tensor:
        """JS(p_i || centroid) for each path.  # [P, K]"""
        return js_divergence(self.logprobs, self.centroid_logprobs[:, None, :])

    @cached_property
    def js_draft(self) -> torch.Tensor:
        """JS(q || centroid) with the draft model's full distribution q.  # [P]"""
        return js_divergence(self.q_logprobs, self.centroid_logprobs)

    @cached_property
    def counts(self) -> torch.Tensor:
        """How many paths voted for each path's token.  # [P, K]"""
        return (self.tokens[:, :, None] == self.tokens[:, None, :]).sum(-1)

    @cached_property
    def majority(self) -> torch.Tensor:
        """The plurality token per position, or -1 when the top vote count is tied between two tokens.  # [P]"""
        top = self.counts.max(-1)
        token = self.tokens.gather(-1, top.indices[:, None])  # [P, 1]: a token with the most votes
        tied = ((self.counts == top.values[:, None]) & (self.tokens != token)).any(-1)
        return torch.where(tied, torch.full_like(token[:, 0], -1), token[:, 0])


def votes(tokens: list[int]) -> dict[int, int]:
    """How many of the paths' tokens are each token, in order of first appearance."""
    counts: dict[int, int] = {}
    for tok in tokens:
        counts[tok] = counts.get(tok, 0) + 1
    return counts
