"""What every acceptance rule reads at a round's drafted positions: drafts, q, the unmasked target, the paths.

`Evidence` holds the tensors of P drafted positions and computes each statistic a rule needs only when asked
(cached), so a rule pays for what it reads: DropMatch's rules read the K dropout paths (`heads.PathStats`);
the other rules (`dropmatch.rules`) read the statistics below. A round builds one (`decode.Decoder._round`):
the lossless test, the correction and the records read it, and `rows` cuts out the positions a rule checks.
Nothing here loads a model.

The statistics, per position, all from the unmasked target at the comparison temperature T (the run's, or 1
when greedy: config.sampling_temperature) and the draft model's full distribution q:
- `p_d`: p(d), the target's probability of the draft token; `rank`: its rank under the target (1 = top-1)
- `entropy`: H(p) in nats
- `js_pq`: JS(p || q) in nats (in [0, ln 2]); `kl_qp`: KL(q || p) in nats; `tv`: TV(p, q) = 1/2 |p - q|_1
- `margin`: z_2 / z_1, the ratio of the target's second-largest logit to its largest (MARS); NaN when
  z_1 <= 0, where the ratio says nothing
- `h3`: the entropy in nats of the target's three largest probabilities, as they are (not renormalised; FLy)
- `order`: d's place in the target's order with ties broken as argmax breaks them, by index (1 = the argmax)
- `q_d`: q(d); `p_max`: max p, the target's top-1 probability (EARS)
- `p1_d`, `p1_max`, `q1_max`: p1(d), max p1 and max q1 on the T = 1 softmaxes, whatever T (the speculative
  cascades' deferral tests); `v3_edge`: where TokenV3's acceptance of a draft outside its set A ends (T > 0);
  `ens_edge`: the largest weight w at which d is the static ensemble's argmax (T = 0)

and the round's own lossless test, which some rules read beside the statistics (FLy defers a rejection when the
positions after it pass it; EARS widens its threshold with the same uniform draw):
- `native`: the lossless test's verdict (exact match when greedy; u q(d) <= p(d), Leviathan's test, when sampling)
- `u`: the uniform draw of that test at each position (sampling only; None when greedy)
- `after`: how many positions right after each one the lossless test accepts in a row, within the round
- `gamma`: the run's draft length (0 where unknown)
Read by name (`ev["u"]`), each is a [P] tensor: `gamma` repeated, and `u` NaN when greedy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

import torch

from dropmatch.config import RECORDED_STATISTICS
from dropmatch.heads import PathStats, js_divergence
from dropmatch.host import index

# p(d), q(d), max p, the rank and the lossless verdict have their own record fields (p, q, p_argmax, target_rank,
# lossless)
STATISTICS = ("p_d", "q_d", "p_max", "rank", "native", *RECORDED_STATISTICS)


def kl_divergence(log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """KL(P || Q) in nats over the last axis, from log-probabilities; +inf where Q misses P's support."""
    p = log_p.exp()
    terms = torch.where(p > 0, p * (log_p - log_q), torch.zeros_like(p))
    return terms.sum(-1).clamp_min(0.0)


def shown(x: float | None) -> str:
    """A statistic as an explanation writes it: three significant digits, ∞, and — where it is missing or NaN."""
    if x is None or math.isnan(x):
        return "—"
    return "∞" if math.isinf(x) else f"{x:.3g}"


@dataclass(frozen=True)
class Evidence:
    """One round's drafted positions as every rule sees them.

    draft: [P] draft token ids; q_logprobs: [P, V] the draft's log-distribution at T; target_logits: the unmasked
    target logits z (float32), [P, V] at the drafted positions, or [P + 1, V] at a round's verify positions (the
    last one follows the last draft: the bonus token's); T: the comparison temperature, resolved (1 when greedy);
    paths: the K dropout paths at the drafted positions, where they were computed (DropMatch's rules need them);
    u: [P] the uniforms of the rejection test when sampling (None when greedy); gamma: the run's draft length
    (FLy's window follows it); native, after: the lossless test's verdicts and runs, computed here from the rest
    (`rows` passes them on, since `after` looks past the positions it keeps).
    """

    draft: torch.Tensor
    q_logprobs: torch.Tensor
    target_logits: torch.Tensor
    T: float = 1.0
    paths: PathStats | None = None
    u: torch.Tensor | None = None
    gamma: int = 0
    native: torch.Tensor | None = None
    after: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.native is None:  # the lossless test, once per round
            P = len(self.draft)
            native = self.draft == self.argmax[:P] if self.u is None else self.u * self.q_d <= self.p_d
            object.__setattr__(self, "native", native)  # [P] bool
        if self.after is None:  # after[j] = accepted in a row from j + 1 on; on the device, no host read
            after, run = torch.zeros_like(self.draft), torch.zeros_like(self.draft[:1])
            for j in reversed(range(len(self.draft))):
                after[j : j + 1] = run
                run = (run + 1) * self.native[j : j + 1]
            object.__setattr__(self, "after", after)  # [P]

    def __getitem__(self, name: str) -> torch.Tensor:
        """A statistic by name (one of STATISTICS), so a rule reads `ev["tv"]` from this or a plain dict."""
        if name not in STATISTICS:
            raise KeyError(f"unknown statistic {name!r}; expected one of {', '.join(STATISTICS)}")
        value = getattr(self, name)
        if not isinstance(value, torch.Tensor):  # the draft length, or u when greedy (no draw)
            value = torch.full((len(self.draft),), float("nan") if value is None else float(value), device=self.device)
        return value

    def rows(self, positions: list[int]) -> Evidence:
        """The evidence at some of the drafted positions (no paths: `with_paths` attaches those computed there)."""
        positions = index(positions)  # a slice where it can: no index copied to the device
        return Evidence(
            self.draft[positions],
            self.q_logprobs[positions],
            self.target_logits[positions],
            self.T,
            u=None if self.u is None else self.u[positions],
            gamma=self.gamma,
            native=self.native[positions],
            after=self.after[positions],
        )

    def with_paths(self, logits: torch.Tensor, generators: tuple[torch.Generator, ...] = ()) -> Evidence:
        """The same positions with their K dropout paths: logits [P, K, V]; generators as `heads.PathStats` takes
        them (one per position when sampling, none when greedy)."""
        paths = PathStats(logits=logits, draft=self.draft, q_logprobs=self.q_logprobs, T=self.T, generators=generators)
        return replace(self, paths=paths)

    @property
    def device(self) -> torch.device:
        return self.target_logits.device

    @cached_property
    def argmax(self) -> torch.Tensor:
        """The target's top-1 at every row of z (the lowest id among tied logits): exact match's token.  # [P or P+1]"""
        return self.target_logits.argmax(-1)

    @cached_property
    def p(self) -> torch.Tensor:
        """softmax(z / T) at every row of z: the lossless test, the correction, the bonus and the records read it."""
        return torch.softmax(self.target_logits / self.T, -1)  # [P or P + 1, V]

    @cached_property
    def q(self) -> torch.Tensor:
        return self.q_logprobs.exp()  # [P, V]

    def prob(self, rows: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """p of each token at its row (rows of z, tokens ids).  # [n]"""
        return self.p[rows, tokens]

    def rank_of(self, rows: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """The target rank of each token at its row: 1 + the number of strictly larger logits (ties share).  # [n]"""
        z = self.target_logits[rows]  # [n, V]
        return (z > z.gather(-1, tokens[:, None])).sum(-1) + 1

    @cached_property
    def p_logprobs(self) -> torch.Tensor:
        """log softmax(z / T) at the drafted positions: the divergences and H(p) are taken in the log domain."""
        return torch.log_softmax(self.target_logits[: len(self.draft)] / self.T, -1)  # [P, V]

    @cached_property
    def p_d(self) -> torch.Tensor:
        return self.prob(torch.arange(len(self.draft), device=self.device), self.draft)  # [P]

    @cached_property
    def q_d(self) -> torch.Tensor:
        return self.q.gather(-1, self.draft[:, None]).squeeze(-1)  # [P]

    @cached_property
    def rank(self) -> torch.Tensor:
        return self.rank_of(torch.arange(len(self.draft), device=self.device), self.draft)  # [P]

    @cached_property
    def entropy(self) -> torch.Tensor:
        p = self.p_logprobs.exp()
        return -torch.special.xlogy(p, p).sum(-1)  # [P]

    @cached_property
    def js_pq(self) -> torch.Tensor:
        return js_divergence(self.p_logprobs, self.q_logprobs)  # [P]

    @cached_property
    def kl_qp(self) -> torch.Tensor:
        return kl_divergence(self.q_logprobs, self.p_logprobs)  # [P]

    @cached_property
    def tv(self) -> torch.Tensor:
        return 0.5 * (self.p_logprobs.exp() - self.q).abs().sum(-1)  # [P]

    @cached_property
    def p_max(self) -> torch.Tensor:
        return self.p_logprobs.max(-1).values.exp()  # [P]

    @cached_property
    def p1(self) -> torch.Tensor:
        """The target's T = 1 softmax at the drafted positions: the speculative cascades' deferral tests read it."""
        return torch.softmax(self.target_logits[: len(self.draft)], -1)  # [P, V]

    @cached_property
    def p1_max(self) -> torch.Tensor:
        return self.p1.max(-1).values  # [P]

    @cached_property
    def p1_d(self) -> torch.Tensor:
        return self.p1.gather(-1, self.draft[:, None]).squeeze(-1)  # [P]

    @cached_property
    def q1_max(self) -> torch.Tensor:
        """max q1, the draft's top probability at T = 1 (q at T is softmax(z / T), so q1 = softmax(T log q))."""
        return torch.softmax(self.T * self.q_logprobs, -1).max(-1).values  # [P]

    @cached_property
    def v3_edge(self) -> torch.Tensor:
        """TokenV3 at T > 0 (`rules.own_distribution.token_v3`): with A = {v : p1(v) / max p1 >= 1 - alpha}, a draft
        outside A passes u q(d) <= (1 - q(A)) p(d) iff the lossless test passes and 1 - alpha > this edge: the
        largest ratio p1(v) / max p1 above d's at which the draft mass of the tokens at or above it already rejects
        d, or d's own ratio where none does. NaN when greedy (no draw)."""
        ratio = self.p1 / self.p1_max[:, None]  # [P, V]
        if self.u is None:
            return torch.full((len(self.draft),), float("nan"), device=self.device)
        levels, order = ratio.sort(dim=-1, descending=True, stable=True)
        mass = self.q.gather(-1, order).cumsum(-1)  # q of the tokens at or above each ratio
        fails = (self.u * self.q_d)[:, None] > (1 - mass) * self.p_d[:, None]  # [P, V]
        edge = levels.gather(-1, fails.to(torch.uint8).argmax(-1, keepdim=True)).squeeze(-1)  # the first failing one
        own = ratio.gather(-1, self.draft[:, None]).squeeze(-1)
        return torch.where(fails.any(-1) & (edge > own), edge, own)  # [P]

    @cached_property
    def ens_edge(self) -> torch.Tensor:
        """The static ensemble at T = 0 (dropmatch.rules.own_distribution.ensemble): the largest weight w at which d is
        argmax(w p1 + (1 - w) q1), ties broken by index as argmax breaks them; -1 where no w makes it so, 1 where
        every w in [0, 1] does. A token v beats d at w when w a > (1 - w) b, a = p1(v) - p1(d), b = q1(d) - q1(v)
        (at or from w = b / (a + b) for a + b > 0; >= for a lower index, which wins a tie). NaN when sampling.  # [P]"""
        if self.u is not None:
            return torch.full((len(self.draft),), float("nan"), device=self.device)
        p, q = self.p1, self.q
        a = p - self.p1_d[:, None]
        b = self.q_d[:, None] - q
        den = a + b
        ratio = b / torch.where(den > 0, den, torch.ones_like(den))
        lower = torch.arange(p.shape[-1], device=self.device)[None] < self.draft[:, None]  # wins a tie with d
        ratio = torch.where(lower, torch.nextafter(ratio, torch.full_like(ratio, -math.inf)), ratio)
        always = (den == 0) & torch.where(lower, b <= 0, b < 0)  # beats d at every w
        edge = torch.where(den > 0, ratio, torch.where(always, -math.inf, math.inf))
        return edge.min(-1).values.clamp(-1.0, 1.0)  # [P]

    @cached_property
    def h3(self) -> torch.Tensor:
        top = self.p_logprobs.topk(min(3, self.p_logprobs.shape[-1]), dim=-1).values  # [P, 3]
        return -torch.special.xlogy(top.exp(), top.exp()).sum(-1)  # [P]

    @cached_property
    def order(self) -> torch.Tensor:
        z = self.target_logits[: len(self.draft)]
        z_d = z.gather(-1, self.draft[:, None])
        ids = torch.arange(z.shape[-1], device=self.device)
        before = ids[None] < self.draft[:, None]  # lower ids win a tie, as in argmax
        return (z > z_d).sum(-1) + ((z == z_d) & before).sum(-1) + 1  # [P]

    @cached_property
    def margin(self) -> torch.Tensor:
        top = self.target_logits[: len(self.draft)].topk(2, dim=-1).values  # [P, 2]
        ratio = top[:, 1] / top[:, 0]
        return torch.where(top[:, 0] > 0, ratio, torch.full_like(ratio, float("nan")))  # [P]
