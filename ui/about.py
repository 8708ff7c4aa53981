"""The page header and the "How it works" tab: the method, its formulas and the metric glossary."""

from __future__ import annotations

import gradio as gr

import viz
from ui.common import PAPER

# One plain sentence of what the page shows, then the paper: the two outputs follow right below it.
HEADER = (
    "# DropMatch Explorer\nA small draft model proposes tokens and a large target model checks them. Below, one "
    "prompt decoded twice: DropMatch also keeps a draft token that noisy copies of the target's last layer find "
    "plausible, lossless decoding keeps only what the target would write; each colour says why a token was kept "
    f"([the paper]({PAPER}))."
)
LATEX = [{"left": "$$", "right": "$$", "display": True}]


def header() -> None:
    gr.Markdown(HEADER, elem_id="header")


def layout() -> None:
    """The tab's contents (inside its gr.Tab): the explanation with its formulas, then the glossary."""
    gr.Markdown(viz.how_it_works(PAPER), latex_delimiters=LATEX)
    gr.Markdown(viz.glossary())
