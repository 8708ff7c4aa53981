"""Which recorded DropMatch cells the float32 dropout scale changes.

Until the scale fix, `heads.path_logits` multiplied the masks by 1 / (1 - p_drop) in the hidden state's dtype: on a
bf16 target the scale itself was rounded (1 / 0.7 became 1.4297, 1 / 0.9989 became 1.0) and every kept unit rounded
again. The cells recorded before it were decoded that way.

A cell decodes the same with either scale as long as every verdict its decode reads is the same with either: the
decode is deterministic, so the first verdict that differs is the first place the two decodes can part. This audit
re-decodes a cell with today's code and, at every check of the dropout paths, also decides with the old scale's paths
(the same masks, the same generators); it reports the first round where the accept decisions differ (the cell is
changed from there on), or none (the fix leaves the cell as it was), and whether the re-decode equals the recorded
output (it need not on another CPU: a bf16 decode can part at a near-tie where the kernels differ).

    python -m dropmatch.lab.scale_audit --out audit.jsonl --sample 200 --seed 0 assets/verdict assets/sweep

    python -m dropmatch.lab.scale_audit --out audit.jsonl --summary   # per table, with 95% intervals

Cells at p_drop 0 and 0.5 are skipped: their scale (1 and 2) is exact in bf16, so the fix changes nothing there.
Resumable: the cells already in --out are skipped.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import torch

from dropmatch.decode import Decoder
from dropmatch.heads import dropout_masks, pad_vocab, position_generator
from dropmatch.lab import suites, sweep
from dropmatch.models import load_pair

EXACT_SCALES = (0.0, 0.5)  # 1 / (1 - p) is a power of two: the rounded scale was the exact one


def old_path_logits(h: torch.Tensor, head, masks: torch.Tensor, p_drop: float) -> torch.Tensor:
    """The paths as the code before the fix computed them: the scale multiplied the masks in h's dtype."""
    scale = 1.0 / (1.0 - p_drop)
    return head(h[:, None, :] * (masks.to(h.device, h.dtype) * scale)).float()


@contextmanager
def watch_verdicts(partings: list[dict]):
    """While inside, every check of the dropout paths is also decided with the old scale's paths; where the accept
    decisions or the components differ, a {round, positions, accept} entry is appended to `partings`. The decode
    itself goes on with today's verdicts, untouched."""
    check = Decoder._check

    def audited(self, round_, ev, h, positions, timer):
        part, verdict = check(self, round_, ev, h, positions, timer)
        cfg = self.cfg
        if verdict is None or not self.rule.needs_paths or cfg.p_drop in EXACT_SCALES:
            return part, verdict
        gens = [position_generator(cfg.seed, round_, j) for j in positions]
        masks = torch.stack([dropout_masks(1, cfg.K, h.shape[-1], cfg.p_drop, g)[0] for g in gens])  # [P, K, H]
        with torch.inference_mode():
            logits = pad_vocab(old_path_logits(h[positions], self.target.head, masks, cfg.p_drop), self.target.vocab)
        old = self.rule(ev.rows(positions).with_paths(logits, tuple(gens) if cfg.temperature > 0 else ()), cfg.knob)
        same_accept = torch.equal(old.accept, verdict.accept)
        same_parts = old.components.keys() == verdict.components.keys() and all(
            torch.equal(old.components[k], verdict.components[k]) for k in old.components
        )
        if not (same_accept and same_parts):
            partings.append({"round": round_, "positions": list(positions), "accept": not same_accept})
        return part, verdict

    Decoder._check = audited
    try:
        yield partings
    finally:
        Decoder._check = check


def setting_of(row: dict) -> sweep.Setting:
    """The sweep setting a logged DropMatch row was recorded at (its key says whether the seed is a replicate's)."""
    replicate = re.fullmatch(r"s\d+", row["key"].rsplit("|", 1)[-1]) is not None
    setting = sweep.Setting(
        row["method"], row["gamma"], row.get("K"), row.get("p_drop"), row.get("criterion"), row.get("knob"),
        bool(row.get("span_gate")), row["seed"] if replicate else None,
    )  # fmt: skip
    if setting.key(row["suite"], row["prompt_id"]) != row["key"]:
        raise ValueError(f"cannot rebuild the setting of {row['key']!r}")
    return setting


def audited_cells(dirs: list[str]) -> list[tuple[str, dict]]:
    """(table folder, row) for every DropMatch cell whose scale was rounded, in log order."""
    cells = []
    for d in dirs:
        for line in (Path(d) / "cells.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["method"] == "dropmatch" and row["p_drop"] not in EXACT_SCALES:
                cells.append((d, row))
    return cells


def audit_cell(pair, item: suites.SuiteItem, row: dict) -> dict:
    """Re-decode one logged cell with today's code, watching every verdict; the audit's line for it."""
    run = sweep.PairRunner(
        pair, row["max_new_tokens"], row["seed"], temperature=row.get("temperature") or 0.0, score=False
    )
    with watch_verdicts([]) as partings:
        new = run(item, setting_of(row))
    return {
        "key": row["key"],
        "first_parting": partings[0] if partings else None,
        "reasons_only": bool(partings) and not any(p["accept"] for p in partings),
        "reproduces": new["output_ids"] == row["output_ids"],
        "cpu_s": new["cpu_s"],
    }


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a binomial share k / n: the shares whose one-sided tail holds k at
    (1 - level) / 2, found by bisection on the binomial distribution function."""
    tail = (1 - level) / 2

    def at_most(k_: int, p: float) -> float:  # P(X <= k_) for X ~ Binomial(n, p)
        return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k_ + 1))

    def solve(f, lo=0.0, hi=1.0) -> float:  # f decreasing in p: the p where f(p) = tail
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) > tail else (lo, mid)
        return (lo + hi) / 2

    low = 0.0 if k == 0 else 1 - solve(lambda q: at_most(n - k, q))  # k's lower end is n - k's upper end on 1 - p
    high = 1.0 if k == n else solve(lambda p: at_most(k, p))
    return low, high


def summary(lines: list[dict]) -> list[dict]:
    """Per table and over all: cells audited, cells the fix changes (a verdict parts: the decode parts there), cells
    where only a verdict's components part (the same tokens, other reasons), and cells whose re-decode here differs
    from the logged one (another CPU, or the fix); the changed share with its 95% exact interval."""
    rows = []
    tables = sorted({line["key"].split("|", 1)[0] for line in lines})
    for table in [*tables, "all"]:
        part = [ln for ln in lines if table == "all" or ln["key"].split("|", 1)[0] == table]
        changed = sum(ln["first_parting"] is not None and not ln["reasons_only"] for ln in part)
        low, high = clopper_pearson(changed, len(part))
        rows.append(
            {
                "table": table,
                "audited": len(part),
                "changed": changed,
                "changed_low": low,
                "changed_high": high,
                "reasons_only": sum(ln["reasons_only"] for ln in part),
                "not_reproduced": sum(not ln["reproduces"] for ln in part),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tables", nargs="*", help="recorded sweep folders (each with a cells.jsonl)")
    parser.add_argument("--out", required=True, help="the audit's log (JSON lines); cells already in it are skipped")
    parser.add_argument("--sample", type=int, help="audit this many cells drawn at random (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument("--summary", action="store_true", help="only summarise --out, per table")
    args = parser.parse_args(argv)
    if args.summary:
        lines = [json.loads(line) for line in Path(args.out).read_text().splitlines()]
        print(pd.DataFrame(summary(lines)).round(3).to_string(index=False))
        return 0
    if not args.tables:
        parser.error("name the recorded sweep folders to audit (or --summary)")
    torch.set_num_threads(1)
    cells = audited_cells(args.tables)
    if args.sample is not None:
        cells = random.Random(args.seed).sample(cells, min(args.sample, len(cells)))
    out = Path(args.out)
    done = {json.loads(line)["key"] for line in out.read_text().splitlines()} if out.exists() else set()
    todo = [(d, r) for d, r in cells if f"{d}|{r['key']}" not in done]
    print(f"{len(cells)} cells, {len(todo)} to audit")
    pairs, items = {}, {}
    with out.open("a", encoding="utf-8") as fh:
        for i, (d, row) in enumerate(todo, 1):
            lean = (row["dtype"], row.get("draft_quant", "none"))
            if lean not in pairs:
                pairs[lean] = load_pair(row["target_id"], row["draft_id"], lean[0], draft_quant=lean[1])
            suite = "humaneval" if row["suite"] == "humaneval" else f"assets/suites/{row['suite']}.jsonl"
            if suite not in items:
                items[suite] = {item.id: item for item in suites.load_suite(suite)}
            start = time.monotonic()
            line = audit_cell(pairs[lean], items[suite][row["prompt_id"]], row)
            line["key"] = f"{d}|{row['key']}"
            fh.write(json.dumps(line) + "\n")
            fh.flush()
            print(f"{i}/{len(todo)} {line['key']} parting={line['first_parting']} "
                  f"reproduces={line['reproduces']} {time.monotonic() - start:.1f}s", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
