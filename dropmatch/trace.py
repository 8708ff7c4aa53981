"""The per-token trace: plain-Python records, the single source of every metric, table and figure.

docs/algorithm.md ("What a trace records") describes each field.

A `Trace` holds one `TokenRecord` per drafted position and per emitted correction / bonus / target
token, and one `RoundRecord` per target verification forward (timings and costs). It round-trips
through JSON unchanged.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path


@dataclass(frozen=True)
class TokenRecord:
    """One drafted position (kind `draft`) or one token the target emitted (`correction`, `bonus`, `target`).

    reason: `exact` (the lossless test accepts), `naive` / `js` / `majority` (a DropMatch criterion accepts
    what lossless rejects; in replace mode, whatever the criterion accepts), `fuzzy` / `typical` / `top-k` /
    `mars` (a relative's rule accepts it, likewise), `rejected`, `skipped` (drafted
    after the first rejection, so not part of the output; the target still scored it, and in evidence mode
    its paths were computed too, for display), `correction`, `bonus`, `target` (target-only decoding).
    emitted: the token is part of the output
    (an accepted draft can be cut by EOS or the length limit). Fields about paths are None where the
    paths were not computed (lazy decisions skip positions that exact match already accepts).
    """

    round: int
    pos: int  # 1-based position inside the round; a correction sits at a+1, a bonus at k+1
    kind: str
    token_id: int
    text: str
    emitted: bool
    reason: str
    accepted: bool | None = None  # drafts only: inside the accepted prefix
    lossless: bool | None = None  # drafts only: the lossless test's decision at this position
    q: float | None = None  # draft model's probability of the token
    p: float | None = None  # unmasked target's probability of the token
    p_argmax: float | None = None  # unmasked target's probability of its own top-1 (the cost of a relaxed accept)
    target_argmax: int | None = None
    target_rank: int | None = None  # 1 = the target's top-1
    path_tokens: list[int] | None = None  # each path's top-1 (sampled at T > 0)
    votes: list[list[int]] | None = None  # [[token_id, count], ...], most votes first
    majority: int | None = None  # plurality token, None on a tie
    js_draft: float | None = None  # JS(q || centroid), nats
    js_paths: list[float] | None = None  # JS(p_i || centroid), nats
    threshold: float | None = None  # max_i JS(p_i || centroid)
    verdicts: dict[str, bool] | None = None  # the run's rule's components; in evidence mode every rule's decision
    rule_stats: dict[str, float] | None = None  # the relatives' statistics here (dropmatch.evidence.RECORDED)
    path_p: list[float] | None = None  # probability of the token under each path
    path_rank: list[int] | None = None  # its rank under each path (1 = top-1)
    top: dict | None = None  # {"ids", "texts", "draft", "target", "centroid", "paths"} over the union of top-N


@dataclass(frozen=True)
class RoundRecord:
    """One target verification forward: what it cost."""

    round: int
    draft_forwards: int
    head_products: int  # LM-head products of the target: unmasked positions + K per position with paths
    path_positions: int  # positions whose K paths were computed
    t_draft: float  # seconds
    t_target: float
    t_paths: float
    t_criteria: float
    t_total: float


@dataclass
class Trace:
    config: dict
    target_id: str
    draft_id: str | None
    prompt: str
    n_prompt_tokens: int
    token_ids: list[int] = field(default_factory=list)  # generated ids only
    text: str = ""
    records: list[TokenRecord] = field(default_factory=list)
    rounds: list[RoundRecord] = field(default_factory=list)
    finish: str | None = None  # "eos", "length" or None while running

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Trace":
        known = {f.name for f in fields(cls)}
        missing = {"config", "target_id", "prompt", "records", "rounds"} - set(data)
        if missing:
            raise ValueError(f"not a DropMatch trace: missing {', '.join(sorted(missing))}")
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["records"] = [TokenRecord(**r) for r in data["records"]]
        kwargs["rounds"] = [RoundRecord(**r) for r in data["rounds"]]
        kwargs.setdefault("draft_id", None)
        kwargs.setdefault("n_prompt_tokens", 0)
        return cls(**kwargs)

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict(), ensure_ascii=False)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    @classmethod
    def from_json(cls, source: str | Path) -> "Trace":
        """Parse a JSON string, or read a file when given a path."""
        if isinstance(source, Path) or not str(source).lstrip().startswith("{"):
            source = Path(source).read_text(encoding="utf-8")
        try:
            data = json.loads(source)
        except json.JSONDecodeError as err:
            raise ValueError(f"not valid JSON: {err}") from None
        if not isinstance(data, dict):
            raise ValueError("not a DropMatch trace: expected a JSON object")
        return cls.from_dict(data)

    def round_records(self, t: int) -> list[TokenRecord]:
        return [r for r in self.records if r.round == t]
