"""Fixtures of the app's tests: the Explore tab's parts, built (not launched) as the app builds them."""

from __future__ import annotations

import gradio as gr
import pytest

from ui import explore


@pytest.fixture(scope="module")
def view():
    """The Explore tab's parts by name, in a Blocks that is never launched."""
    with gr.Blocks():
        above = explore.main()
        with gr.Tabs():
            return explore.tabs(above)
