"""What every acceptance rule reads at a round's drafted positions: drafts, q, the unmasked target, the paths.

`Evidence` holds the tensors of P drafted positions and computes each statistic a rule needs only when asked
(cached), so a rule pays for what it reads: DropMatch's rules read the K dropout paths (`heads.PathStats`);
the relatives (`dropmatch.relatives`) read the statistics below. Nothing here loads a model.

The statistics, per position, all from the unmasked target at the comparison temperature (T, or 1 when
greedy) and the draft model's full distribution q:
- `p_d`: p(d), the target's probability of the draft token; `rank`: its rank under the target (1 = top-1)
- `entropy`: H(p) in nats
- `js_pq`: JS(p || q) in nats (in [0, ln 2]); `kl_qp`: KL(q || p) in nats; `tv`: TV(p, q) = 1/2 |p - q|_1
- `margin`: z_2 / z_1, the ratio of the target's second-largest logit to its largest (MARS); NaN when
  z_1 <= 0, where the ratio says nothing
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from dropmatch.config import RECORDED_STATISTICS, sampling_temperature
from dropmatch.heads import PathStats, js_divergence

STATISTICS = ("p_d", "rank", *RECORDED_STATISTICS)  # p(d) and the rank have their own record fields


def kl_divergence(log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """KL(P || Q) in nats over the last axis, from log-probabilities; +inf where Q misses P's support."""
    p = log_p.exp()
    terms = torch.where(p > 0, p * (log_p - log_q), torch.zeros_like(p))
    return terms.sum(-1).clamp_min(0.0)


@dataclass(frozen=True)
class Evidence:
    """One round's drafted positions as every rule sees them.

    draft: [P] draft token ids; q_logprobs: [P, V] the draft's log-distribution at the comparison temperature;
    target_logits: [P, V] the unmasked target logits z (float32); temperature: the run's T; paths: the K
    dropout paths at the same positions, where they were computed (DropMatch's rules need them).
    """

    draft: torch.Tensor
    q_logprobs: torch.Tensor
    target_logits: torch.Tensor
    temperature: float = 0.0
    paths: PathStats | None = None

    def __getitem__(self, name: str) -> torch.Tensor:
        """A statistic by name (one of STATISTICS), so a rule reads `ev["tv"]` from this or a plain dict."""
        if name not in STATISTICS:
            raise KeyError(f"unknown statistic {name!r}; expected one of {', '.join(STATISTICS)}")
        return getattr(self, name)

    def computed(self) -> tuple[str, ...]:
        """The statistics a rule has asked for so far (the cheap record of what was needed)."""
        return tuple(name for name in STATISTICS if name in vars(self))

    @cached_property
    def p_logprobs(self) -> torch.Tensor:
        return torch.log_softmax(self.target_logits / sampling_temperature(self.temperature), -1)  # [P, V]

    @cached_property
    def p_d(self) -> torch.Tensor:
        return self.p_logprobs.gather(-1, self.draft[:, None]).squeeze(-1).exp()  # [P]

    @cached_property
    def rank(self) -> torch.Tensor:
        z_d = self.target_logits.gather(-1, self.draft[:, None])  # [P, 1]
        return (self.target_logits > z_d).sum(-1) + 1  # [P]

    @cached_property
    def entropy(self) -> torch.Tensor:
        return -torch.special.xlogy(self.p_logprobs.exp(), self.p_logprobs.exp()).sum(-1)  # [P]

    @cached_property
    def js_pq(self) -> torch.Tensor:
        return js_divergence(self.p_logprobs, self.q_logprobs)  # [P]

    @cached_property
    def kl_qp(self) -> torch.Tensor:
        return kl_divergence(self.q_logprobs, self.p_logprobs)  # [P]

    @cached_property
    def tv(self) -> torch.Tensor:
        return 0.5 * (self.p_logprobs.exp() - self.q_logprobs.exp()).abs().sum(-1)  # [P]

    @cached_property
    def margin(self) -> torch.Tensor:
        top = self.target_logits.topk(2, dim=-1).values  # [P, 2]
        ratio = top[:, 1] / top[:, 0]
        return torch.where(top[:, 0] > 0, ratio, torch.full_like(ratio, float("nan")))  # [P]
