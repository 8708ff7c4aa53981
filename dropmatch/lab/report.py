"""Presenting a recorded sweep: one self-contained HTML report, and the table, summary and figure files.

The report holds the figures, the tables and the comparison with the paper; this module renders them as HTML and
writes the files (the tables come from dropmatch.tables.summary, dropmatch.tables.tradeoff and dropmatch.lab.claims, the
figures from viz.sweep). plotly.js is inlined once, with the first figure; the others reuse it, so the file opens
offline. The paper's numbers and the reference
measurements (dropmatch.lab.paper) appear only as stated comparisons next to what this sweep measured; every
"this sweep" value is computed from the table.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from dropmatch.embedded import EMBEDDED_ID, EMBEDDED_LABEL
from dropmatch.lab.claims import paper_comparison
from dropmatch.lab.composition import compose
from dropmatch.lab.files import read_manifest
from dropmatch.lab.paper import PAPER_COLUMN, REFERENCE_COLUMN
from dropmatch.lab.sweep import load_sweep, sitting_id, write_tables
from dropmatch.metrics import DEFINITIONS, PROXY_NOTE
from dropmatch.tables.summary import per_category, rows_at
from dropmatch.tables.tradeoff import centre
from dropmatch.tables.verdict import (
    BAR_OF,
    BAR_PROBLEMS,
)
from dropmatch.token_kinds import LABELS as KIND_LABELS
from viz.sweep import FIGURES, relevant, tradeoff
from viz.verdict import kinds_heatmap

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
    "speedup": "tokens/s ÷ tokens/s of lossless on the same prompt and γ, timed in the same sitting; where lossless "
    "was timed in another sitting (a directory recorded in parts, on another machine or under another load), scaled "
    "by what lossless cost per target forward in the two (speed_basis)",
    "speedup_cpu": "as speedup, with tokens per CPU second of the decoding process: fairer on a shared CPU",
    "speed_basis": "how the row's speed ratio was taken: side by side (the row and its lossless baseline timed in one "
    "sitting), adjusted (timed in two sittings, scaled by the median ratio of lossless's seconds per target forward "
    "on the problems both sittings decoded), no baseline (two sittings that timed no problem alike: left empty), "
    "as recorded (rows from before sittings were named)",
    "sittings": "the sittings (boots of a machine) that timed the suite's cells, counted by the CPU each ran on "
    "(sweep.json names each one's machine); speed ratios across them are scaled, see speed_basis",
    "sitting": "the sitting that decoded the cell: one boot of one machine, named by when it booted (UTC) and its boot "
    "id (the id decides: a restored virtual machine can name its boot time seconds off); sweep.json names each "
    "sitting's machine (empty for cells recorded before sittings were named)",
    "speed_adjusted": "share of the setting's problems whose speed ratio was scaled across sittings (speed_basis "
    "adjusted): an estimate, not a side-by-side measurement",
    "score": "the task's own score, 0/1 (HumanEval: the problem's tests pass; word problems: the completion's final "
    "number is the answer); its mean is pass@1 (for word problems, accuracy): the neutral quality measure (the target "
    "log-prob proxies favour rules that threshold p(d))",
}
# What each column of the sweep tables means: shown on hover in the report and in the app's Analysis tab.
COLUMN_DEFINITIONS = (
    {
        k: DEFINITIONS[k]
        for k in (
            "tau",
            "acceptance_rate",
            "relaxed_share",
            "ties",
            "n_tokens",
            "target_forwards",
            "tokens_per_s",
            "first_divergence",
            "equal_share",
            "disagreement",
            "relaxed_of_disagreements",
            "follow_on",
            "disagreement_after_relaxed",
        )
        if k in DEFINITIONS
    }
    | EXTRA_DEFINITIONS
    | {
        "suite": "the prompt suite the row ran on",
        "category": "the prompt's category in its suite",
        "prompt_id": "the prompt's id in its suite",
        "method": "lossless: exact-match speculative decoding (the baseline); dropmatch: lossless OR the criterion; "
        "relative: lossless OR a relative's rule; truncation: the target alone, top-k or min-p sampled (no draft; the "
        "quality reference a relaxed rule must beat at T > 0, greedy target decoding at T = 0)",
        "gamma": "γ, draft tokens proposed per round",
        "K": "number of Monte Carlo dropout paths on the target's LM head",
        "p_drop": "dropout rate on the LM-head input of each path",
        "criterion": "the acceptance rule: a DropMatch criterion on the paths, or a relative; or a truncation of the "
        "target (top-k-sampling, min-p)",
        "knob": "a relative's or a truncation's one setting (threshold, epsilon, k, theta, min_p...; each rule's "
        "own, in dropmatch.criteria.RULES)",
        "span_gate": "whether the rule relaxed only where the span gate let it (inside comments, strings and "
        "whitespace; in a chat turn, off digits): the lossless test decided elsewhere; empty in sweeps recorded "
        "before the gate",
        "family": "how the lossy-verification literature groups the rule: reads the dropout paths, reads the target "
        "only, compares draft and target, or verifies against its own distribution (the target alone for a "
        "truncation; empty for lossless)",
        "length_ratio": "λ, median over prompts of N / N lossless on the same prompt and γ",
        "capped": "share of runs that hit max_new_tokens",
        "loop": "share of runs with a repetition loop: an adjacent span repeated >= 3 times covering >= 15 tokens",
        "loop_relaxed": "share of looping runs whose loop holds a relaxed acceptance",
        "relaxed_cost_mean": "cost of a relaxed acceptance, log p(target top-1) - log p(d) under the unmasked target "
        "(nats), pooled over every relaxed acceptance in the output (ties excluded)" + PROXY_NOTE,
        "mean_logp": "mean over runs of the mean log-probability of the emitted tokens under the unmasked target, nats"
        + PROXY_NOTE,
        "ties": "ties accepted, summed over prompts: at T = 0 drafts whose target logit equals the argmax's (exact "
        "match rejects them only by index order), counted apart from the relaxed acceptances",
        "rule": "lossless, a DropMatch criterion, a relative (Fuzzy SD, typical acceptance, top-k, MARS, FLy, EARS, "
        "lenience, the speculative cascades, the static ensemble, the tie-only control), or a truncation sampling of "
        "the target (top-k-sampling, min-p)",
        "knob_name": "the name of the rule's knob",
        "tau_target": (
            "pooled tau of DropMatch at the reference setting (K 5, p_drop 0.3, js+majority): the tau matched"
        ),
        "basis": "how the knob and the values were found: measured, interpolated between two measured knobs, or not "
        "reached in the knob range run",
        "equal_share": "median share of tokens equal to lossless (same prompt and γ)",
        "score_lossless": "lossless's mean task score on the same problems",
        "lost": "problems lossless solves and this setting does not",
        "gained": "problems this setting solves and lossless does not",
        "mcnemar_p": "two-sided exact McNemar p-value of lost against gained (paired by problem; with several seeds a "
        "problem or several problems a template, the exact sign-flip test of each cluster's summed difference, which "
        "keeps a cluster together)",
        "holm_p": "the exact p-value after Holm's correction for the table's tests (the family-wise error held at 5%)",
        "diff_lower": "one-sided 95% lower bound of score_diff: the more cautious of the paired bootstrap's 5th "
        "percentile (clusters resampled) and Newcombe's score interval; what a non-inferiority claim rests on",
        "diff_upper": "one-sided 95% upper bound of score_diff, the same way: below the bar, the setting is shown "
        "to lose more than it",
        "non_inferior": f"yes: the lower bound clears the bar (-{BAR_PROBLEMS}/{BAR_OF} of the problems); no: the "
        "one-sided 95% upper bound lies below it; cannot tell: the interval straddles it",
        "detectable_loss": "the smallest loss of pass@1 these problems detect at 80% power with a two-sided 5% test, "
        "at this setting's discordance (the power planner; clusters count through their design effect)",
        "detectable_floor": "the smallest loss no number of problems from these clusters (or samples of these "
        "problems) detects at 80% power: a cluster is worth at most 1 / rho independent pairs however many it holds, "
        "so more of the same templates stop helping here; more clusters go lower. Blank where rho is not above 0: "
        "no floor, more problems keep helping",
        "discordance": "share of the paired outcomes where exactly one of the two passes: (lost + gained) / pairs",
        "power_at_loss": "the chance the paired test at two-sided 5% finds the loss asked about, on these problems",
        "problems_to_detect": "problems the paired test needs to find the loss asked about at 80% power (two-sided "
        "5%), at this discordance: [z.975 sqrt(psi) + z.8 sqrt(psi - d^2)]^2 / d^2, times the design effect",
        "problems_for_equivalence": "problems two one-sided tests need to show the difference within the loss asked "
        "about, at 80% power, when it is 0: (z.95 + z.9)^2 psi / d^2, times the design effect",
        "problems_with_samples": "problems needed with this many samples a problem: each is worth m / (1 + (m - 1) "
        "rho) independent ones",
        "loss": "the loss of pass@1 to detect, as a share (0.0122 = 2 of 164 problems)",
        "samples": "samples (seeds) a problem at T > 0",
        "rho": "the intra-problem (or intra-template) correlation of the paired differences",
        "rho_low": "the low end of rho's 95% interval: (design_effect_low - 1) / (pairs a cluster - 1)",
        "rho_high": "the high end of rho's 95% interval, the same way from design_effect_high: the correlation a "
        "plan should allow for",
        "clusters": "independent units the interval and the test resample: problems, or a word problem's templates",
        "design_effect": "how much clustering inflates the variance of score_diff against independent problems "
        "(1: none)",
        "design_effect_low": "the low end of design_effect's 95% percentile interval over 2,000 resamples of the "
        "clusters (templates; rough with few clusters)",
        "design_effect_high": "the high end of design_effect's 95% interval, the same way",
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
        "max_new_tokens": "the most tokens a cell generates after its prompt (a cell that reaches it is capped)",
        "seed": "the random seed: DropMatch's dropout masks, and at T > 0 the sampling draws (at T = 0 only the "
        "masks depend on it)",
        "dtype": "the models' compute type (bfloat16 or float32)",
        "draft_quant": "the draft's weights where not as loaded: int8 weight-only (per-channel scales) or int4 in "
        "groups of 32",
        "draft_vocab": "the draft's vocabulary size where it differs from the target's",
        "temperature": "the sampling temperature; empty at T = 0 (greedy)",
        "batch": "cells decoded at a time, in lockstep rounds, per process (a sweep refills its slots as cells "
        "finish); empty at 1",
        "suite_version": "the generated suite's version: another version is another set of problems",
        "design": "how the settings were chosen: ofat moves one DropMatch factor at a time away from the centre, "
        "grid runs every combination of their values",
        "centre": "the DropMatch setting the tables hold while one factor moves: each factor's most frequent value "
        "among the suite's DropMatch rows (span-gated rows are another rule). sweep.json keeps only the last recording "
        "command's centre, which can differ",
        "varied": "the values each factor and each rule's knob took, over every command that recorded the directory",
        "environment": "where the latest sitting decoded: the CPU (its name, model and whether it multiplies bf16 "
        "natively), the library versions, the threads and CPUs each process used, and the backend and processes "
        "that ran the cells",
        "score_diff": "pass@1 of this setting minus lossless's, on the same problems",
        "diff_low": "low end of the paired bootstrap 95% interval of score_diff (problems resampled, 10,000 times)",
        "diff_high": "high end of the paired bootstrap 95% interval of score_diff",
        "point_within_bar": f"the point estimate of pass@1 at most {BAR_PROBLEMS} of {BAR_OF} problems (that share "
        "of the problems run) below lossless's: a reading, not a test (see non_inferior)",
        "best_tau_non_inferior": "the largest pooled tau among the rule's measured settings shown non-inferior (the "
        "one-sided 95% lower bound clears the bar); empty when none is",
        "best_tau_point_within_bar": "the largest pooled tau among the rule's settings whose point estimate lies "
        "within the bar: a reading only, since the data cannot tell these settings from ones that lose more",
        "knob_point": "the knob of best_tau_point_within_bar",
        "settings": "measured settings (knobs) of the rule",
        "pairs": "paired outcomes compared: one per problem, or one per (problem, seed) in a sampled sweep",
        "rule_a": "the first rule of the pair, at its setting nearest the matched tau",
        "rule_b": "the second rule of the pair, at its setting nearest the matched tau",
        "knob_a": "rule_a's knob",
        "knob_b": "rule_b's knob",
        "tau_a": "rule_a's pooled tau at that knob",
        "tau_b": "rule_b's pooled tau at that knob",
        "score_a": "rule_a's pass@1 on the problems both ran",
        "score_b": "rule_b's pass@1 on the problems both ran",
        "a_only": "problems rule_a solves and rule_b does not",
        "b_only": "problems rule_b solves and rule_a does not",
        "relaxed": "relaxed acceptances inside the scored outputs (ties excluded)",
        "anchor": "a calibration anchor (python -m dropmatch calibrate): unanimity, the paper's effect, its JS spread",
        "of": "problems the most complete rule has run: the setting is still being recorded",
    }
)
PATTERNS = {  # definitions of columns named by a value: "score_at_p0.3", "share identifier"
    "score_at_p": "the rule's pass@1 at DropMatch's pooled tau at this p_drop (js+majority): measured there, "
    "interpolated between its two knobs whose taus bracket it, or at a knob whose own tau lies within 1% (named)",
    "tau_at_p": "DropMatch's pooled tau at this p_drop (js+majority), where the rules' pass@1 is read",
    "basis_p": "how the rule's pass@1 at DropMatch's tau was found",
    "share ": "share of the setting's relaxed acceptances of this token kind",
    "cost ": "mean cost of the relaxed acceptances of this token kind, nats (log p(target top-1) - log p(d)); a proxy",
    "lost at ": "problems lost against lossless whose output first parts from lossless's at a token of this class: "
    "a relaxed acceptance of that kind, a tie, or none of the rule's (the target chose otherwise)",
}


def definition(column: str) -> str | None:
    """A column's definition; a per-category column such as "dropmatch tau" takes its metric's."""
    words = str(column).split()
    pattern = next((about for prefix, about in PATTERNS.items() if str(column).startswith(prefix)), None)
    if pattern and str(column).startswith(("share ", "cost ", "lost at ")):
        pattern += f" ({KIND_LABELS.get(words[-1], words[-1])})"
    return COLUMN_DEFINITIONS.get(column) or pattern or (COLUMN_DEFINITIONS.get(words[-1]) if words else None)


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


def _settings(manifest: dict, df: pd.DataFrame) -> pd.DataFrame:
    """One row per suite: the run-wide settings, the design and the environment the timings come from. The centre
    is the one the suite's tables hold (`centre`), in the design's order; the recorded design's only where no
    DropMatch row ran."""
    rows = []
    for suite, entry in manifest.items():
        design, run = entry.get("design") or {}, entry.get("run", {})
        held = centre(df[df["suite"] == suite]) or design.get("centre") or {}
        order = [*(design.get("centre") or {}), *held]
        held = {k: held[k] for k in dict.fromkeys(order) if k in held}
        embedded_pair = run.get("target_id") == EMBEDDED_ID and run.get("draft_id") == EMBEDDED_ID
        weights = EMBEDDED_LABEL if embedded_pair else f"{run.get('target_id')} target, {run.get('draft_id')} draft"
        rows.append(
            {
                "suite": suite,
                **run,
                "weights": weights,
                "design": design.get("design"),
                "centre": " ".join(f"{k}={v}" for k, v in held.items()),
                "varied": "; ".join(
                    f"{k}: {', '.join(map(str, v))}"
                    for k, v in {**(design.get("grid") or {}), **(design.get("rules") or {})}.items()
                    if v
                ),
                "environment": ", ".join(f"{k} {v}" for k, v in (design.get("environment") or {}).items()),
                **({"sittings": _sittings(design["sittings"])} if design.get("sittings") else {}),
            }
        )
    return pd.DataFrame(rows)


def _sittings(sittings: dict) -> str:
    """The sittings that timed a suite's cells, counted by CPU: "2: AMD EPYC (1), Intel(R) Xeon(R) Processor (1)",
    the CPU's model beside its name where the sitting recorded it ("Intel(R) Xeon(R) Processor GenuineIntel 6/207/2":
    one name can cover several models). Names of one boot count once (`sitting_id`)."""
    boots = {}
    for name, env in sittings.items():
        boots.setdefault(sitting_id(name), env)
    cpus = pd.Series(
        [" ".join(filter(None, [env.get("cpu", "unknown CPU"), env.get("cpu_model")])) for env in boots.values()]
    ).value_counts()
    return f"{len(boots)}: " + ", ".join(f"{cpu} ({n})" for cpu, n in cpus.items())


def _definitions(df: pd.DataFrame) -> str:
    """The glossary of the report's columns; the round columns only where the sweep kept the per-token reasons they
    are counted from (older sweeps did not, and their tables have no such columns)."""
    names = [
        "tau",
        "acceptance_rate",
        "relaxed_share",
        "speedup",
        "first_divergence",
        "equal_share",
        "tau_gain",
        "speedup_cpu",
        "speed_basis",
        "score",
        "ties",
        "relaxed_cost_mean",
        "mean_logp",
        "disagreement",
        "follow_on",
        "family",
    ]
    if "reasons" not in df or not df["reasons"].map(lambda r: isinstance(r, str)).any():
        names = [k for k in names if k not in ("disagreement", "follow_on")]
    return "<ul>" + "".join(f"<li><b>{k}</b>: {html.escape(COLUMN_DEFINITIONS[k])}</li>" for k in names) + "</ul>"


def _samples(part: pd.DataFrame, n: int = 3) -> str:
    """The first prompts' outputs, lossless next to DropMatch at the centre: what lossiness looks like."""
    c = centre(part)
    base, dm = rows_at(part, "lossless", gamma=c["gamma"]), rows_at(part, "dropmatch", **c)
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


VERDICT_NOTE = (
    "Is a relaxed acceptance worth it? Each rule's task score against lossless, problem by problem, on the settings "
    "that ran every problem ({bar}); the shaded band in the figure is the field's bar for quality kept. A setting is "
    "non-inferior only where its one-sided 95% lower bound clears the bar; a point estimate inside the bar is a "
    "reading, not a claim. Intervals are paired bootstrap intervals over problems, p-values exact McNemar tests on "
    "the discordant problems, Holm-corrected across each table (with several seeds a problem, or several problems "
    "a template, a cluster is kept together in both); rules are compared only at settings within 0.1 of one tau."
)


def _suite_section(suite: str, part: pd.DataFrame, inline_js: bool) -> str:
    """One suite's composition (`composition.compose`, as the Analysis tab has it): its figures and the trade-off on
    its whole settings, the verdict with its curves, where relaxation happens, the per-setting table of every
    setting, and at the centre setting the categories and sample outputs."""
    c = compose(part, definition, VERDICT_NOTE)
    parts = [f"<h2>Suite: {html.escape(str(suite))} ({part['prompt_id'].nunique()} prompts)</h2>"]
    names = [name for name, fig in c.figures.items() if fig is not None and name != "tradeoff"]  # its own section
    for i, name in enumerate(names):
        parts.append(_figure_html(c.figures[name], f"{suite}-{name}", inline_js and i == 0))
    first = inline_js and not names
    if c.measures:
        parts.append(f"<h3>DropMatch beside its relatives</h3><p class=note>{MATCHED_NOTE}</p>")
        parts.append(table_html(c.matched) if len(c.matched) else "")
        for i, measure in enumerate(c.measures):
            fig = tradeoff(c.judged, measure)
            parts.append(_figure_html(fig, f"{suite}-tradeoff-{measure}", first and i == 0))
    if c.verdict:
        parts.append(f"<h3>The verdict</h3>{_figure_html(c.curves, f'{suite}-score-curves', first)}{c.verdict}")
        if c.by_kind is not None:
            parts.append(_figure_html(c.by_kind, f"{suite}-by-kind", False))
    if len(c.kinds):
        parts.append("<h3>Where relaxation happens</h3>" + table_html(c.kinds.drop(columns=["suite"])))
        parts.append(_figure_html(kinds_heatmap(c.kinds), f"{suite}-kinds", first))
    parts.append("<h3>Per setting (medians over prompts; shares of runs and costs pooled)</h3>")
    parts.append(table_html(c.summary.drop(columns=["suite"])))
    if centre(c.judged):
        parts.append(
            "<h3>Per category, centre setting (medians; the score the share solved)</h3>"
            + table_html(per_category(c.judged))
        )
        parts.append("<h3>Sample outputs, centre setting</h3>" + _samples(c.judged))
    return "".join(parts)


def render(df: pd.DataFrame, manifest: dict, title: str = "DropMatch sweep report") -> str:
    """The report as one HTML string; plotly.js is inlined with the first figure only."""
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        "<h2>Settings</h2>" + table_html(_settings(manifest, df)),
        "<h2>Definitions</h2>" + _definitions(df),
        f"<h2>Comparison with the paper</h2><p class=note>{NOTE}</p>" + table_html(paper_comparison(df)),
    ]
    parts += [_suite_section(suite, part, i == 0) for i, (suite, part) in enumerate(df.groupby("suite"))]
    parts.append("<p class=note>Per-prompt rows: table.csv in the sweep directory.</p>")
    head = f"<meta charset=utf-8><title>{html.escape(title)}</title><style>{CSS}</style>"
    return f"<!doctype html><html><head>{head}</head><body>{''.join(parts)}</body></html>"


def write_report(source: str | Path, out: str | Path | None = None, limit: int | None = None) -> Path:
    """Render the sweep in `source` into `out` (default: source/report.html); with `limit`, on each suite's first
    `limit` problems only (`sweep.first_problems`; default: source/report_first<limit>.html, so the whole
    recording's report stays as it is)."""
    df, manifest = load_sweep(source, limit), read_manifest(source)
    name = f"report_first{limit}.html" if limit else "report.html"
    path = Path(out) if out else Path(source) / name
    title = f"DropMatch sweep report: each suite's first {limit} problems" if limit else "DropMatch sweep report"
    path.write_text(render(df, manifest, title), encoding="utf-8")
    return path


def write_outputs(out_dir: str | Path) -> pd.DataFrame:
    """table.csv, summary.csv (`sweep.write_tables`) and an HTML file per relevant figure and suite (plotly.js from
    its CDN) in the dir."""
    out, df = Path(out_dir), write_tables(out_dir)
    (out / "figures").mkdir(exist_ok=True)
    for suite, part in df.groupby("suite"):
        for name in relevant(part):
            path = out / "figures" / f"{suite}_{name}.html"  # a stable div id: the same sweep, the same file
            FIGURES[name](part).write_html(path, include_plotlyjs="cdn", div_id=f"{suite}-{name}")
    return df
