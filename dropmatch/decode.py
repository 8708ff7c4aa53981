"""The decoding loop: target-only, lossless and DropMatch speculative decoding, streamed round by round.

One round = the draft proposes k tokens, the target verifies them in ONE forward, the accepted prefix and
one correction or bonus token are emitted, and both KV caches are cut back to the accepted length.
`stream` yields the growing `Trace` after every round; `generate` runs it to the end.
"""

from __future__ import annotations

import time
from typing import Iterator

import torch
from transformers import DynamicCache

from dropmatch.config import DecodeConfig
from dropmatch.criteria import (
    CRITERIA,
    accepted_length,
    lossless_greedy,
    lossless_sampling,
    residual_sample,
)
from dropmatch.evidence import position_evidence, top_union
from dropmatch.heads import PathStats, dropout_masks, path_logits
from dropmatch.models import ModelPair, encode_prompt
from dropmatch.trace import RoundRecord, TokenRecord, Trace


class _Stage:
    """A causal LM split at the LM head, with its own KV cache: the body gives final hidden states."""

    def __init__(self, model: torch.nn.Module, vocab: int):
        self.body = model.get_decoder()
        self.head = model.get_output_embeddings()
        self.cache = DynamicCache(config=model.config)
        self.vocab = vocab
        self.device = self.head.weight.device

    @property
    def length(self) -> int:
        return self.cache.get_seq_length()

    @torch.inference_mode()
    def hidden(self, ids: list[int]) -> torch.Tensor:
        """Feed new tokens through the body, extending the cache.  # [n, H]"""
        x = torch.tensor([ids], device=self.device)
        return self.body(input_ids=x, past_key_values=self.cache, use_cache=True).last_hidden_state[0]

    @torch.inference_mode()
    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """Unmasked head in float32, padded to the pair's vocabulary with -inf.  # [n, V]"""
        return pad_vocab(self.head(h).float(), self.vocab)

    def cut(self, keep: int) -> None:
        """Drop cached positions past `keep` (transformers 5: a negative crop removes that many)."""
        extra = self.length - keep
        if extra > 0:
            self.cache.crop(-extra)


def pad_vocab(logits: torch.Tensor, vocab: int) -> torch.Tensor:
    if logits.shape[-1] == vocab:
        return logits
    pad = logits.new_full((*logits.shape[:-1], vocab - logits.shape[-1]), float("-inf"))
    return torch.cat([logits, pad], dim=-1)


def position_generator(seed: int, round_: int, pos: int) -> torch.Generator:
    """A generator per (round, position): the masks there do not depend on which other positions ran paths."""
    return torch.Generator().manual_seed((seed * 1_000_003 + round_) * 1_009 + pos)


def _sync(device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


class Decoder:
    """Runs one prompt under one config; `rounds()` yields the trace after each verification round."""

    def __init__(self, pair: ModelPair, config: DecodeConfig, prompt_ids: list[int], prompt: str = ""):
        self.pair, self.cfg = pair, config
        V = pair.vocab_size
        self.target = _Stage(pair.target, V)
        self.draft = _Stage(pair.draft, V) if config.method != "target" else None
        self.ids = list(prompt_ids)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.trace = Trace(
            config=config.to_dict(),
            target_id=pair.target_id,
            draft_id=pair.draft_id if self.draft else None,
            prompt=prompt,
            n_prompt_tokens=len(prompt_ids),
        )

    # ---- sampling helpers -------------------------------------------------------------------
    @property
    def _t(self) -> float:
        """Temperature for distributions: greedy decoding still compares T = 1 distributions."""
        return self.cfg.temperature if self.cfg.temperature > 0 else 1.0

    def _pick(self, logits: torch.Tensor) -> int:
        if self.cfg.temperature <= 0:
            return int(logits.argmax())
        probs = torch.softmax(logits.cpu() / self.cfg.temperature, -1)
        return int(torch.multinomial(probs, 1, generator=self.generator))

    # ---- one round ----------------------------------------------------------------------------
    def _draft(self, k: int) -> tuple[list[int], torch.Tensor]:
        """1. The draft proposes k tokens autoregressively and keeps its full log-distributions q."""
        tokens, q_logp = [], []
        if k == 0:
            return tokens, torch.empty(0)
        feed = self.ids[self.draft.length :]
        for _ in range(k):
            logits = self.draft.logits(self.draft.hidden(feed)[-1:])[0]
            q_logp.append(torch.log_softmax(logits / self._t, -1))
            tokens.append(self._pick(logits))
            feed = [tokens[-1]]
        return tokens, torch.stack(q_logp).cpu()  # [k, V]

    def _paths(self, round_: int, positions: list[int], h: torch.Tensor, d: torch.Tensor, q_logp: torch.Tensor) -> PathStats:
        """K dropout paths at the given positions: one batched LM-head product.  logits: [P, K, V]"""
        cfg = self.cfg
        gens = [position_generator(cfg.seed, round_, j) for j in positions]
        masks = torch.stack([dropout_masks(1, cfg.K, h.shape[-1], cfg.p_drop, g)[0] for g in gens])
        with torch.inference_mode():
            logits = path_logits(h[positions], self.target.head.weight, masks.to(h.device), cfg.p_drop)
        return PathStats(
            logits=pad_vocab(logits, self.target.vocab).cpu(),
            draft=d[positions],
            q_logprobs=q_logp[positions],
            temperature=cfg.temperature,
            generators=tuple(gens),
        )

    def _decide(self, round_: int, d, h, q_logp, lossless) -> tuple[list[bool], dict[int, tuple[PathStats, int, dict]], float, float]:
        """3-4. Per-position decisions: lossless alone, or OR / replace with the DropMatch criterion.

        Returns accepts, {position: (stats, row, components)}, seconds in path products, seconds in criteria.
        Lazy (the default) computes paths only where the decision needs them; `evidence` computes all.
        """
        cfg, k = self.cfg, len(d)
        accepts = [bool(x) for x in lossless.tolist()]
        found: dict[int, tuple[PathStats, int, dict]] = {}
        t_paths = t_crit = 0.0
        if cfg.method != "dropmatch" or k == 0:
            return accepts, found, t_paths, t_crit
        criterion = CRITERIA[cfg.criterion]
        if cfg.evidence:  # every position in one batched product
            groups = [list(range(k))]
        else:  # one position at a time, in order, skipping what exact match already accepts (OR mode)
            groups = [[j] for j in range(k) if not (cfg.mode == "or" and accepts[j])]
        for positions in groups:
            t0 = _sync(self.target.device)
            stats = self._paths(round_, positions, h, d, q_logp)
            t1 = _sync(self.target.device)
            verdict = criterion(stats)
            hits = verdict.accept.tolist()
            t_paths, t_crit = t_paths + t1 - t0, t_crit + time.perf_counter() - t1
            for row, j in enumerate(positions):
                comps = {name: bool(v[row]) for name, v in verdict.components.items()}
                found[j] = (stats, row, comps)
                accepts[j] = (accepts[j] or hits[row]) if cfg.mode == "or" else hits[row]
            if not cfg.evidence and not accepts[positions[0]]:
                break  # the accepted prefix ends here: later positions cannot matter
        return accepts, found, t_paths, t_crit

    def _round(self) -> None:
        cfg, t_idx = self.cfg, len(self.trace.rounds)
        start = _sync(self.target.device)
        remaining = cfg.max_new_tokens - len(self.trace.token_ids)
        k = 0 if self.draft is None else min(cfg.gamma, remaining - 1)
        drafts, q_logp = self._draft(k)
        t_draft = _sync(self.target.device) - start

        # 2. One target forward over [unverified tail, d_1..d_k]: hidden states at the k+1 verify positions.
        t0 = time.perf_counter()
        h = self.target.hidden(self.ids[self.target.length :] + drafts)[-(k + 1) :]  # [k+1, H]
        z = self.target.logits(h).cpu()  # [k+1, V]
        t_target = _sync(self.target.device) - t0

        # 3. The lossless test at every draft position.
        d = torch.tensor(drafts, dtype=torch.long)
        p = torch.softmax(z / self._t, -1)  # [k+1, V]
        q = q_logp.exp()  # [k, V]
        if k == 0:
            lossless = torch.zeros(0, dtype=torch.bool)
        elif cfg.temperature <= 0:
            lossless = lossless_greedy(d, z[:k])
        else:
            lossless = lossless_sampling(d, p[:k], q, self.generator)

        # 4. DropMatch: K dropout paths where needed, the criterion, OR / replace.
        accepts, found, t_paths, t_crit = self._decide(t_idx, d, h, q_logp, lossless)
        a = accepted_length(torch.tensor(accepts, dtype=torch.bool)) if k else 0

        # 5. Correction (first rejected position) or bonus (all accepted) from the unmasked head.
        if a < k:
            extra = int(z[a].argmax()) if cfg.temperature <= 0 else residual_sample(p[a], q[a], self.generator)
            extra_kind = "correction"
        else:
            extra = self._pick(z[k])
            extra_kind = "bonus" if self.draft is not None else "target"

        # 6. Cut at EOS or the length limit, record, and cut both caches back.
        emitted = []
        for tok in drafts[:a] + [extra]:
            if len(self.trace.token_ids) + len(emitted) >= cfg.max_new_tokens:
                break
            emitted.append(tok)
            if tok in self.pair.eos_ids:
                break
        self._record(t_idx, drafts, a, extra, extra_kind, emitted, lossless, found, z, p, q)
        self.ids += emitted
        self.target.cut(len(self.ids) - 1)
        if self.draft is not None:
            self.draft.cut(len(self.ids) - 1)
        n_paths = len(found)
        self.trace.rounds.append(
            RoundRecord(
                round=t_idx,
                draft_forwards=k,
                head_products=(k + 1) + cfg.K * n_paths,
                path_positions=n_paths,
                t_draft=t_draft,
                t_target=t_target,
                t_paths=t_paths,
                t_criteria=t_crit,
                t_total=_sync(self.target.device) - start,
            )
        )
        if emitted and emitted[-1] in self.pair.eos_ids:
            self.trace.finish = "eos"
        elif len(self.trace.token_ids) >= cfg.max_new_tokens:
            self.trace.finish = "length"

    def _record(self, t_idx, drafts, a, extra, extra_kind, emitted, lossless, found, z, p, q) -> None:
        tok = self.pair.tokenizer
        n_before = len(self.trace.token_ids)
        self.trace.token_ids.extend(emitted)
        pieces = _pieces(tok, self.trace.token_ids, n_before)  # one per emitted token
        for j, token in enumerate(drafts + [extra]):
            kind = "draft" if j < len(drafts) else extra_kind
            if kind != "draft":
                reason, accepted = kind, None
            elif j < a:  # first reason that fires: exact, then the criterion's components in order
                comps = found[j][2] if j in found else {}
                reason, accepted = ("exact" if lossless[j] else next(c for c, v in comps.items() if v)), True
            else:
                reason, accepted = ("rejected" if j == a else "skipped"), False
            row = j if kind == "draft" else a  # the verify position, and the index among emitted tokens
            is_emitted = (kind != "draft" or j < a) and row < len(emitted)
            rec = TokenRecord(
                round=t_idx,
                pos=j + 1 if kind == "draft" else a + 1,
                kind=kind,
                token_id=token,
                text=pieces[row] if is_emitted else tok.decode([token]),
                emitted=is_emitted,
                reason=reason,
                accepted=accepted,
                lossless=bool(lossless[j]) if kind == "draft" else None,
                q=float(q[row, token]) if row < len(drafts) else None,
                p=float(p[row, token]),
                target_argmax=int(z[row].argmax()),
                target_rank=int((z[row] > z[row, token]).sum()) + 1,
            )
            if kind == "draft" and j in found:
                stats, i, comps = found[j]
                position_evidence(rec, stats, i, comps, full=self.cfg.evidence)
                if self.cfg.evidence:
                    rec.top = top_union(tok, self.cfg.top_n, token, q[j], p[j], stats, i)
            self.trace.records.append(rec)

    def rounds(self) -> Iterator[Trace]:
        while self.trace.finish is None:
            self._round()
            self.trace.text = self.pair.tokenizer.decode(self.trace.token_ids, skip_special_tokens=True)
            yield self.trace


def _pieces(tokenizer, ids: list[int], start: int) -> list[str]:
    """Text of each token from `start` on, by incremental decoding (a multi-byte character lands on the
    token that completes it). Decodes a short window, so the cost does not grow with the output."""
    base = max(0, start - 6)

    def text(n: int) -> str:
        return tokenizer.decode(ids[base:n], skip_special_tokens=False).rstrip("\ufffd")

    out, prev = [], text(start)
    for n in range(start + 1, len(ids) + 1):
        cur = text(n)
        out.append(cur[len(prev) :] if cur.startswith(prev) else cur)
        prev = cur
    return out


def stream(pair: ModelPair, prompt: str, config: DecodeConfig, chat: bool = False) -> Iterator[Trace]:
    """Yield the trace after every round (the same object, growing); `trace.finish` is set at the end."""
    ids = encode_prompt(pair.tokenizer, prompt, chat)
    return Decoder(pair, config, ids, prompt).rounds()


def generate(pair: ModelPair, prompt: str, config: DecodeConfig, chat: bool = False) -> Trace:
    trace = None
    for trace in stream(pair, prompt, config, chat):
        pass
    return trace
