"""Where relaxation happens: every relaxed acceptance of a sweep classed by token kind, and per setting the share
of its relaxations in each kind, their cost, and how the problems it lost began to go wrong.

A sweep cell keeps, for each relaxed acceptance of its output, the token's index, character offset, text, reason
and cost (`metrics.relaxed_tokens`). HumanEval's are classed in the program the tests ran (the prompt and the
completion cut at its stop sequence; later relaxations were never scored and are left out) by Python's tokenizer;
other suites' code prompts by their text as code, prose by words and punctuation (`dropmatch.token_kinds`).

A lost problem (lossless passes, the setting fails) "went wrong at" the first line of its completion that differs
from lossless's passing one: nothing above that line can hold the fault. The table counts the lost problems whose
first relaxed identifier or number lies on or above that line, the relaxations that change what a program computes
rather than how it is spelled.
"""

from __future__ import annotations

import pandas as pd

from dropmatch.lab.suites import HUMANEVAL, humaneval_problems, truncate_completion
from dropmatch.tables.summary import paired
from dropmatch.tables.tradeoff import compared_rows, knob_of, rule_name
from dropmatch.token_kinds import CODE_KINDS, KINDS, SEMANTIC, code_kinds, text_kind

COLUMNS = ["suite", "rule", "knob", "prompt_id", "seed", "category", "index", "line", "text", "reason", "kind", "cost"]


def _is_code(suite: str, category) -> bool:
    return suite == HUMANEVAL or str(category).startswith("code")


def _classed(row, prompt: str) -> list[dict]:
    """The relaxed acceptances of one cell inside what was scored, each with its kind and its line (0-based, in
    the completion)."""
    tokens = row["relaxed_tokens"]
    if not isinstance(tokens, list) or not tokens:
        return []
    text = str(row["text"])
    scored = truncate_completion(text) if row["suite"] == HUMANEVAL else text
    tokens = [t for t in tokens if t[1] < len(scored)]
    if _is_code(row["suite"], row["category"]):
        kinds = code_kinds(prompt + scored, [(len(prompt) + t[1], t[2]) for t in tokens])
    else:
        kinds = [text_kind(t[2], code=False) for t in tokens]
    return [
        {"index": i, "line": scored.count("\n", 0, offset), "text": piece, "reason": reason, "kind": kind, "cost": cost}
        for (i, offset, piece, reason, cost), kind in zip(tokens, kinds)
    ]


def relaxations(df: pd.DataFrame) -> pd.DataFrame:
    """One row per relaxed acceptance of the rules compared (COLUMNS), classed by token kind."""
    if "relaxed_tokens" not in df or not (df["method"] != "lossless").any():
        return pd.DataFrame(columns=COLUMNS)
    rows = compared_rows(df)
    rows = rows[rows["method"] != "lossless"]
    prompts = (
        {pid: p["prompt"] for pid, p in humaneval_problems().items()} if (rows["suite"] == HUMANEVAL).any() else {}
    )
    out = []
    for _, row in rows.iterrows():
        prompt = prompts.get(row["prompt_id"], "") if row["suite"] == HUMANEVAL else ""
        who = {"suite": row["suite"], "rule": rule_name(row), "knob": knob_of(row), "prompt_id": row["prompt_id"]}
        who["seed"] = row.get("seed")
        out += [who | {"category": row["category"]} | r for r in _classed(row, prompt)]
    return pd.DataFrame(out, columns=COLUMNS)


def first_changed_line(text: str, baseline: str) -> int:
    """The first line (0-based) where two completions differ; one past the shorter when one extends the other."""
    a, b = text.splitlines(), baseline.splitlines()
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _lost_started_by_semantic(setting: pd.DataFrame, base: pd.DataFrame, found: pd.DataFrame) -> tuple[int, int]:
    """(lost problems, those whose first relaxed identifier or number sits on or above the first changed line); a
    sampled sweep counts each (problem, seed) pair, the seed's output against lossless's of the same seed."""
    pairs, _, _ = paired(base, setting)
    on = [c for c in ("prompt_id", "seed") if c in pairs]
    lost = pairs.loc[(pairs["score"] == 1) & (pairs["score_other"] == 0), on]
    texts, base_texts = (s.set_index(on)["text"].map(lambda t: truncate_completion(str(t))) for s in (setting, base))
    first_semantic = found[found["kind"].isin(SEMANTIC)].groupby(on, dropna=False)["line"].min()
    started = 0
    for key in lost.itertuples(index=False, name=None):
        key = key if len(on) > 1 else key[0]
        if key in first_semantic.index and first_semantic[key] <= first_changed_line(texts[key], base_texts[key]):
            started += 1
    return len(lost), started


def kinds_table(df: pd.DataFrame, found: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per setting (suite, rule, knob): relaxed acceptances, the share and the mean cost (nats, a proxy) of each
    token kind, and for a scored suite the problems lost against lossless and how many of them began with a
    relaxed identifier or number."""
    found = relaxations(df) if found is None else found
    if found.empty:
        return pd.DataFrame()
    rows = compared_rows(df)
    rows = rows.assign(rule=rows.apply(rule_name, axis=1), knob=rows.apply(knob_of, axis=1))
    kinds = [k for k in KINDS if (found["kind"] == k).any()] or list(CODE_KINDS)
    out = []
    for (suite, rule, knob), part in found.groupby(["suite", "rule", "knob"], sort=False):
        row = {"suite": suite, "rule": rule, "knob": knob, "relaxed": len(part)}
        for kind in kinds:
            of_kind = part[part["kind"] == kind]
            row[f"share {kind}"] = len(of_kind) / len(part)
            row[f"cost {kind}"] = of_kind["cost"].mean() if len(of_kind) else float("nan")
        mine = rows[(rows["suite"] == suite) & (rows["rule"] == rule) & (rows["knob"] == knob)]
        base = rows[(rows["suite"] == suite) & (rows["method"] == "lossless")]
        if mine["score"].notna().any() and len(base):
            row["lost"], row["lost_semantic_first"] = _lost_started_by_semantic(mine, base, part)
        out.append(row)
    return pd.DataFrame(out)
