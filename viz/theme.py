"""The one visual theme: colour and label per token reason, method colours, layout defaults, shared figure helpers."""

from __future__ import annotations

import html
import re
import textwrap

import plotly.graph_objects as go

from dropmatch.criteria import ACCEPT_REASONS, REASONS, RELATIVE_REASONS, RULES, SEMANTIC_REASONS
from dropmatch.trace import KINDS

# The tokens the target made and the drafts no rule accepted: their colour, label, meaning and mark. An accepted
# draft's reason carries its own (the registry's: `dropmatch.criteria.REASONS`, each rule's from its entry).
_TARGET_MADE = {
    "correction": ("#fdba74", "correction", "emitted by the unmasked target head at the first rejected position", "c"),
    "bonus": ("#93c5fd", "bonus", "emitted by the unmasked target head after all drafts were accepted", "+"),
    "rejected": ("#f87171", "rejected draft", "the first draft token no rule accepts; the correction replaces it", ""),
    "skipped": ("#e5e7eb", "skipped draft", "drafted after a rejection, never used", ""),
    "target": ("#d1d5db", "target token", "emitted by target-only decoding", ""),
}
# One colour, label, line of meaning and mark per record.reason, reused by every figure and by the coloured text.
REASON_COLORS = {
    **{name: reason.color for name, reason in REASONS.items()},
    **{name: color for name, (color, *_rest) in _TARGET_MADE.items()},
}
REASON_LABELS = {
    **{name: reason.label for name, reason in REASONS.items()},
    **{name: label for name, (_c, label, *_rest) in _TARGET_MADE.items()},
}
REASON_HELP = {
    **{name: reason.meaning for name, reason in REASONS.items()},
    **{name: meaning for name, (_c, _l, meaning, _m) in _TARGET_MADE.items()},
}
# A letter after each token that was not an exact match: colour is never the only cue (and the legend shows them).
REASON_MARKS = {
    **{name: reason.mark for name, reason in REASONS.items() if reason.mark},
    **{name: mark for name, (*_rest, mark) in _TARGET_MADE.items() if mark},
}
# The maps' cells carry the same letters, and a mark for a rejected and a skipped draft (an exact match has none).
CELL_MARKS = {**REASON_MARKS, "rejected": "✗", "skipped": "○"}
SEMANTIC = SEMANTIC_REASONS  # a DropMatch criterion accepted what lossless rejects
RELAXED = (*SEMANTIC_REASONS, *RELATIVE_REASONS)  # every reason a lossless-rejected draft can be accepted for
# The reasons an emitted token can carry (an accepted draft's, or the kind of a token the target made), in the
# legend's order.
OUTPUT_REASONS = tuple(r for r in REASON_LABELS if r in ACCEPT_REASONS or r in KINDS)

DIVERGENCE_LABEL = "first divergence"
DIVERGENCE_COLOR = "#111827"
DIVERGENCE_MARK = "»"

METHOD_COLORS = {"DropMatch": "#7c3aed", "lossless": "#64748b"}
# One line colour per rule in the trade-off figures: each rule's own (the registry's), lossless grey, and the
# truncations of the target.
RULE_COLORS = {
    "lossless": "#64748b",
    **{name: rule.color for name, rule in RULES.items()},
    "top-k-sampling": "#b45309",
    "min-p": "#7f1d1d",
}
ACCEPT_COLOR = "#16a34a"
REJECT_COLOR = "#dc2626"
NEUTRAL_COLOR = "#f1f5f9"
PROB_SCALE = "Blues"
# The system's own fonts, for the page and the figures: nothing to download (a Space should not depend on a font host,
# and a bundled web font can lack glyphs). Generic names (system-ui, ui-monospace) stay unquoted, as CSS reads them.
SANS = ("system-ui", "-apple-system", "'Segoe UI'", "Roboto", "'Helvetica Neue'", "'Noto Sans'", "Arial", "sans-serif")
MONO = ("ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "'Liberation Mono'", "'DejaVu Sans Mono'", "monospace")
FONT = ", ".join(SANS)


def rgb(hex_color: str) -> str:
    """ "#aabbcc" as "170, 187, 204", the channels a browser writes in an inline rgb() or rgba() style."""
    return ", ".join(str(int(hex_color[i : i + 2], 16)) for i in (1, 3, 5))


def luminance(hex_color: str) -> float:
    """WCAG 2 relative luminance of "#aabbcc"."""
    channels = [int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two colours, 1 to 21 (AA asks 4.5 for text)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def ink(background: str) -> str:
    """Black or white, whichever reads better on `background`."""
    return max(("#000000", "#ffffff"), key=lambda c: contrast(c, background))


def token_marks_css() -> str:
    """CSS of the coloured output tokens: each reason's letter after the tokens of its colour (Gradio writes the colour
    as rgba(r, g, b, alpha) in the token's style), and text that keeps AA contrast. Gradio draws the colour at half
    opacity with black text, which a light page keeps readable; on a dark page the tokens take their full colour and
    the ink that reads on it, and the divergence mark is white on its near-black swatch everywhere."""

    def token(color: str) -> str:
        return f'.dm-output .token[style*="({rgb(color)},"]'

    def full(color: str, scheme: str = "") -> str:  # the colour at full strength, and its ink
        at = f"{scheme}{token(color)}"
        return f"{at} {{ background: {color} !important; }} {at}, {at} .text {{ color: {ink(color)} !important; }}"

    rules = [f'{token(REASON_COLORS[r])}::after {{ content: "{m}"; }}' for r, m in REASON_MARKS.items()]
    base = (
        ".dm-output .token::after { font-size: 0.65em; vertical-align: super; margin-left: 1px; "
        "color: inherit; font-family: system-ui, sans-serif; }"
    )
    dark = [full(c, ".dark ") for c in dict.fromkeys(text_color_map().values())]
    divergence = full(DIVERGENCE_COLOR)
    return "\n".join([base, *rules, *dark, divergence])


def text_color_map() -> dict[str, str]:
    """Label -> colour for the coloured output text, built from the reason colours."""
    colors = {REASON_LABELS[r]: REASON_COLORS[r] for r in OUTPUT_REASONS}
    colors[DIVERGENCE_LABEL] = DIVERGENCE_COLOR
    return colors


def show_token(text: str, limit: int = 14) -> str:
    """A token as a readable label: visible newlines and tabs, an empty token as ∅, long ones cut."""
    shown = text.replace("\n", "↵").replace("\t", "⇥").replace("\r", "")
    if not shown.strip():
        shown = "␣" * len(shown) if shown else "∅"
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def code(text: str, limit: int = 40) -> str:
    """A token as a Markdown code span that survives backticks inside it."""
    shown = show_token(text, limit)
    fence = "`" * (max((len(m) for m in re.findall(r"`+", shown)), default=0) + 1)
    return f"{fence} {shown} {fence}"


def legend_html(reasons=tuple(REASON_COLORS)) -> str:
    """A compact HTML legend: a swatch, the label and one line of meaning per reason."""
    items = []
    for r in reasons:
        mark = f" <sup>{REASON_MARKS[r]}</sup>" if r in REASON_MARKS else ""
        items.append(
            f'<span class="dm-legend-item" title="{html.escape(REASON_HELP[r])}">'
            f'<span class="dm-swatch" style="background:{REASON_COLORS[r]}"></span>'
            f"<b>{html.escape(REASON_LABELS[r])}{mark}</b> "
            f'<span class="dm-legend-help">{html.escape(REASON_HELP[r])}</span></span>'
        )
    items.append(
        f'<span class="dm-legend-item"><span class="dm-swatch dm-mark">{DIVERGENCE_MARK}</span>'
        f"<b>{DIVERGENCE_LABEL}</b> "
        '<span class="dm-legend-help">where the chosen rule\'s output first departs from lossless</span></span>'
    )
    return '<div class="dm-legend">' + "".join(items) + "</div>"


# A title's lines at most this many characters: a 390 px phone leaves a plot about 325 px, which fits 40 characters of
# the 15 px title and 56 of a <sup> line; each line wrapping adds takes this many pixels more at the top.
TITLE_CHARS, SUBTITLE_CHARS = 40, 56
TITLE_LINE_PX, SUBTITLE_LINE_PX = 20, 14
_SUP = re.compile(r"<sup>(.*)</sup>", re.S)
_MARKUP = re.compile(r"</?(?:a|b|i|em|s|span|sub|sup|u)\b[^>]*>", re.I)  # plotly's tags; a token's '<' is text


def _wrap_line(line: str, width: int) -> list[str]:
    """One line of plain text in lines of at most `width` characters, broken after a ' ·' where it can, else at
    spaces: the lines joined by spaces give the line back."""
    out: list[str] = []
    pieces = line.split(" · ")
    for n, piece in enumerate(pieces):
        more = 2 * (n < len(pieces) - 1)  # room for the " ·" a break after it would add
        if out and len(out[-1]) + 3 + len(piece) + more <= width:
            out[-1] += " · " + piece
            continue
        if out:
            out[-1] += " ·"
        out += textwrap.wrap(piece, width - 2, break_long_words=False, break_on_hyphens=False) or [piece]
    return out


def phone_title(title: str) -> tuple[str, int]:
    """The title with each of its lines wrapped to fit a phone's plot (TITLE_CHARS; SUBTITLE_CHARS for a line that is
    one <sup>), and the pixels the added lines take. A line with other markup is left whole."""
    lines, extra = [], 0
    for line in title.split("<br>"):
        sup = _SUP.fullmatch(line)
        text, width = (sup.group(1), SUBTITLE_CHARS) if sup else (line, TITLE_CHARS)
        if _MARKUP.search(text) or len(html.unescape(text)) <= width:
            lines.append(line)
            continue
        wrapped = _wrap_line(text, width)
        lines += [f"<sup>{w}</sup>" if sup else w for w in wrapped]
        extra += (len(wrapped) - 1) * (SUBTITLE_LINE_PX if sup else TITLE_LINE_PX)
    return "<br>".join(lines), extra


def one_line(title: str) -> str:
    """A title as one line of plain text: its lines joined by spaces, <sup> marks dropped (phone_title's lines give the
    title back)."""
    return re.sub(r"</?sup>", "", title.replace("<br>", " "))


def style(fig: go.Figure, title: str, height: int, top: int = 56) -> go.Figure:
    """Apply the shared layout: white template, compact margins, readable fonts. `top`: the top margin the title
    needs as written; a title wrapped to fit a phone (`phone_title`) adds its lines' height to it and to the
    figure's, so the plot keeps its size."""
    title, extra = phone_title(title)
    fig.update_layout(
        template="plotly_white",
        # hung from the figure's top, so a wrapped title grows down into the room `top + extra` keeps for it and
        # never into a top axis's labels (plotly centres it in the margin by default)
        title={
            "text": title,
            "x": 0.01,
            "xanchor": "left",
            "y": 1 - 18 / (height + extra),  # its first line about 15 px below the top
            "yref": "container",
            "yanchor": "top",
            "font": {"size": 15},
        },
        height=height + extra,
        margin={"l": 60, "r": 20, "t": top + extra, "b": 40},
        font={"family": FONT, "size": 12, "color": "#1f2937"},
        hoverlabel={"font": {"family": FONT}},
    )
    return fig


def message_figure(message: str, title: str = "", height: int = 260) -> go.Figure:
    """An empty figure that says why there is nothing to draw."""
    fig = go.Figure()
    fig.add_annotation(
        text="<br>".join(textwrap.wrap(message, 40)),
        x=0.5,
        y=0.5,
        xref="paper",
        yref="paper",
        showarrow=False,
        font={"size": 14, "color": "#6b7280"},
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    style(fig, title, height)
    return fig.update_layout(margin={"l": 20, "r": 20})  # no axes: centred on the figure, 40 characters fit a phone


def category_heatmap(
    cells, text, hover, x, y, categories: dict[str, str], marks: dict[str, str] | None = None
) -> go.Heatmap:
    """A heatmap whose cells are categories (None = empty) on one discrete colour scale.

    cells: rows of category names; categories: name -> colour, in a fixed order shared by every figure
    that uses it, so a category always gets the same colour; marks: category -> a mark written after the cell's text,
    so the category reads without its colour.
    """
    if marks:
        text = [
            [(f"{t} " if t else "") + f"<sup>{marks[c]}</sup>" if c in marks else t for t, c in zip(trow, crow)]
            for trow, crow in zip(text, cells)
        ]
    names = list(categories)
    n = len(names)
    z = [[None if c is None else names.index(c) for c in row] for row in cells]
    scale = []
    for i, name in enumerate(names):
        scale += [[i / n, categories[name]], [(i + 1) / n, categories[name]]]
    return go.Heatmap(
        z=z,
        x=x,
        y=y,
        text=text,
        customdata=hover,
        texttemplate="%{text}",
        hovertemplate="%{customdata}<extra></extra>",
        colorscale=scale,
        zmin=-0.5,
        zmax=n - 0.5,
        showscale=False,
        xgap=2,
        ygap=2,
        textfont={"size": 11},
    )


def legend_traces(
    categories: dict[str, str], labels: dict[str, str], marks: dict[str, str] | None = None
) -> list[go.Scatter]:
    """Invisible points that give a categorical heatmap a legend (each entry with its cells' mark, if any)."""
    marks = marks or {}
    return [
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=labels.get(name, name) + (f" ({marks[name]})" if name in marks else ""),
            showlegend=True,
            marker={"symbol": "square", "size": 12, "color": color, "line": {"width": 1, "color": "#9ca3af"}},
        )
        for name, color in categories.items()
    ]
