"""Where relaxation happens: every relaxed acceptance of a sweep classed by token kind, and per setting the share
of its relaxations in each kind, their cost, and how the problems it lost began to go wrong.

A sweep cell keeps, for each relaxed acceptance of its output, the token's index, character offset, text, reason
and cost (`metrics.relaxed_tokens`). HumanEval's are classed in the program the tests ran (the prompt and the
completion cut at its stop sequence; later relaxations were never scored and are left out) by Python's tokenizer;
other suites' code prompts by their text as code, prose by words and punctuation (`dropmatch.token_kinds`).

A lost problem (lossless passes, the setting fails) went wrong at the first token where its output parts from
lossless's: at T = 0 everything before it is lossless's own output, so that token is where the fault starts. The
table classes each lost problem by that token: the kind of the relaxed acceptance there (an identifier, a number,
a comment...), a tie (the draft tied the target's top-1 at bf16), or none (the target itself chose otherwise:
a near-tie the batch or the CPU moved). A relaxed token later on the same line does not count.
"""

from __future__ import annotations

import pandas as pd

from dropmatch.lab.suites import HUMANEVAL, humaneval_problems, truncate_completion
from dropmatch.metrics import divergence
from dropmatch.tables.summary import paired
from dropmatch.tables.tradeoff import compared_rows, knob_of, rule_name
from dropmatch.token_kinds import CODE_KINDS, KINDS, code_kinds, text_kind

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


TIE, NOT_RELAXED = "tie", "not relaxed"  # a lost problem's first differing token: a tie, or no acceptance of a rule


def first_divergence(ids: str, base_ids: str, reasons: str, relaxed_kinds: dict[int, str]) -> str | None:
    """What the first token where a greedy output parts from lossless's was (None where they never part): the kind
    of the relaxed acceptance emitted there (`relaxed_kinds`: emitted index -> kind), TIE, or NOT_RELAXED. The
    arguments are a sweep row's space-joined output ids and reasons."""
    first, _ = divergence(str(ids).split(), str(base_ids).split())
    if first is None:
        return None
    if first in relaxed_kinds:
        return relaxed_kinds[first]
    said = str(reasons).split()
    return TIE if first < len(said) and said[first] == TIE else NOT_RELAXED


def _lost_by_first_divergence(setting: pd.DataFrame, base: pd.DataFrame, found: pd.DataFrame) -> dict[str, int]:
    """{"lost": problems lost, class: how many of them part from lossless first at a token of that class}; a
    sampled sweep counts each (problem, seed) pair, against lossless's output of the same seed."""
    pairs, _, _ = paired(base, setting)
    on = [c for c in ("prompt_id", "seed") if c in pairs]
    lost = pairs.loc[(pairs["score"] == 1) & (pairs["score_other"] == 0), on]
    mine, theirs = setting.set_index(on), base.set_index(on)
    kinds = {  # a group's key is a tuple, one value a column; a lost problem's key is its prompt alone where no seed
        (key if len(on) > 1 else key[0]): dict(zip(part["index"], part["kind"]))
        for key, part in found.groupby(on, dropna=False)
    }
    out = {"lost": len(lost)}
    for key in lost.itertuples(index=False, name=None):
        key = key if len(on) > 1 else key[0]
        row = mine.loc[key]
        cls = first_divergence(row["output_ids"], theirs.loc[key, "output_ids"], row["reasons"], kinds.get(key, {}))
        if cls is not None:
            out[cls] = out.get(cls, 0) + 1
    return out


def kinds_table(df: pd.DataFrame, found: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per setting (suite, rule, knob, in that order): relaxed acceptances, the share and the mean cost (nats, a
    proxy) of each token kind, and for a scored suite the problems lost against lossless, and how many of them part
    from lossless first at a relaxed token of each kind, at a tie, or where no rule relaxed ("lost at <class>")."""
    found = relaxations(df) if found is None else found
    if found.empty:
        return pd.DataFrame()
    rows = compared_rows(df)
    rows = rows.assign(rule=rows.apply(rule_name, axis=1), knob=rows.apply(knob_of, axis=1))
    kinds = [k for k in KINDS if (found["kind"] == k).any()] or list(CODE_KINDS)
    out = []
    for (suite, rule, knob), part in found.groupby(["suite", "rule", "knob"]):  # each rule's knobs in a run
        row = {"suite": suite, "rule": rule, "knob": knob, "relaxed": len(part)}
        for kind in kinds:
            of_kind = part[part["kind"] == kind]
            row[f"share {kind}"] = len(of_kind) / len(part)
            row[f"cost {kind}"] = of_kind["cost"].mean() if len(of_kind) else float("nan")
        mine = rows[(rows["suite"] == suite) & (rows["rule"] == rule) & (rows["knob"] == knob)]
        base = rows[(rows["suite"] == suite) & (rows["method"] == "lossless")]
        if mine["score"].notna().any() and len(base):
            lost = _lost_by_first_divergence(mine, base, part)
            row["lost"] = lost.pop("lost")
            row |= {f"lost at {c}": lost.get(c, 0) for c in (*kinds, TIE, NOT_RELAXED)}
        out.append(row)
    return pd.DataFrame(out)
