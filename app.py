"""DropMatch Explorer, the Gradio app: why each draft token was accepted or rejected, DropMatch beside lossless.

This file only builds and launches; the layout and handlers live in `ui/`, one module per tab.
Importing it starts nothing: `python app.py` serves at once, opens on the recorded example, and loads the
default pair (the embedded one, or the hub's on a Space) in the background.
"""

from __future__ import annotations

import threading

import gradio as gr

from ui import about, analysis, explore
from ui.common import DEFAULTS, ROOT, default_pair, model_pair
from viz.theme import token_marks_css


def build_demo() -> gr.Blocks:
    """The whole app; nothing runs until it is launched."""
    with gr.Blocks(title="DropMatch Explorer") as demo:
        about.header()
        with gr.Tabs(elem_id="top-tabs", overflow_behavior="wrap"):
            with gr.Tab("Explore", elem_id="explore-tab"):
                above = explore.main()
                with gr.Tabs(overflow_behavior="wrap"):
                    view = explore.tabs(above)
            with gr.Tab("Analysis", elem_id="analysis-tab"):
                sweeps = analysis.layout()
            with gr.Tab("How it works", elem_id="about-tab"):
                about.layout()
        explore.wire(view, demo)
        analysis.wire(sweeps)
    demo.queue(default_concurrency_limit=1, max_size=16)
    return demo


def preload() -> threading.Thread:
    """Load the default pair in the background, so the page serves at once and the first Run finds it loaded; a
    pair that cannot load here (a Space without the hub) is one line in the log, and a message in the page when
    someone presses Run."""

    def load() -> None:
        try:
            model_pair(default_pair(), DEFAULTS["draft_quant"])
        except gr.Error as err:
            print(f"[dropmatch] the {default_pair()} pair is not loaded: {err.message}", flush=True)

    thread = threading.Thread(target=load, name="preload", daemon=True)
    thread.start()
    return thread


def launch_options() -> dict:
    """Theme, css and the page's small script go to launch() in Gradio 6."""
    theme = gr.themes.Soft(primary_hue="violet", neutral_hue="slate")
    return {
        "theme": theme,
        "css_paths": [ROOT / "assets/app.css"],
        "css": token_marks_css(),
        "head_paths": [ROOT / "assets/app.html"],
    }


if __name__ == "__main__":
    preload()
    build_demo().launch(**launch_options())
