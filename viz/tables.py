"""The app's tables: the metrics of each run (dropmatch.metrics values, formatted, with every definition), and the HTML
tables of the Analysis tab, headed in plain words with each column's definition one hover or tap away."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Collection

import pandas as pd

from dropmatch.metrics import DEFINITIONS, summary_table
from dropmatch.trace import Trace

ROWS = {
    "tau": "τ, mean acceptance length",
    "tau_minus_1": "τ − 1, accepted drafts per round",
    "acceptance_rate": "draft acceptance rate",
    "per_position": "per-position rates r_1..r_γ",
    "histogram": "histogram h[0..γ]",
    "relaxed_share": "relaxed-acceptance share",
    "n_tokens": "generated tokens N",
    "target_forwards": "target forwards T",
    "draft_forwards": "draft forwards",
    "head_products": "LM-head products",
    "wall_s": "wall time (s)",
    "tokens_per_s": "tokens/s",
    "overhead_share": "paths + criteria time share",
    "speedup": "speedup (tokens/s ÷ baseline)",
    "first_divergence": "outputs part at token",
    "equal_share": "equal-token share",
}
DIGITS = {"tau": 2, "tau_minus_1": 2, "wall_s": 2, "tokens_per_s": 2, "speedup": 2}
# the page counts tokens from 1, as the status line does (the library's metric is a 0-based index)
FROM_ONE = {
    "first_divergence": "the first generated token, counted from 1, where the output departs from the "
    "baseline's; a dash if it never does"
}


def fmt(value, digits: int = 3) -> str:
    """A metric value as table text: lists joined, floats rounded, missing values as a dash."""
    if isinstance(value, (list, tuple)):
        return " · ".join(fmt(v, 2) for v in value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.{digits}f}"
    if isinstance(value, float):
        return str(int(value))
    return str(value)


def metrics_frame(
    traces: dict[str, Trace | None], baseline: str | None = "lossless", measured: dict[str, dict] | None = None
) -> pd.DataFrame:
    """Rows = metrics (ROWS order), one column per run (a dash where a run is missing), and each definition.

    measured: the runs' metrics already computed, by the same names as `traces` (the others are computed here).
    """
    present = {name: t for name, t in traces.items() if t is not None}
    base = baseline if baseline in present else None
    table = summary_table(present, base, measured) if present else pd.DataFrame()
    rows = []
    for key, label in ROWS.items():
        row = {"metric": label}
        for name in traces:
            value = table.at[key, name] if name in table.columns and key in table.index else None
            if name == baseline and key == "speedup" and name in present:
                value = 1.0
            if key in FROM_ONE and value is not None and not pd.isna(value):
                value = int(value) + 1
            row[name] = fmt(value, DIGITS.get(key, 3))
        row["definition"] = FROM_ONE.get(key, DEFINITIONS[key])
        rows.append(row)
    return pd.DataFrame(rows, columns=["metric", *traces, "definition"])


def _cell(value) -> str:
    """A table cell's text: floats to 3 significant digits, yes / no, empty where missing."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or (not isinstance(value, (str, list, tuple, dict)) and pd.isna(value)):
        return ""
    return html.escape(f"{value:.3g}" if isinstance(value, float) else str(value))


def word_table(
    df: pd.DataFrame,
    about: Callable[[str], str | None],
    words: Callable[[str], str] = str,
    wide: Collection[str] = (),
    stack: bool = False,
) -> str:
    """An HTML table headed in plain words (`words` of each column's name), whose header titles keep the column's name
    and definition (`about`): the definition is one hover away, and on a phone one tap (the page's script shows it).
    Every cell carries its header as data-label; the `wide` columns are marked for a wide page only (class dm-wide);
    `stack`: on a phone each row becomes a card of labelled lines, its first and last columns on top."""
    head = ""
    for column in df.columns:
        name, shown = str(column), words(str(column))
        title = ": ".join(filter(None, [name if shown != name else "", about(name)]))  # the table's own name first
        attrs = (f' title="{html.escape(title)}"' if title else "") + (" class=dm-wide" if name in wide else "")
        head += f"<th{attrs}>{html.escape(shown)}</th>"
    labels = [
        f' data-label="{html.escape(words(str(c)))}"' + (" class=dm-wide" if str(c) in wide else "") for c in df.columns
    ]
    rows = ("".join(f"<td{a}>{_cell(v)}</td>" for a, v in zip(labels, row)) for row in df.itertuples(index=False))
    body = "".join(f"<tr>{cells}</tr>" for cells in rows)
    kind = "dm-table dm-stack" if stack else "dm-table"
    return f'<div class=scroll><table class="{kind}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
