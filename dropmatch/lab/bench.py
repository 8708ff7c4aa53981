"""`bench`: target-only, lossless, a relaxed method (DropMatch or a relative) and transformers' assisted
generation, interleaved on one prompt set; with lean pairs (the same target, a quantised draft), lossless and
the relaxed method once more on each, so the lean drafts' speed and acceptance sit beside the stock draft's; with
the llama.cpp engine, every method once more on it; and, where llama-cpp-python is installed, llama.cpp alone as
a CPU user would run the same GGUF files (its plain decoding, and its greedy speculative decoding with the draft);
with more draft lengths, every speculative row once more at each (the best gamma on a CPU is not the GPU's).

Timings on shared machines are noisy, so every method runs on every prompt in one process, in a
rotating order, and speedups are ratios measured side by side (Spec-Bench: mean tokens/s of a method
over prompts divided by the baseline's).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Sequence

import pandas as pd
import torch
from tqdm.auto import tqdm

from dropmatch import embedded, llamacpp, metrics
from dropmatch.config import RELAXED_METHODS
from dropmatch.decode import Request, generate, stream_many
from dropmatch.lab.suites import SuiteItem
from dropmatch.models import ModelPair, encode_prompt

ASSISTED = "assisted"  # transformers' assisted generation, beside the decoder's methods
# llama.cpp alone on the embedded pair's GGUF files, both heads its own: plain decoding, and greedy speculation
LLAMA_PEERS = {"llama.cpp": False, "llama.cpp spec": True}
GAMMA_TAG = re.compile(r"\+g(\d+)")  # "lossless+g2+int4": a row at draft length 2 instead of the bench's gamma


def gamma_label(method: str, gamma: int) -> str:
    """The row of `method` at draft length `gamma`: the tag goes after the method's name ("lossless+g2",
    "dropmatch+g2+int4", "llama.cpp spec+g2"), so the lean and engine labels keep their place."""
    name, plus, rest = method.partition("+")
    return f"{name}+g{gamma}{plus}{rest}"


def row_gamma(method: str, gamma: int) -> int:
    """The draft length a row ran at: its tag's, else the bench's."""
    tag = GAMMA_TAG.search(method)
    return int(tag.group(1)) if tag else gamma


def assisted_run(pair: ModelPair, prompt_ids: list[int], gamma: int, max_new_tokens: int) -> dict:
    """transformers' `generate(assistant_model=...)`, greedy, drafting exactly gamma tokens per round.

    Target forwards are counted with a hook on the target's body; tau = new tokens / target forwards.
    """
    gc = pair.draft.generation_config
    saved = {
        k: getattr(gc, k, None)
        for k in ("num_assistant_tokens", "num_assistant_tokens_schedule", "assistant_confidence_threshold")
    }
    gc.num_assistant_tokens, gc.num_assistant_tokens_schedule, gc.assistant_confidence_threshold = (
        gamma,
        "constant",
        0.0,
    )
    calls = [0]
    hook = pair.target.get_decoder().register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    try:
        x = torch.tensor([prompt_ids], device=pair.device)
        start = time.perf_counter()
        with torch.inference_mode():
            out = pair.target.generate(
                x,
                attention_mask=torch.ones_like(x),
                assistant_model=pair.draft,
                do_sample=False,
                max_new_tokens=max_new_tokens,
                eos_token_id=sorted(pair.eos_ids),
                pad_token_id=sorted(pair.eos_ids)[0],
            )
        wall = time.perf_counter() - start
    finally:
        hook.remove()
        for k, v in saved.items():
            setattr(gc, k, v)
    n = out.shape[1] - len(prompt_ids)
    return {
        "tau": n / calls[0],
        "acceptance_rate": None,
        "tokens_per_s": n / wall,
        "n_tokens": n,
        "token_ids": out[0, len(prompt_ids) :].tolist(),
        "overhead_share": 0.0,
        "draft_share": None,
        "target_share": None,
    }  # its rounds are not timed from here


def llama_run(
    gguf: tuple[str, str], vocab: int, eos: frozenset, ids: list[int], gamma: int, n_max: int, spec: bool
) -> dict:
    """llama.cpp alone, greedy: the target decoding token by token, or the standard speculative loop over its C API
    (the draft proposes gamma tokens, the target checks them in one batch, the longest prefix matching its argmax is
    kept with the target's own token after it: lossless, so the output equals plain decoding up to batch rounding).
    tau = new tokens / target forwards."""
    target = llamacpp.Stage(gguf[0], vocab)
    draft = llamacpp.Stage(gguf[1], vocab) if spec else None
    out, forwards, start = [], 0, time.perf_counter()
    while len(out) < n_max and not (out and out[-1] in eos):
        context = ids + out
        k = min(gamma, n_max - len(out) - 1) if draft is not None else 0
        drafts, feed = [], context[draft.length :] if k else []
        for _ in range(k):
            drafts.append(int(draft.next_logits(feed).argmax()))
            feed = drafts[-1:]
        best = target.last_logits(context[target.length :] + drafts, k + 1).argmax(-1).tolist()
        forwards += 1
        a = next((j for j in range(k) if best[j] != drafts[j]), k)
        new = drafts[:a] + [best[a]]
        end = next((j for j, tok in enumerate(new) if tok in eos), None)
        out += new[: (end + 1) if end is not None else n_max - len(out)]
        for stage in (target, draft):
            if stage is not None:
                stage.cut(len(ids) + len(out) - 1)
    wall = time.perf_counter() - start
    return {
        "tau": len(out) / forwards,
        "acceptance_rate": None,
        "tokens_per_s": len(out) / wall,
        "n_tokens": len(out),
        "token_ids": out,
        "overhead_share": 0.0,
        "draft_share": None,
        "target_share": None,
    }


def lean_label(pair: ModelPair) -> str:
    """A lean pair's options in a method name: "int8", "v32768", "int8+v32768", "int4+int4-target"."""
    parts = [pair.draft_quant] * (pair.draft_quant != "none") + [f"v{pair.draft_vocab}"] * bool(pair.draft_vocab)
    parts += [f"{pair.target_quant}-target"] * (pair.target_quant != "none")
    return "+".join(parts) or "stock"


def run_bench(
    pair: ModelPair,
    prompts: list[SuiteItem],
    configs: dict,
    gamma: int,
    max_new_tokens: int,
    leans: Sequence[ModelPair] = (),
    engine: ModelPair | None = None,
    gammas: Sequence[int] = (),
) -> pd.DataFrame:
    """One row per (prompt, method): each of `configs` ({method: config}) on `pair`; on each of `leans`, each of
    them but target-only (named "lossless+int8", "lossless+int8+v32768", ...); on `engine` (the pair on another
    engine), each of them ("lossless+llama.cpp", ...); assisted generation with `pair`'s draft; and llama.cpp's own
    decoding (LLAMA_PEERS) where it is installed and the pair is the embedded one on the CPU; and at each of `gammas`
    (other draft lengths), every speculative row once more ("lossless+g2", "dropmatch+g2+int4", "llama.cpp spec+g2").
    Methods rotate their order from prompt to prompt."""
    runs = {m: (pair, c) for m, c in configs.items()}
    for lean in leans:
        own_target = lean.target_quant != "none"  # a lean target decodes alone too: lossless's reference
        runs |= {f"{m}+{lean_label(lean)}": (lean, c) for m, c in configs.items() if c.method != "target" or own_target}
    if engine is not None:
        runs |= {f"{m}+{engine.engine}": (engine, c) for m, c in configs.items()}
    gguf = engine.gguf if engine is not None else peer_files(pair)
    peers = dict(LLAMA_PEERS) if gguf else {}
    speculative = {m: (p, c) for m, (p, c) in runs.items() if c.method != "target"}
    for g in dict.fromkeys(gammas):
        if g != gamma:
            runs |= {gamma_label(m, g): (p, dataclasses.replace(c, gamma=g)) for m, (p, c) in speculative.items()}
            peers |= {gamma_label(m, g): True for m, spec in LLAMA_PEERS.items() if spec and gguf}
    # Warm-up: first calls pay for allocation and kernel selection.
    relaxed = next((c for c in configs.values() if c.method in RELAXED_METHODS), next(iter(configs.values())))
    for warm in {id(p): p for p, _ in runs.values()}.values():
        generate(warm, "Hello", dataclasses.replace(relaxed, max_new_tokens=4))
    if gguf:
        llama_run(gguf, pair.vocab_size, pair.eos_ids, encode_prompt(pair.tokenizer, "Hello"), gamma, 4, True)
    rows = []
    order = [*runs, ASSISTED, *peers]
    for i, item in enumerate(tqdm(prompts, desc="bench")):
        chat = item.chat
        ids = encode_prompt(pair.tokenizer, item.prompt, chat)
        outputs = {}
        for method in order[i % len(order) :] + order[: i % len(order)]:
            cpu = time.process_time()
            if method == ASSISTED:
                m = assisted_run(pair, ids, gamma, max_new_tokens)
                outputs[method] = m.pop("token_ids")
            elif method in peers:
                g = row_gamma(method, gamma)
                m = llama_run(gguf, pair.vocab_size, pair.eos_ids, ids, g, max_new_tokens, peers[method])
                outputs[method] = m.pop("token_ids")
            else:
                run_pair, config = runs[method]
                trace = generate(run_pair, item.prompt, config, chat=chat)
                m = metrics.compute(trace)
                outputs[method] = trace.token_ids
            cpu = time.process_time() - cpu  # beside wall clock: the CPU time is less sensitive to a shared machine
            rows.append(
                {
                    "prompt": item.id,
                    "category": item.category,
                    "method": method,
                    "gamma": row_gamma(method, gamma) if drafted(method, runs, peers) else None,
                    **{
                        k: m[k]
                        for k in (
                            "tau",
                            "acceptance_rate",
                            "tokens_per_s",
                            "n_tokens",
                            "overhead_share",
                            "draft_share",
                            "target_share",
                        )
                    },
                    "tokens_per_cpu_s": m["n_tokens"] / cpu,
                }
            )
        for row in rows[-len(order) :]:
            exact = reference(row["method"], engine, outputs)
            row["equal_to_lossless"] = metrics.divergence(outputs[row["method"]], outputs[exact])[1]
    return pd.DataFrame(rows)


def drafted(method: str, runs: dict, peers: dict) -> bool:
    """Whether a row drafts (its gamma means something): not target-only, not llama.cpp's plain decoding."""
    if method in runs:
        return runs[method][1].method != "target"
    return peers.get(method, True)  # assisted generation drafts


def reference(method: str, engine: ModelPair | None, outputs: dict | None = None) -> str:
    """The exact decoding a method's output is compared with: lossless on the same engine (llama.cpp's plain
    decoding for its own loops), since engines are slightly different models; with a 4-bit target, that target's own
    greedy decoding (it is another model). A row at another draft length has the same reference (lossless is exact
    at every gamma)."""
    method = GAMMA_TAG.sub("", method)
    if method in LLAMA_PEERS:
        return "llama.cpp"
    if engine is not None and method.endswith(f"+{engine.engine}"):
        return f"lossless+{engine.engine}"
    method_name, _, label = method.partition("+")
    if label.endswith("-target"):  # a lean target's own greedy decoding (its lossless run, for that row itself)
        own = f"{'lossless' if method_name == 'target' else 'target'}+{label}"
        return own if own in (outputs or {}) else "lossless"
    return "lossless"


def peer_files(pair: ModelPair) -> tuple[str, str] | None:
    """The GGUF files llama.cpp would run for this pair: the embedded pair on the CPU, where llama-cpp-python is
    installed; else None (no peer rows)."""
    if pair.gguf:
        return pair.gguf
    embedded_ids = (pair.target_id, pair.draft_id) == (embedded.EMBEDDED_ID,) * 2
    if not (embedded_ids and pair.device.type == "cpu" and llamacpp.available()):
        return None
    return embedded.gguf_paths()


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Per method: pooled tau, mean acceptance rate and tokens/s, speedups as ratios of mean tokens/s."""
    df = df.assign(forwards=df["n_tokens"] / df["tau"])
    g = df.groupby("method", sort=False)
    out = pd.DataFrame(
        {
            "tau": g.apply(lambda rows: metrics.pooled_tau(rows["n_tokens"], rows["forwards"])),
            "acceptance_rate": g["acceptance_rate"].mean(),
            "tokens_per_s": g["tokens_per_s"].mean(),
            "tokens_per_cpu_s": g["tokens_per_cpu_s"].mean(),
            "equal_to_lossless": g["equal_to_lossless"].mean(),
            "overhead_share": g["overhead_share"].mean(),
            "draft_share": g["draft_share"].mean(),
            "target_share": g["target_share"].mean(),
        }
    ).reindex(list(df["method"].unique()))
    out.insert(3, "speedup_vs_target", out["tokens_per_s"] / out.loc["target", "tokens_per_s"])
    out.insert(4, "speedup_vs_lossless", out["tokens_per_s"] / out.loc["lossless", "tokens_per_s"])
    out.insert(5, "speedup_vs_assisted", out["tokens_per_s"] / out.loc[ASSISTED, "tokens_per_s"])
    peer = "llama.cpp" if "llama.cpp" in out.index else None  # plain decoding a CPU user would pick
    if peer:
        out.insert(6, "speedup_vs_llama.cpp", out["tokens_per_s"] / out.loc[peer, "tokens_per_s"])
    for base in ("lossless", ASSISTED, *([peer] if peer else [])):  # the same ratios in CPU time
        out[f"cpu_speedup_vs_{base}"] = out["tokens_per_cpu_s"] / out.loc[base, "tokens_per_cpu_s"]
    return out


# The paper's Table 5 (GSM8K, draft length 10, vLLM on A100s): DropMatch's speedup over lossless speculative decoding
# by batch size; 1.19x at batch 1, falling as the batch grows (only batch 1's number is kept here).
PAPER_BATCH_GAINS = {1: 1.19}


def run_batch_bench(
    pair: ModelPair, prompts: list[SuiteItem], configs: dict, batches: Sequence[int], max_new_tokens: int
) -> pd.DataFrame:
    """One row per (batch size, method): every prompt decoded under the method's config, `batch` at a time in
    lockstep (`decode.stream_many`, continuous batching); the throughput is the tokens of all prompts over the wall
    time of the whole set, and the CPU seconds per prompt (cell) the process's CPU time over the prompts. The methods
    alternate their order from one batch size to the next; every prompt's tokens are checked against batch 1's."""
    rows, first = [], {}
    generate(pair, "Hello", dataclasses.replace(next(iter(configs.values())), max_new_tokens=4))  # warm-up
    for i, b in enumerate(tqdm(list(batches), desc="batch bench")):
        methods = list(configs) if i % 2 == 0 else list(reversed(configs))
        for method in methods:
            requests = [Request(p.prompt, configs[method], p.chat) for p in prompts]
            wall, cpu = time.perf_counter(), time.process_time()
            traces = {s.index: s.trace for s in stream_many(pair, requests, batch=b) if s.left}
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            outputs = [traces[j].token_ids for j in range(len(prompts))]
            first.setdefault(method, outputs)
            n_tokens = sum(len(o) for o in outputs)
            each = [metrics.compute(traces[j]) for j in range(len(prompts))]
            rows.append(
                {
                    "batch": b,
                    "method": method,
                    "tokens_per_s": n_tokens / wall,
                    "cpu_s_per_cell": cpu / len(prompts),
                    "tau": metrics.pooled_tau([m["n_tokens"] for m in each], [m["target_forwards"] for m in each]),
                    "n_tokens": n_tokens,
                    "same_as_batch_1": sum(o == f for o, f in zip(outputs, first[method])) / len(prompts),
                }
            )
    return pd.DataFrame(rows)


def summarise_batches(df: pd.DataFrame, relaxed: str, baseline: str = "lossless") -> pd.DataFrame:
    """The batch table: per batch size, each method's throughput and CPU seconds per cell, the relaxed method's gain
    over the baseline (the ratio of their throughputs at that batch size), the gain over batch 1 of each method, and
    the paper's gain at that batch size where it gives one."""
    wide = df.pivot(index="batch", columns="method", values=["tokens_per_s", "cpu_s_per_cell", "tau"])
    wide.columns = [f"{m} {v}" for v, m in wide.columns]
    wide[f"{relaxed} gain"] = wide[f"{relaxed} tokens_per_s"] / wide[f"{baseline} tokens_per_s"]
    for m in (baseline, relaxed):
        wide[f"{m} x batch 1"] = wide[f"{m} tokens_per_s"] / wide[f"{m} tokens_per_s"].iloc[0]
    wide["paper gain"] = [PAPER_BATCH_GAINS.get(b) for b in wide.index]
    return wide
