"""DropMatch Explorer, the Gradio app: why each draft token was accepted or rejected, DropMatch beside lossless.

This file only builds and launches; the layout and handlers live in `ui/`, one module per tab.
Importing it starts nothing: `python app.py` loads the embedded pair and serves.
"""

from __future__ import annotations

import gradio as gr

from ui import about, analysis, explore
from ui.common import ROOT, model_pair


def build_demo() -> gr.Blocks:
    """The whole app; nothing runs until it is launched."""
    with gr.Blocks(title="DropMatch Explorer") as demo:
        about.header()
        above = explore.main()
        with gr.Tabs():
            view = explore.tabs(above)
            with gr.Tab("Analysis", elem_id="analysis-tab"):
                sweeps = analysis.layout()
            with gr.Tab("How DropMatch works"):
                about.layout()
        explore.wire(view)
        analysis.wire(sweeps)
    demo.queue(default_concurrency_limit=1, max_size=16)
    return demo


def launch_options() -> dict:
    """Theme and css go to launch() in Gradio 6."""
    theme = gr.themes.Soft(primary_hue="violet", neutral_hue="slate")
    return {"theme": theme, "css_paths": [ROOT / "assets/app.css"]}


if __name__ == "__main__":
    model_pair("embedded")  # load before serving, so the first Run streams at once (ZeroGPU wants this too)
    build_demo().launch(**launch_options())
