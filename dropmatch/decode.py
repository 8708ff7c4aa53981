"""The decoding loop: target-only, lossless and DropMatch speculative decoding, streamed round by round.

One round = the draft proposes k tokens, the target verifies them in ONE forward, the accepted prefix and
one correction or bonus token are emitted, and both KV caches are cut back to the accepted length
(`Decoder._round` reads as these steps). `stream` yields the growing `Trace` after every round;
`generate` runs it to the end.
"""

from __future__ import annotations

import functools
import platform
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from dropmatch import llamacpp
from dropmatch.config import RELAXED_METHODS, TARGET_ONLY_METHODS, DecodeConfig, sampling_temperature
from dropmatch.criteria import RULES, accepted_length, residual_sample
from dropmatch.evidence import Evidence
from dropmatch.heads import TargetHead, dropout_masks, pad_vocab, path_logits, position_generator
from dropmatch.host import fetch, index, to_device
from dropmatch.models import ModelPair, encode_prompt
from dropmatch.records import Checked, RoundOutcome, record_values, records_from
from dropmatch.token_kinds import gate_open
from dropmatch.trace import RoundRecord, Trace
from dropmatch.truncation import truncate


class _Stage:
    """A causal LM split at the LM head, with its own KV cache: the body gives final hidden states."""

    def __init__(self, model: torch.nn.Module, vocab: int):
        self.body = model.get_decoder()
        self.head = TargetHead.of(model)
        self.cache = DynamicCache(config=model.config)
        self.cache.activate_past_recording()  # sliding-window layers keep what a cut may need to restore
        self.vocab = vocab
        where = model.get_input_embeddings().weight.device  # "meta" when offloaded: accelerate moves inputs
        self.device = where if where.type != "meta" else torch.device("cpu")

    @property
    def length(self) -> int:
        return self.cache.get_seq_length()

    @torch.inference_mode()
    def hidden(self, ids: list[int] | torch.Tensor) -> torch.Tensor:
        """Feed new tokens (ids, or a tensor of them, which stays on the device) through the body, extending the
        cache.  # [n, H]"""
        x = ids.to(self.device)[None] if isinstance(ids, torch.Tensor) else torch.tensor([ids], device=self.device)
        return self.body(input_ids=x, past_key_values=self.cache, use_cache=True).last_hidden_state[0]

    @torch.inference_mode()
    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """The model's own head in float32, padded to the pair's vocabulary with -inf.  # [n, V]"""
        return pad_vocab(self.head(h), self.vocab)

    def next_logits(self, ids: list[int] | torch.Tensor) -> torch.Tensor:
        """Feed new tokens; the logits after the last of them.  # [V]"""
        return self.logits(self.hidden(ids)[-1:])[0]

    def cut(self, keep: int) -> None:
        """Drop cached positions past `keep` (transformers 5: a negative crop removes that many). Nothing to drop
        calls nothing: crop(0) emptied the cache in transformers before 5.x (PR #47720)."""
        if self.length > keep:
            self.cache.crop(keep - self.length)


def stages(pair: ModelPair, drafting: bool) -> tuple:
    """The target's and the draft's stage (None when not drafting), each with a fresh cache, on the pair's engine:
    torch runs both models; llama.cpp runs both bodies and the draft's head on the GGUF files, and the target's
    head in torch."""
    if pair.engine == llamacpp.ENGINE:
        target_gguf, draft_gguf = pair.gguf
        target = llamacpp.Stage(target_gguf, pair.vocab_size, head=TargetHead.of(pair.target))
        return target, llamacpp.Stage(draft_gguf, pair.vocab_size) if drafting else None
    return _Stage(pair.target, pair.vocab_size), _Stage(pair.draft, pair.vocab_size) if drafting else None


def environment(pair: ModelPair) -> dict:
    """Where a trace was decoded: the same run elsewhere can part at a near-tie (bf16 rounds differently by CPU, and
    on one CPU by the number of threads a product's sums are split over)."""
    return {
        "engine": pair.engine,
        "device": str(pair.device),
        "dtype": str(pair.target.dtype).removeprefix("torch."),
        **({"target_quant": pair.target_quant} if pair.target_quant != "none" else {}),  # a 4-bit target's body
        "torch": torch.__version__,
        "machine": platform.machine(),
        "cpu": cpu_name(),
        **(cpu_environment() if pair.device.type == "cpu" else {}),
    }


def cpu_environment() -> dict[str, str]:
    """What decides a CPU decode's rounding beside the CPU's name: its model (under a hypervisor one generic name
    covers several generations), whether it multiplies bf16 natively (another path, other roundings) and the threads
    a product's sums are split over."""
    return {
        "cpu_model": cpu_model(),
        "cpu_bf16": "native" if cpu_bf16() else "emulated",
        "threads": str(torch.get_num_threads()),
    }


@functools.cache  # the CPU does not change under a process; a page open asks for its name, model and flags
def _cpuinfo() -> tuple[str, ...]:
    try:
        return tuple(Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines())
    except OSError:
        return ()


def cpu_name() -> str:
    """The CPU's model name (bf16 rounds differently, and runs at a different speed, from one CPU to another)."""
    name = next((ln.split(":", 1)[1].strip() for ln in _cpuinfo() if ln.startswith("model name")), None)
    return name or platform.processor() or "unknown"


def cpu_model() -> str:
    """The CPU's vendor, family, model and stepping ("GenuineIntel 6/207/2"): what tells CPUs apart where their name
    does not (a virtual machine's "Intel(R) Xeon(R) Processor" names several generations); "unknown" where the system
    does not say."""
    info: dict[str, str] = {}
    for key, _, value in (ln.partition(":") for ln in _cpuinfo()):
        info.setdefault(key.strip(), value.strip())  # the first CPU's
    fields = [info.get(k) for k in ("cpu family", "model", "stepping")]
    return f"{info.get('vendor_id', '?')} {'/'.join(fields)}" if all(fields) else "unknown"


def cpu_bf16() -> bool:
    """Whether the CPU multiplies bf16 natively (AVX512-BF16 or AMX-BF16); elsewhere torch emulates it, ~5x slower."""
    flags = next((ln.split(":", 1)[1].split() for ln in _cpuinfo() if ln.startswith("flags")), [])
    return bool({"avx512_bf16", "amx_bf16"} & set(flags))


class Timer:
    """Seconds per named step of a round, summed. On the CPU a step's wall clock; on CUDA the device's own clock
    between events recorded at the step's ends (no host sync), read after the round's last read of the device."""

    STEPS = ("draft", "target", "paths", "criteria")

    def __init__(self, device: torch.device):
        self.device, self.seconds = device, dict.fromkeys((*self.STEPS, "total"), 0.0)
        self._events: list[tuple[str, torch.cuda.Event, torch.cuda.Event]] = []

    @contextmanager
    def __call__(self, step: str):
        on_device = self.device.type == "cuda" and step != "total"  # the round's total is the host's wall clock
        if on_device:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        begun = time.perf_counter()
        try:
            yield
        finally:
            if on_device:
                end.record()
                self._events.append((step, start, end))
            else:
                self.seconds[step] += time.perf_counter() - begun

    def read(self) -> dict[str, float]:
        """The seconds per step; call after the round has read the device (its events have then completed)."""
        for step, start, end in self._events:
            self.seconds[step] += start.elapsed_time(end) / 1000
        self._events.clear()
        return self.seconds


class Read(NamedTuple):
    """A round's decisions as the host reads them: the drafts, the lossless verdicts, the decisions, the target's
    argmax at every verify position, the positions checked ({position: Checked}), and where the span gate kept the
    rule out (one flag per draft; empty without the gate)."""

    draft: list[int]
    lossless: list[bool]
    accepts: list[bool]
    argmax: list[int]
    checked: dict
    closed: tuple[bool, ...] = ()


class Decoder:
    """Runs one prompt under one config; `rounds()` yields the trace after each verification round.

    The context is the prompt (`prompt_ids`) followed by the emitted tokens, which live in `trace.token_ids`.
    """

    def __init__(
        self, pair: ModelPair, config: DecodeConfig, prompt_ids: list[int], prompt: str = "", chat: bool = False
    ):
        drafting = config.method not in TARGET_ONLY_METHODS
        for option in ("draft_quant", "draft_vocab"):
            asked, held = getattr(config, option), getattr(pair, option)
            if drafting and asked is not None and asked != held:
                raise ValueError(
                    f"the config asks for {option} {asked}, but the pair's draft has {held}; load "
                    f"the pair with {option}={asked!r}"
                )
        config = replace(
            config,
            draft_quant=pair.draft_quant if drafting else None,
            draft_vocab=pair.draft_vocab if drafting else None,
        )  # the lean draft, as it ran
        self.pair, self.cfg = pair, config
        self.target, self.draft = stages(pair, drafting)
        self.rule = RULES[config.criterion] if config.method in RELAXED_METHODS else None
        self.at_once = self.target.device.type != "cpu"  # a GPU checks every drafted position in one head product
        self.prompt_ids = list(prompt_ids)
        self.T = sampling_temperature(config.temperature)  # distributions are compared at T (1 when greedy)
        self.generator = torch.Generator().manual_seed(config.seed)
        self._tail = torch.empty(0, dtype=torch.long)  # the last round's output on the device (`_feed`)
        self.trace = Trace(
            config=config.to_dict(),
            target_id=pair.target_id,
            draft_id=pair.draft_id if drafting else None,
            prompt=prompt,
            n_prompt_tokens=len(prompt_ids),
            chat=chat,
            environment=environment(pair),
        )

    @property
    def context_length(self) -> int:
        """The prompt and the tokens emitted so far."""
        return len(self.prompt_ids) + len(self.trace.token_ids)

    @property
    def room(self) -> int:
        """How many tokens the run may still emit."""
        return self.cfg.max_new_tokens - len(self.trace.token_ids)

    def _unseen(self, stage: _Stage) -> list[int]:
        """The context's tokens past a stage's cache: what it has not read yet."""
        n, seen = len(self.prompt_ids), stage.length
        return self.prompt_ids[seen:] + self.trace.token_ids[max(0, seen - n) :]

    def _pick(self, logits: torch.Tensor) -> torch.Tensor:
        """The next token from logits, left on their device: argmax when greedy, else a seeded sample at the
        temperature, drawn on the CPU with the run's generator (a host read; a seed then replays the same run on any
        device).  # []"""
        if self.cfg.temperature <= 0:
            return logits.argmax()
        probs = torch.softmax(logits.cpu() / self.T, -1)
        return torch.multinomial(probs, 1, generator=self.generator)[0].to(logits.device)

    def _feed(self, stage) -> torch.Tensor:
        """The context's tokens a stage has not read yet, as a tensor on the target's device: after the first round
        the end of the last round's output, a view of the tensor it was emitted in (no host-to-device copy); the
        prompt at first.  # [n]"""
        unseen = self.context_length - stage.length
        if 0 < unseen <= len(self._tail):
            return self._tail[len(self._tail) - unseen :]
        return torch.tensor(self._unseen(stage), dtype=torch.long, device=self.target.device)

    def _propose(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One draft step from the draft's logits [V]: the draft token (picked as `_pick` picks) and the draft's
        log-distribution at the round's temperature, both on the target's device.  # [], [V]"""
        device = self.target.device
        return self._pick(logits).to(device), torch.log_softmax(logits / self.T, -1).to(device)

    def _paths(self, round_: int, positions: list[int], h: torch.Tensor) -> tuple[torch.Tensor, tuple]:
        """K dropout paths at the given positions, one batched head product on the target's device: their logits
        [P, K, V], and the positions' generators where path tokens are sampled (T > 0). The masks are drawn on the
        CPU, one generator per (round, position), so every device and every mode draws the same ones."""
        cfg = self.cfg
        gens = [position_generator(cfg.seed, round_, j) for j in positions]
        masks = torch.stack([dropout_masks(1, cfg.K, h.shape[-1], cfg.p_drop, g)[0] for g in gens])  # [P, K, H]
        masks = to_device(masks, h.device, h.dtype)  # queued, not waited for
        with torch.inference_mode():
            logits = path_logits(h[index(positions)], self.target.head, masks, cfg.p_drop)
        return pad_vocab(logits, self.target.vocab), tuple(gens) if cfg.temperature > 0 else ()

    def _paths_are_the_head(self) -> bool:
        """Greedy, OR mode, p_drop 0: every path is the unmasked head, whose top-1 is the exact test's argmax,
        so no DropMatch rule can accept a token exact match rejects (JS needs q = p, which makes d the argmax;
        every vote and every path's top-1 is the argmax): p_drop 0 costs nothing over lossless."""
        cfg = self.cfg
        return cfg.method == "dropmatch" and cfg.p_drop == 0 and cfg.temperature == 0 and cfg.mode == "or"

    def _check(self, round_: int, ev: Evidence, h: torch.Tensor, positions: list[int], timer: Timer):
        """The evidence at some drafted positions (with the K paths for a rule that reads them, or in evidence mode),
        and the rule's verdict there (None for a lossless run)."""
        rule, part = self.rule, ev.rows(positions)
        if rule is not None and (rule.needs_paths or self.cfg.evidence):
            with timer("paths"):
                part = part.with_paths(*self._paths(round_, positions, h))
        if rule is None:
            return part, None
        with timer("criteria"):
            return part, rule(part, self.cfg.knob)

    def _relax(self, round_: int, ev: Evidence, h, timer: Timer) -> Generator[Any, Any, Read]:
        """Per-position decisions with the rule (joined with the lossless test as the rule joins it: `Rule.join`), read
        on the host with the drafts, the lossless verdicts and the target's argmax at every verify position; and what
        each checked position showed ({position: Checked}).

        Lazy (the default) checks only the positions the decision needs, in order, until the accepted prefix ends,
        and computes the K paths only for a rule that reads them. On the CPU it checks them one at a time and stops
        at the first rejection; on a GPU (`at_once`) it checks every drafted position in one head product and reads
        the decisions in one copy, then keeps the records of the positions a one-at-a-time run checks: the same
        decisions and records, at one host sync. A rule that the lossless test backs (OR mode) is checked only where
        that test rejects. `evidence` checks every drafted position at once, paths included for a relaxed method, so
        the inspector can show every rule; a lossless run gets the relatives' statistics there too. Same decisions
        either way.

        A generator: each read of the device is yielded (the tensors to read) and answered with their values
        (`run_round` reads every sequence's together, in one copy).
        """
        cfg, rule, k = self.cfg, self.rule, len(ev.draft)
        plain = k == 0 or (rule is None and not cfg.evidence)
        if plain or (rule is not None and rule.needs_paths and not cfg.evidence and self._paths_are_the_head()):
            seen = yield {"draft": ev.draft, "native": ev.native, "argmax": ev.argmax}  # a rule adds nothing
            closed = self._closed(seen["draft"])
            return Read(seen["draft"], seen["native"], list(seen["native"]), seen["argmax"], {}, closed)
        backed = rule is None or not rule.alone(cfg.mode)  # the lossless test accepts on its own
        at_once = cfg.evidence or self.at_once
        if at_once:
            part, verdict = self._check(round_, ev, h, list(range(k)), timer)
            hits, parts = (None, {}) if verdict is None else (verdict.accept, verdict.components)
            seen = yield {"draft": ev.draft, "native": ev.native, "argmax": ev.argmax, "hits": hits, "parts": parts}
        else:
            seen = yield {"draft": ev.draft, "native": ev.native, "argmax": ev.argmax}
        lossless, closed = seen["native"], self._closed(seen["draft"])
        accepts, found = list(lossless), {}
        for j in range(k):
            if closed and closed[j]:  # the span gate keeps the rule out: the lossless test decides alone
                if cfg.evidence:
                    found[j] = Checked(evidence=part, row=j, components={})
                elif not lossless[j]:
                    break
                continue
            if backed and lossless[j] and not cfg.evidence:
                continue  # the lossless test accepts it: nothing to check
            if at_once:
                row, hit = j, None if rule is None else seen["hits"][j]
                components = {name: v[j] for name, v in seen["parts"].items()}
            else:
                part, verdict = self._check(round_, ev, h, [j], timer)
                row, (hit, components) = (
                    0,
                    (yield (verdict.accept[0], {n: v[0] for n, v in verdict.components.items()})),
                )
            found[j] = Checked(evidence=part, row=row, components=components)
            if rule is not None:
                accepts[j] = rule.join(lossless[j], hit, cfg.mode)
            if not cfg.evidence and not accepts[j]:
                break  # the accepted prefix ends here: later positions cannot matter (and go unrecorded)
        return Read(seen["draft"], lossless, accepts, seen["argmax"], found, closed)

    def _closed(self, drafts: list[int]) -> tuple[bool, ...]:
        """Where the span gate keeps the rule out, one flag per draft (`token_kinds.gate_open` on the text so far and
        each draft's own text); empty without the gate. A plain prompt is read as Python, a chat turn as prose."""
        if not self.cfg.span_gate:
            return ()
        ids = self.trace.token_ids
        pieces = token_pieces(self.pair.tokenizer, ids + drafts, len(ids))
        prefix, code, closed = self.trace.prompt + self.trace.text, not self.trace.chat, []
        for piece in pieces:
            closed.append(not gate_open(prefix, piece, code))
            prefix += piece
        return tuple(closed)

    def _extra(self, ev: Evidence, a: int, argmax: list[int], closed: tuple[bool, ...] = ()) -> tuple[int, str]:
        """The token after the accepted prefix, from the unmasked head: the correction at the first rejected
        position (the residual max(p - q, 0) when sampling, max(pi - q, 0) for a rule with its own pi; greedy, the
        target's argmax there, already read, or the rule's own pick), or the bonus token after k accepted drafts.
        Where the span gate kept the rule out, the correction is the lossless test's."""
        greedy, k, knob = self.cfg.temperature <= 0, len(ev.draft), self.cfg.knob
        rule = None if closed and a < k and closed[a] else self.rule
        if a < k:
            if greedy:
                own = rule is not None and rule.greedy_pick is not None
                return (int(rule.greedy_pick(ev.rows([a]), knob)[0]) if own else argmax[a]), "correction"
            own = rule is not None and rule.pi is not None
            target = rule.pi(ev.rows([a]), knob)[0] if own else ev.p[a]
            return residual_sample(target, ev.q[a], self.generator), "correction"
        tok = argmax[k] if greedy else self._sample_target(ev.p[k])
        return tok, "bonus" if self.draft is not None else "target"

    def _sample_target(self, p: torch.Tensor) -> int:
        """A seeded draw from the target's p_T: as it is, or truncated and renormalised (method `truncation`); drawn
        on the CPU with the run's generator, as every draw is."""
        if self.cfg.method == "truncation":
            p = truncate(p, self.cfg.criterion, self.cfg.knob)
        return int(torch.multinomial(p.to(self.generator.device), 1, generator=self.generator))

    def _emit(self, tokens: list[int]) -> tuple[list[int], str | None]:
        """The round's tokens up to and including an end token, within the room left; and how the run finishes
        with them: "eos", "length", or None while it goes on."""
        out = tokens[: max(0, self.room)]
        for i, tok in enumerate(out):
            if tok in self.pair.eos_ids:
                return out[: i + 1], "eos"
        return out, "length" if len(out) >= self.room else None

    def _round(self) -> None:
        run_round([self])

    def _k(self) -> int:
        """How many tokens the draft proposes this round: gamma, fewer near the length limit, none without a draft."""
        return 0 if self.draft is None else min(self.cfg.gamma, self.room - 1)

    def _verify(
        self, drafts: torch.Tensor, q_logp: torch.Tensor, h: torch.Tensor, timer: Timer
    ) -> Generator[Any, Any, tuple[str | None, dict]]:
        """Steps 3-6 of a round, after the forwards (`run_round`): the lossless test, the rule, the extra token, the
        emitted tokens and their records, and both caches cut back to the output. Returns how the run finishes and the
        positions it checked (the round's costs count their paths).

        A generator: it yields the device tensors it must read (the decisions, then the records' numbers) and takes
        their values back, so that `run_round` reads every sequence's in one copy."""
        cfg, t, k = self.cfg, len(self.trace.rounds), len(drafts)
        z = self.target.logits(h)  # [k+1, V], on the device
        # 3. The lossless test at every draft position: exact match, or Leviathan rejection sampling with one
        #    uniform per position (drawn here, after the draft's own draws, so a seed replays the round).
        u = to_device(torch.rand(k, generator=self.generator), z.device) if cfg.temperature > 0 else None
        ev = Evidence(drafts, q_logp, z, self.T, u=u, gamma=cfg.gamma)
        # 4. The rule (DropMatch on K dropout paths where needed, or a relative), OR / replace, read on the host
        #    (one copy on a GPU); the prefix a.
        read = yield from self._relax(t, ev, h, timer)
        a = accepted_length(read.accepts) if k else 0
        # 5. A correction at the first rejected position, or the bonus token, from the unmasked head.
        extra, kind = self._extra(ev, a, read.argmax, read.closed)
        # 6. Emit up to an end token or the length limit, record the round (one more copy: the records'
        #    numbers), cut both caches to the output.
        emitted, finish = self._emit(read.draft[:a] + [extra])
        extra_on_device = torch.full((1,), extra, dtype=drafts.dtype, device=drafts.device)  # a fill: no copy
        self._tail = torch.cat([drafts[:a], extra_on_device])[: len(emitted)]  # the next round's feeds
        outcome = RoundOutcome(
            round=t,
            evidence=ev,
            lossless=tuple(read.lossless),
            accepted=a,
            extra=extra,
            extra_kind=kind,
            emitted=tuple(emitted),
            checked=read.checked,
            closed=read.closed,
            mode=cfg.mode,
            knobs={cfg.criterion: cfg.knob} if cfg.knob is not None else {},
        )
        yield from self._record(outcome)
        for stage in (self.target, self.draft):
            if stage is not None:
                stage.cut(self.context_length - 1)
        return finish, read.checked

    def _record(self, outcome: RoundOutcome) -> Generator[Any, Any, None]:
        """The round's tokens join the output, and its records the trace (their numbers read in one copy: yielded)."""
        start = len(self.trace.token_ids)
        self.trace.token_ids.extend(outcome.emitted)
        pieces = token_pieces(self.pair.tokenizer, self.trace.token_ids, start)  # one per emitted token
        reads = self.rule.reads if self.rule is not None else ()
        values = yield record_values(outcome, reads=reads, full=self.cfg.evidence, top_n=self.cfg.top_n)
        self.trace.records.extend(records_from(self.pair.tokenizer, outcome, pieces, values))

    def rounds(self) -> Iterator[Trace]:
        while self.trace.finish is None:
            self._round()
            yield self.trace


@contextmanager
def _timed(timers: list[Timer], step: str):
    """One shared step timed on every participant's timer (each sequence waited for all of it)."""
    with ExitStack() as stack:
        for timer in timers:
            stack.enter_context(timer(step))
        yield


def run_round(decoders: list[Decoder]) -> None:
    """One verification round for each decoder (all of one pair, none finished), in lockstep: the draft proposes for
    every sequence in shared steps, the target verifies every sequence's drafts in one forward (`hidden_all`), then
    each sequence applies its own rule to its own rows (`Decoder._verify`). With one decoder this is the plain round.

    The steps 1-2 of a round (see `Decoder._verify` for 3-6):
    1. Draft: k tokens d_1..d_k and the draft's distributions q (none for target-only decoding).
    2. One target forward over [unverified tail, d_1..d_k]: hidden states at the k+1 verify positions.
    """
    timers = [Timer(d.target.device) for d in decoders]
    with _timed(timers, "total"):
        ks = [d._k() for d in decoders]
        with _timed(timers, "draft"):
            proposals = _draft_all(decoders, ks)
        with _timed(timers, "target"):
            feeds = [torch.cat([d._feed(d.target), drafts]) for d, (drafts, _) in zip(decoders, proposals)]
            hs = hidden_all([d.target for d in decoders], feeds)
        verifying = {}
        for i, (d, timer, k, (drafts, q_logp), h) in enumerate(zip(decoders, timers, ks, proposals, hs)):
            with timer("target"):
                h = h[-(k + 1) :]  # [k+1, H]
            verifying[i] = d._verify(drafts, q_logp, h, timer)
        verified = _drive(verifying)
    for d, timer, k, (finish, checked) in zip(decoders, timers, ks, verified):
        d.trace.rounds.append(_costs(len(d.trace.rounds), k, d.cfg.K, checked, timer.read()))
        d.trace.finish = finish
        d.trace.text = d.pair.tokenizer.decode(d.trace.token_ids, skip_special_tokens=True)


def _drive(steps: dict[int, Generator]) -> list:
    """Run each sequence's verify step (`Decoder._verify`) to its end, reading the device for all of them at once:
    every step yields the tensors it must read next; their values for every sequence come back in one copy
    (`host.fetch`), so a round of B sequences reads the device as often as a round of one. Returns each step's
    result, in key order."""
    results, asks = {}, {}
    for i, step in steps.items():
        try:
            asks[i] = next(step)
        except StopIteration as done:
            results[i] = done.value
    while asks:
        values = fetch(list(asks.values()))
        for (i, _), value in zip(list(asks.items()), values):
            try:
                asks[i] = steps[i].send(value)
            except StopIteration as done:
                results[i] = done.value
                del asks[i]
    return [results[i] for i in sorted(results)]


def _draft_all(decoders: list[Decoder], ks: list[int]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each decoder's k drafts and the draft's log-distributions q, proposed autoregressively in shared steps: step
    s feeds every sequence that still drafts (its unread context first, then its last draft) through one forward and
    one head product; each picks its token with its own generator.  # per decoder: [k], [k, V]"""
    tokens, qs = [[] for _ in decoders], [[] for _ in decoders]
    feeds = [d._feed(d.draft) if k else None for d, k in zip(decoders, ks)]
    for step in range(max(ks, default=0)):
        live = [i for i, k in enumerate(ks) if k > step]
        logits = next_logits_all([decoders[i].draft for i in live], [feeds[i] for i in live])
        for row, i in enumerate(live):
            token, q = decoders[i]._propose(logits[row])
            tokens[i].append(token)
            qs[i].append(q)
            feeds[i] = token[None]
    out = []
    for d, t, q in zip(decoders, tokens, qs):
        device = d.target.device
        none = (torch.empty(0, dtype=torch.long, device=device), torch.empty(0, d.target.vocab, device=device))
        out.append((torch.stack(t), torch.stack(q)) if t else none)
    return out


PREFILL = 32  # a feed longer than this (a prompt) runs in a forward of its own: padding a batch to it costs more


def _together(stages: list, feeds: list[torch.Tensor]) -> list[int]:
    """Which stages share a forward: those whose caches can be stacked (`_batchable`) and whose feed is short (a
    prompt runs alone); none unless two or more."""
    together = [i for i, (s, f) in enumerate(zip(stages, feeds)) if _batchable(s) and len(f) <= PREFILL]
    return together if len(together) >= 2 else []


def hidden_all(stages: list, feeds: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each stage's hidden states for its feed, extending its cache (as `stage.hidden`): the stages of one model run
    in one forward where their caches allow (`_together`), the others alone.  # per stage: [n_i, H]"""
    together = _together(stages, feeds)
    out = [None if i in together else s.hidden(f) for i, (s, f) in enumerate(zip(stages, feeds))]
    if together:
        for i, h in zip(together, _batched_hidden([stages[i] for i in together], [feeds[i] for i in together])):
            out[i] = h
    return out


def next_logits_all(stages: list, feeds: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each stage's logits after its feed (as `stage.next_logits`), extending its cache: the stages that share a
    forward (`_together`) share one head product too; the others (a prompt, llama.cpp's draft with its own head)
    run alone.  # per stage: [V]"""
    together = _together(stages, feeds)
    out = [None if i in together else s.next_logits(f) for i, (s, f) in enumerate(zip(stages, feeds))]
    if together:
        hs = _batched_hidden([stages[i] for i in together], [feeds[i] for i in together])
        with torch.inference_mode():
            logits = stages[together[0]].logits(torch.cat([h[-1:] for h in hs]))  # [B, V]
        for row, i in enumerate(together):
            out[i] = logits[row]
    return out


def _batchable(stage) -> bool:
    """A torch stage whose cache is full attention only (a sliding window or a recurrent layer keeps state that
    left-padding would break): its cache can be stacked with others'."""
    return isinstance(stage, _Stage) and all(type(layer) is DynamicLayer for layer in stage.cache.layers)


@torch.inference_mode()
def _batched_hidden(stages: list[_Stage], feeds: list[torch.Tensor]) -> list[torch.Tensor]:
    """One forward of the shared body over several sequences, each with its own cache and feed.

    transformers' caches hold one length for the whole batch, and ours are cut to a different length per sequence
    every round, so each sequence keeps its own cache and the forward runs on a stacked copy: sequence i's cached
    keys and values left-padded to the longest (P slots), then its feed right-aligned in the N new slots, pad slots
    masked out by the attention mask and each real token at its own position (position_ids). Afterwards each
    sequence's cache takes only its own new slots. The copy costs one read of the caches per forward, small beside
    the weights a forward reads; in exchange a cache never holds another sequence's slots and a sequence leaves or
    joins the batch at no cost.  # per stage: [n_i, H]
    """
    body, device = stages[0].body, stages[0].device
    lengths, sizes = [s.length for s in stages], [len(f) for f in feeds]
    P, N, B = max(lengths), max(sizes), len(stages)
    ids = torch.zeros(B, N, dtype=torch.long, device=device)
    mask = torch.zeros(B, P + N, dtype=torch.long, device=device)
    positions = torch.zeros(B, N, dtype=torch.long, device=device)
    for i, (L, n, feed) in enumerate(zip(lengths, sizes, feeds)):
        ids[i, N - n :] = feed
        mask[i, P - L : P] = 1
        mask[i, P + N - n :] = 1
        positions[i, N - n :] = torch.arange(L, L + n, device=device)
    cache = DynamicCache()
    if P:
        ref = next(s for s in stages if s.length).cache.layers  # a filled cache: the keys' shape and dtype
        stacked = []
        for layer, like in enumerate(ref):
            kv = []
            for x in ("keys", "values"):
                heads, dim = getattr(like, x).shape[1], getattr(like, x).shape[3]
                out = getattr(like, x).new_zeros(B, heads, P, dim)
                for i, (s, L) in enumerate(zip(stages, lengths)):
                    if L:
                        out[i, :, P - L :] = getattr(s.cache.layers[layer], x)[0]
                kv.append(out)
            stacked.append(tuple(kv))
        cache = DynamicCache(ddp_cache_data=stacked)
    h = body(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache, use_cache=True)
    for i, (s, n) in enumerate(zip(stages, sizes)):
        for own, stacked in zip(s.cache.layers, cache.layers):
            keys, values = (x[i : i + 1, :, P + N - n :] for x in (stacked.keys, stacked.values))
            own.update(keys.contiguous(), values.contiguous())
    return [h.last_hidden_state[i, N - n :] for i, n in enumerate(sizes)]


def _costs(t: int, k: int, K: int, checked: dict, seconds: dict) -> RoundRecord:
    """A round's costs: forwards, head products (one per verify position, K more per position with paths), times."""
    with_paths = sum(c.evidence.paths is not None for c in checked.values())
    return RoundRecord(
        round=t,
        draft_forwards=k,
        head_products=(k + 1) + K * with_paths,
        path_positions=with_paths,
        t_draft=seconds["draft"],
        t_target=seconds["target"],
        t_paths=seconds["paths"],
        t_criteria=seconds["criteria"],
        t_total=seconds["total"],
    )


def token_pieces(tokenizer, ids: list[int], start: int) -> list[str]:
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
    return Decoder(pair, config, ids, prompt, bool(chat)).rounds()


class Request(NamedTuple):
    """One decode of a batch: a prompt under a config (each request has its own rule, knob, seed and stopping)."""

    prompt: str
    config: DecodeConfig
    chat: bool = False


class Step(NamedTuple):
    """What `stream_many` yields after each round of each live request."""

    index: int  # the request's place in the requests
    trace: Trace  # its trace so far (the same object, growing)
    left: bool  # it left the batch after this round: finished, or `until` said so
    cpu_s: float  # its share of the process's CPU seconds so far: each round's split evenly among its sequences


def stream_many(
    pair: ModelPair, requests: Iterable[Request], batch: int = 1, until: Callable[[int, Trace], bool] | None = None
) -> Iterator[Step]:
    """Decode many requests, up to `batch` of them at a time in lockstep rounds (`run_round`); a request that finishes
    (or for which `until(index, trace)` is true after a round) leaves, and the next one takes its place (continuous
    batching), so the batch stays full while requests remain. Each request decodes as it would alone (`stream`), up
    to float rounding: its own rule, seed, generator and masks, which no neighbour changes. In bf16 a forward over a
    batch rounds differently from one over a sequence, so a request can part from its batch-1 decode at a near-tie."""
    if batch < 1:
        raise ValueError(f"the batch size must be at least 1; got {batch}")
    waiting, live, cpu = iter(enumerate(requests)), [], {}
    while True:
        while len(live) < batch and (job := next(waiting, None)) is not None:
            i, (prompt, config, chat) = job
            ids = encode_prompt(pair.tokenizer, prompt, chat)
            live.append((i, Decoder(pair, config, ids, prompt, bool(chat))))
            cpu[i] = 0.0
        if not live:
            return
        start = time.process_time()
        run_round([d for _, d in live])
        share, staying = (time.process_time() - start) / len(live), []
        for i, d in live:
            cpu[i] += share
            left = d.trace.finish is not None or (until is not None and until(i, d.trace))
            yield Step(i, d.trace, left, cpu.pop(i) if left else cpu[i])
            if not left:
                staying.append((i, d))
        live = staying


def generate(pair: ModelPair, prompt: str, config: DecodeConfig, chat: bool = False) -> Trace:
    trace = None
    for trace in stream(pair, prompt, config, chat):  # noqa: B007 (the last yielded trace is the result)
        pass
    return trace
