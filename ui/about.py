"""The page header and the "How it works" tab: the method, its formulas and the metric glossary."""

from __future__ import annotations

import gradio as gr

import viz
from ui.common import PAPER

HEADER = (
    f"# DropMatch Explorer\nWhy every draft token was accepted or rejected: DropMatch "
    f"([arXiv 2603.03333]({PAPER})) or one of its relatives beside lossless speculative decoding, same draft, "
    "same seed."
)
LATEX = [{"left": "$$", "right": "$$", "display": True}]


def header() -> None:
    gr.Markdown(HEADER, elem_id="header")


def layout() -> None:
    """The tab's contents (inside its gr.Tab): the explanation with its formulas, then the glossary."""
    gr.Markdown(viz.how_it_works(PAPER), latex_delimiters=LATEX)
    gr.Markdown(viz.glossary())
