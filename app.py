"""DropMatch Explorer, the Gradio app: why each draft token was accepted or rejected, DropMatch beside lossless.

This file only builds and launches; the layout and handlers live in `ui/`, one module per tab.
Importing it starts nothing: `python app.py` loads the default pair (the embedded one, or the hub's on a Space) in the
background, serves at once and opens on the recorded example; on a ZeroGPU Space it loads the pair first, in the main
thread, then serves (`start`).
"""

from __future__ import annotations

try:  # first of all: on a ZeroGPU Space `spaces` patches torch as it loads, so it comes before anything imports torch
    import spaces  # noqa: F401
except ImportError:
    pass

import os
import threading
import traceback

import gradio as gr

from ui import about, analysis, explore
from ui.common import DEFAULTS, KEPT_S, ROOT, default_pair, model_pair, start_failed, strict_inputs, zero_gpu
from viz.theme import MONO, SANS, token_marks_css

QUEUE_SIZE = 16  # requests that may wait behind the running one; the page says so when all places are taken


def build_demo(queue_size: int = QUEUE_SIZE) -> gr.Blocks:
    """The whole app; nothing runs until it is launched."""
    # Gradio keeps a copy of every file it serves (a run's downloads, a sweep's report): cleared hourly once older than
    # a visitor's files are kept (ui.common.scratch_folder), and all of it when the server stops
    with gr.Blocks(title="DropMatch Explorer", delete_cache=(3600, KEPT_S)) as demo:
        about.header()
        # the queue's size, for the page's script: Gradio's own "busy" message does not say how long the queue is
        gr.HTML(f'<span data-queue-size="{queue_size}"></span>', elem_id="dm-queue", visible="hidden")
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
    demo.queue(default_concurrency_limit=1, max_size=queue_size)
    return strict_inputs(demo)  # too many arguments, or a file that is not one: said, not dropped


def load_default() -> None:
    """Load the default pair where this is called. Whatever keeps it from loading is caught, so the app serves all
    the same: an expected failure (a Space without the hub) is one line in the log, any other also its traceback;
    either is kept for the page (`start_failure`), and a Run says why it cannot decode."""
    pair = "default"
    try:
        pair = default_pair()
        model_pair(pair, DEFAULTS["draft_quant"])
    except Exception as err:  # the page serves whatever happens to the model
        reason = err.message if isinstance(err, gr.Error) else f"{type(err).__name__}: {err}"
        print(f"[dropmatch] the {pair} pair is not loaded: {reason}", flush=True)
        if not isinstance(err, gr.Error):
            traceback.print_exc()
        start_failed(pair, reason)


def preload() -> threading.Thread:
    """Load the default pair in the background, so the page serves at once and the first Run finds it loaded."""
    thread = threading.Thread(target=load_default, name="preload", daemon=True)
    thread.start()
    return thread


def start() -> threading.Thread | None:
    """What `python app.py` does before it launches. The page renders in the browser, as its tests render it:
    server-side rendering off through GRADIO_SSR_MODE, which a Gradio Space's environment sets and which decides there
    (launch's ssr_mode does not). On a ZeroGPU Space: load the default pair here, in the main thread, and return None
    once it is loaded (or failed to). Each request's GPU worker is forked from this process, so nothing may be loading
    when one forks (a fork copies a half-done load, with no thread there to finish it), and ZeroGPU packs the models
    moved to CUDA as the app launches. Elsewhere (a CPU, a plain GPU Space): the background preload, so the page serves
    at once."""
    os.environ["GRADIO_SSR_MODE"] = "false"
    if zero_gpu():
        load_default()
        return None
    return preload()


def launch_options() -> dict:
    """Theme, css and the page's small script go to launch() in Gradio 6. The theme draws with the system's fonts:
    Soft's bundled Montserrat lacks glyphs (it draws "Ɛxplore"), and nothing is downloaded."""
    theme = gr.themes.Soft(primary_hue="violet", neutral_hue="slate", font=list(SANS), font_mono=list(MONO))
    return {
        "theme": theme,
        "css_paths": [ROOT / "assets/app.css"],
        "css": token_marks_css(),
        "head_paths": [ROOT / "assets/app.html"],
        # No run history: Gradio would keep every call's inputs and outputs in the browser and show them to whoever
        # opens the page next on it (a classroom's shared laptop); False also deletes what an earlier version kept.
        # A visitor keeps a run by its downloads (Files).
        "run_history": False,
    }


if __name__ == "__main__":
    start()
    build_demo().launch(**launch_options())
