"""Presenting a recorded sweep: the summary table, figure files, and one self-contained HTML report.

The report holds the figures, the tables and the comparison with the paper. plotly.js is inlined once, with
the first figure; the others reuse it, so the file opens offline. The paper's numbers and the reference
measurements (dropmatch.lab.paper) appear only as stated comparisons next to what this sweep measured; every
"this sweep" value is computed from the table.
"""

from __future__ import annotations

import html
import json
import math
import numbers
from pathlib import Path

import pandas as pd

from dropmatch.embedded import EMBEDDED_ID, EMBEDDED_LABEL
from dropmatch.lab.paper import PAPER, PAPER_COLUMN, REFERENCE_COLUMN
from dropmatch.lab.sweep import MANIFEST, SETTING_COLUMNS, TABLE, load_sweep
from dropmatch.metrics import DEFINITIONS, pooled_tau
from dropmatch.tradeoff import compared_rows, knob_of, matched_table, rule_name, setting_points
from viz.sweep import FIGURES, centre, held, relevant, tradeoff, tradeoff_measures


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per suite x setting: medians over prompts, pooled tau (sum N / sum T) and the task score."""
    keys = ["suite", *SETTING_COLUMNS]
    g = df.groupby(keys, dropna=False, sort=True)
    medians = [
        "tau",
        "acceptance_rate",
        "tokens_per_s",
        "speedup",
        "speedup_cpu",
        "tau_gain",
        "first_divergence",
        "equal_share",
        "loadavg",
    ]
    out = g[[*medians, "length_ratio"]].median()
    out.insert(0, "prompts", g.size())
    out.insert(2, "tau_pooled", g.apply(lambda rows: pooled_tau(rows["n_tokens"], rows["target_forwards"])))
    out["score"] = g["score"].mean()
    for rate in ("capped", "loop", "loop_relaxed"):  # shares of runs (of looping runs for loop_relaxed)
        out[rate] = g[rate].mean()
    out["relaxed_cost_mean"] = g.apply(
        lambda rows: (
            rows["relaxed_cost_sum"].sum() / rows["relaxed_emitted"].sum()
            if rows["relaxed_emitted"].sum() > 0
            else float("nan")
        )
    )
    out["mean_logp"] = g["mean_logp"].mean()
    # lossless first at each gamma, then DropMatch, then the relatives
    order = ["suite", "gamma", "method", "K", "p_drop", "criterion", "knob"]
    rank = {"lossless": 0, "dropmatch": 1, "relative": 2}
    out = out.reset_index()
    out = out.sort_values(order, key=lambda c: c.map(rank) if c.name == "method" else c, ignore_index=True)
    return out.dropna(axis=1, how="all")


def _pooled(rows: pd.DataFrame) -> float:
    return pooled_tau(rows["n_tokens"], rows["target_forwards"])


def _at(df: pd.DataFrame, method: str, **factors) -> pd.DataFrame:
    rows = df[df["method"] == method]
    for name, value in factors.items():
        rows = rows[rows[name] == value]
    return rows


def _gain(df: pd.DataFrame, gamma) -> str | None:
    """Pooled tau of lossless and of DropMatch at the centre with this gamma."""
    base, dm = _at(df, "lossless", gamma=gamma), _at(df, "dropmatch", **{**centre(df), "gamma": gamma})
    if base.empty or dm.empty:
        return None
    a, b = _pooled(base), _pooled(dm)
    return (
        f"γ {gamma}: {b / a - 1:+.0%} (pooled tau {a:.2f} → {b:.2f}; median per prompt {dm['tau_gain'].median():+.0%})"
    )


def _speedups(df: pd.DataFrame) -> str | None:
    med = held(df, "gamma").groupby("gamma")[["speedup", "speedup_cpu"]].median().dropna(how="all")
    text = ", ".join(f"γ {g}: {r.speedup:.2f}x wall, {r.speedup_cpu:.2f}x CPU time" for g, r in med.iterrows())
    load = df["loadavg"].median()
    during = f"; timed under a median 1-minute load of {load:.1f}" if pd.notna(load) else ""
    return f"{text} (medians over prompts{during})" if len(med) else None


def _sweep_of(df: pd.DataFrame, factor: str) -> str | None:
    dm = held(df, factor)
    if dm[factor].nunique() < 2:
        return None
    taus = dm.groupby(factor)["tau"].median()
    base = _at(df, "lossless", gamma=centre(df)["gamma"])["tau"].median()
    values = " / ".join(f"{v:.2f}" for v in taus)
    names = " / ".join(f"{k:g}" if isinstance(k, numbers.Number) else str(k) for k in taus.index)
    return f"{values} for {factor} {names} (lossless {base:.2f}; medians)"


def mcnemar_p(lost: int, gained: int) -> float:
    """Two-sided exact McNemar test: the discordant pairs against Binomial(lost + gained, 1/2)."""
    n = lost + gained
    tail = sum(math.comb(n, i) for i in range(min(lost, gained) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _score(df: pd.DataFrame) -> str | None:
    """Mean task score of lossless and DropMatch at the centre, and the paired test on the problems both ran."""
    scored, c = df.dropna(subset=["score"]), centre(df)
    base, dm = _at(scored, "lossless", gamma=c["gamma"]), _at(scored, "dropmatch", **c)
    if base.empty or dm.empty:
        return None
    pairs = base.merge(dm, on="prompt_id", suffixes=("", "_dm"))
    lost = int(((pairs["score"] == 1) & (pairs["score_dm"] == 0)).sum())
    gained = int(((pairs["score"] == 0) & (pairs["score_dm"] == 1)).sum())
    a, b = base["score"].mean(), dm["score"].mean()
    return (
        f"pass@1 {a:.1%} → {b:.1%} ({(b - a) * 100:+.1f} points, {len(dm)} problems; {lost} lost, {gained} gained, "
        f"exact McNemar p = {mcnemar_p(lost, gained):.2f})"
    )


def paired_scores(df: pd.DataFrame) -> pd.DataFrame:
    """Every setting's task score against lossless on the same problems (same γ): problems lost and gained and
    the exact McNemar p-value, one row per setting at the compared γ."""
    scored = df.dropna(subset=["score"])
    if scored.empty:
        return pd.DataFrame()
    points = setting_points(scored).set_index(["rule", "knob"])
    rows = compared_rows(scored).assign(
        rule=lambda d: d.apply(rule_name, axis=1), knob=lambda d: d.apply(knob_of, axis=1)
    )
    base = rows[rows["method"] == "lossless"][["prompt_id", "score"]]
    out = []
    for (rule, knob), part in rows[rows["method"] != "lossless"].groupby(["rule", "knob"], sort=False):
        pairs = base.merge(part[["prompt_id", "score"]], on="prompt_id", suffixes=("", "_rule"))
        lost = int(((pairs["score"] == 1) & (pairs["score_rule"] == 0)).sum())
        gained = int(((pairs["score"] == 0) & (pairs["score_rule"] == 1)).sum())
        out.append(
            {
                "rule": rule,
                "knob": knob,
                "problems": len(pairs),
                "tau": points.loc[(rule, knob), "tau"],
                "score": part["score"].mean(),
                "score_lossless": pairs["score"].mean(),
                "lost": lost,
                "gained": gained,
                "mcnemar_p": mcnemar_p(lost, gained),
            }
        )
    return pd.DataFrame(out)


def _korean(df: pd.DataFrame) -> str | None:
    ko, c = df[df["category"] == "korean"], centre(df)
    if ko.empty:
        return None
    return f"pooled tau {_pooled(_at(ko, 'lossless', gamma=c['gamma'])):.2f} → {_pooled(_at(ko, 'dropmatch', **c)):.2f}"


def paper_comparison(df: pd.DataFrame) -> pd.DataFrame:
    """One row per claim: the paper, the reference implementation, and this sweep (per suite, computed)."""
    ours = {key: [] for key in PAPER}
    for suite, part in df.groupby("suite"):
        if not centre(part):
            continue
        longest = max(part["gamma"])
        values = {
            "gain5": _gain(part, 5),
            "gain_long": _gain(part, longest) if longest > 5 else None,
            "speedup": _speedups(part),
            "score": _score(part),
            "humaneval": _gain(part, centre(part)["gamma"]) if suite == "humaneval" else None,
            "korean": _korean(part),
            "p_drop": _sweep_of(part, "p_drop"),
            "K": _sweep_of(part, "K"),
            "criterion": _sweep_of(part, "criterion"),
        }
        for key, value in values.items():
            if value is not None:
                ours[key].append(f"{suite}: {value}")
    rows = [
        (claim, paper, ref, "; ".join(ours[key]) or "not in this sweep") for key, (claim, paper, ref) in PAPER.items()
    ]
    return pd.DataFrame(rows, columns=["claim", PAPER_COLUMN, REFERENCE_COLUMN, "this sweep"])


CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:.85em;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .5em}
th{background:#f3f3f3;text-align:left}h2{border-bottom:2px solid #ddd}.note{color:#555;font-size:.9em}
.scroll{overflow-x:auto}.samples td{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:.95em}"""
NOTE = (
    "The paper ran 8B→70B and 4B→32B pairs with vLLM on 4x A100 at draft length 10; this sweep runs the embedded "
    "0.5B→1.5B pair on the machine named in the settings. Paper values are quoted, not measured here."
)
EXTRA_DEFINITIONS = {
    "tau_gain": "tau of the row ÷ tau of lossless on the same prompt and γ, minus 1",
    "speedup": "tokens/s ÷ tokens/s of lossless on the same prompt and γ",
    "speedup_cpu": "as speedup, with tokens per CPU second of the decoding process: fairer on a shared CPU",
    "score": "the task's own score (HumanEval: the problem's tests pass, 0/1); its mean is pass@1",
}
# What each column of the sweep tables means: shown on hover in the report and in the app's Analysis tab.
COLUMN_DEFINITIONS = (
    {
        k: DEFINITIONS[k]
        for k in (
            "tau",
            "acceptance_rate",
            "relaxed_share",
            "n_tokens",
            "target_forwards",
            "tokens_per_s",
            "first_divergence",
            "equal_share",
        )
        if k in DEFINITIONS
    }
    | EXTRA_DEFINITIONS
    | {
        "suite": "the prompt suite the row ran on",
        "category": "the prompt's category in its suite",
        "prompt_id": "the prompt's id in its suite",
        "method": "lossless: exact-match speculative decoding (the baseline); dropmatch: lossless OR the criterion",
        "gamma": "γ, draft tokens proposed per round",
        "K": "number of Monte Carlo dropout paths on the target's LM head",
        "p_drop": "dropout rate on the LM-head input of each path",
        "criterion": "the acceptance rule: a DropMatch criterion on the paths, or a relative",
        "knob": "a relative's one setting (threshold, epsilon, k or theta; dropmatch.config.KNOBS)",
        "length_ratio": "λ, median over prompts of N / N lossless on the same prompt and γ",
        "capped": "share of runs that hit max_new_tokens",
        "loop": "share of runs with a repetition loop: an adjacent span repeated >= 3 times covering >= 15 tokens",
        "loop_relaxed": "share of looping runs whose loop holds a relaxed acceptance",
        "relaxed_cost_mean": "cost of a relaxed acceptance, log p(target top-1) - log p(d) under the unmasked target "
        "(nats), pooled over every relaxed acceptance in the output",
        "mean_logp": "mean over runs of the mean log-probability of the emitted tokens under the unmasked target, nats",
        "rule": "lossless, a DropMatch criterion, or a relative (Fuzzy SD, typical acceptance, top-k, MARS)",
        "knob_name": "the name of the rule's knob",
        "tau_target": "pooled tau of DropMatch at its reference setting (K 5, p_drop 0.3, js+majority): matched",
        "basis": "how the knob and the values were found: measured, interpolated between two measured knobs, or not "
        "reached in the knob range run",
        "equal_share": "median share of tokens equal to lossless (same prompt and γ)",
        "score_lossless": "lossless's mean task score on the same problems",
        "lost": "problems lossless solves and this setting does not",
        "gained": "problems this setting solves and lossless does not",
        "mcnemar_p": "two-sided exact McNemar p-value of lost against gained (paired by problem)",
        "problems": "problems scored with both this setting and lossless",
        "prompts": "prompts (cells) behind this row",
        "tau_pooled": "sum N / sum T over this row's prompts: tokens per target forward, pooled",
        "loadavg": "1-minute system load when the cell finished: how contended its timings were",
        "tau_lossless": "tau of lossless on the same prompt and γ",
        "claim": "what is compared",
        PAPER_COLUMN: "the paper's reported value (8B→70B, 4B→32B pairs, vLLM, 4x A100), quoted",
        REFERENCE_COLUMN: "a minimal first implementation's measurement on the embedded pair, quoted",
        "this sweep": "computed from this sweep's table",
        "weights": "the model pair and what its weights are (the embedded pair is 4-bit GGUF, not the bf16 originals)",
        "target_id": "the target model: a hub id, a local path, or 'embedded'",
        "draft_id": "the draft model: a hub id, a local path, or 'embedded'",
    }
)


def definition(column: str) -> str | None:
    """A column's definition; a per-category column such as "dropmatch tau" takes its metric's."""
    words = str(column).split()
    return COLUMN_DEFINITIONS.get(column) or (COLUMN_DEFINITIONS.get(words[-1]) if words else None)


def _cell(value) -> str:
    if value is None or (not isinstance(value, (str, list, tuple, dict)) and pd.isna(value)):
        return ""
    return html.escape(f"{value:.3g}" if isinstance(value, float) else str(value))


def table_html(df: pd.DataFrame) -> str:
    """A plain HTML table whose column headers carry their definitions as hover titles (floats to 3 digits)."""
    head = ""
    for column in df.columns:
        about = definition(column)
        title = f' title="{html.escape(about)}"' if about else ""
        head += f"<th{title}>{html.escape(str(column))}</th>"
    rows = ("".join(f"<td>{_cell(v)}</td>" for v in row) for row in df.itertuples(index=False))
    body = "".join(f"<tr>{cells}</tr>" for cells in rows)
    return f"<div class=scroll><table class=dm-table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def _settings(manifest: dict) -> pd.DataFrame:
    """One row per suite: the run-wide settings, the design and the environment the timings come from."""
    rows = []
    for suite, entry in manifest.items():
        design, run = entry.get("design") or {}, entry.get("run", {})
        embedded_pair = run.get("target_id") == EMBEDDED_ID and run.get("draft_id") == EMBEDDED_ID
        weights = EMBEDDED_LABEL if embedded_pair else f"{run.get('target_id')} target, {run.get('draft_id')} draft"
        rows.append(
            {
                "suite": suite,
                **run,
                "weights": weights,
                "design": design.get("design"),
                "centre": " ".join(f"{k}={v}" for k, v in (design.get("centre") or {}).items()),
                "varied": "; ".join(
                    f"{k}: {', '.join(map(str, v))}"
                    for k, v in {**(design.get("grid") or {}), **(design.get("rules") or {})}.items()
                    if v
                ),
                "environment": ", ".join(f"{k} {v}" for k, v in (design.get("environment") or {}).items()),
            }
        )
    return pd.DataFrame(rows)


def _definitions() -> str:
    names = [
        "tau",
        "acceptance_rate",
        "relaxed_share",
        "speedup",
        "first_divergence",
        "equal_share",
        "tau_gain",
        "speedup_cpu",
        "score",
    ]
    return "<ul>" + "".join(f"<li><b>{k}</b>: {html.escape(COLUMN_DEFINITIONS[k])}</li>" for k in names) + "</ul>"


def _per_category(part: pd.DataFrame) -> pd.DataFrame:
    """Medians per category for lossless and DropMatch at the centre setting, one column per metric x method."""
    c = centre(part)
    rows = pd.concat([_at(part, "lossless", gamma=c["gamma"]), _at(part, "dropmatch", **c)])
    per = (
        rows.groupby(["category", "method"])[["tau", "speedup", "speedup_cpu", "equal_share", "score"]]
        .median()
        .unstack("method")
    )
    per.columns = [f"{m} {v}" for v, m in per.columns]
    return per.reset_index().dropna(axis=1, how="all")


def _samples(part: pd.DataFrame, n: int = 3) -> str:
    """The first prompts' outputs, lossless next to DropMatch at the centre: what lossiness looks like."""
    c = centre(part)
    base, dm = _at(part, "lossless", gamma=c["gamma"]), _at(part, "dropmatch", **c)
    both = base.merge(dm, on="prompt_id", suffixes=(" lossless", " DropMatch")).head(n)
    cols = ["prompt_id", "text lossless", "text DropMatch", "first_divergence DropMatch"]
    cols += ["score lossless", "score DropMatch"] if both["score lossless"].notna().any() else []
    shown = both[cols].rename(columns={"first_divergence DropMatch": "first divergence"})
    styled = shown.style.hide(axis="index").format(escape="html", na_rep="", precision=0)  # keeps the newlines
    styled = styled.set_uuid(f"samples-{part['suite'].iloc[0]}")  # stable ids: the same sweep, the same file
    return f"<div class=scroll>{styled.set_table_attributes('class=samples').to_html()}</div>"


MATCHED_NOTE = (
    "Each relative at the knob where its pooled tau equals DropMatch's at the reference setting, and its quality "
    "there (interpolated linearly between the two measured knobs around it, or measured where it ran). Lower cost, "
    "fewer loops, λ nearer 1, more equal tokens and a higher score mean the same speed bought with less damage."
)


def _figure_html(figure, div_id: str, inline_js: bool) -> str:
    return figure.to_html(full_html=False, include_plotlyjs=inline_js, div_id=div_id)


def _tradeoff_section(suite: str, part: pd.DataFrame, inline_js: bool) -> str:
    """The matched-tau table and one speed / quality figure per measure, where the sweep ran relatives."""
    if not (part["method"] == "relative").any():
        return ""
    out = [f"<h3>DropMatch beside its relatives</h3><p class=note>{MATCHED_NOTE}</p>"]
    matched = matched_table(part)
    if len(matched):
        out.append(table_html(matched))
    paired = paired_scores(part)
    if len(paired):
        out.append("<h4>Task score against lossless, problem by problem</h4>" + table_html(paired))
    for i, measure in enumerate(tradeoff_measures(part)):
        out.append(_figure_html(tradeoff(part, measure), f"{suite}-tradeoff-{measure}", inline_js and i == 0))
    return "".join(out)


def _suite_section(suite: str, part: pd.DataFrame, inline_js: bool) -> str:
    parts = [f"<h2>Suite: {html.escape(str(suite))} ({part['prompt_id'].nunique()} prompts)</h2>"]
    names = [name for name in relevant(part) if name != "tradeoff"]  # the trade-off gets its own section
    for i, name in enumerate(names):
        parts.append(_figure_html(FIGURES[name](part), f"{suite}-{name}", inline_js and i == 0))
    parts.append(_tradeoff_section(suite, part, inline_js and not names))
    parts.append(
        "<h3>Per setting (medians over prompts; shares of runs and costs pooled)</h3>"
        + table_html(summary(part).drop(columns=["suite"]))
    )
    if centre(part):
        parts.append("<h3>Per category, centre setting (medians)</h3>" + table_html(_per_category(part)))
        parts.append("<h3>Sample outputs, centre setting</h3>" + _samples(part))
    return "".join(parts)


def render(df: pd.DataFrame, manifest: dict, title: str = "DropMatch sweep report") -> str:
    """The report as one HTML string; plotly.js is inlined with the first figure only."""
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        "<h2>Settings</h2>" + table_html(_settings(manifest)),
        "<h2>Definitions</h2>" + _definitions(),
        f"<h2>Comparison with the paper</h2><p class=note>{NOTE}</p>" + table_html(paper_comparison(df)),
    ]
    parts += [_suite_section(suite, part, i == 0) for i, (suite, part) in enumerate(df.groupby("suite"))]
    parts.append("<p class=note>Per-prompt rows: table.csv in the sweep directory.</p>")
    head = f"<meta charset=utf-8><title>{html.escape(title)}</title><style>{CSS}</style>"
    return f"<!doctype html><html><head>{head}</head><body>{''.join(parts)}</body></html>"


def write_report(source: str | Path, out: str | Path | None = None) -> Path:
    """Render the sweep in `source` into `out` (default: source/report.html)."""
    df = load_sweep(source)
    manifest_path = Path(source) / MANIFEST
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
    path = Path(out) if out else Path(source) / "report.html"
    path.write_text(render(df, manifest), encoding="utf-8")
    return path


def write_outputs(out_dir: str | Path) -> pd.DataFrame:
    """table.csv, summary.csv and an HTML file per relevant figure and suite (plotly.js from its CDN) in the dir."""
    out, df = Path(out_dir), load_sweep(out_dir)
    df.to_csv(out / TABLE, index=False)
    summary(df).to_csv(out / "summary.csv", index=False)
    (out / "figures").mkdir(exist_ok=True)
    for suite, part in df.groupby("suite"):
        for name in relevant(part):
            path = out / "figures" / f"{suite}_{name}.html"  # a stable div id: the same sweep, the same file
            FIGURES[name](part).write_html(path, include_plotlyjs="cdn", div_id=f"{suite}-{name}")
    return df
