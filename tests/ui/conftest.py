"""Fixtures of the app's tests: the Explore tab's parts, built (not launched) as the app builds them."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import gradio as gr
import pytest

from ui import explore


def download_folders() -> set[Path]:
    """The folders gradio_client downloads a file through: one per file, named by 40 hex digits, in the temp dir."""
    return {p for p in Path(tempfile.gettempdir()).iterdir() if re.fullmatch(r"[0-9a-f]{40}", p.name) and p.is_dir()}


@pytest.fixture(scope="session", autouse=True)
def no_download_folders_left():
    """gradio_client moves each file it downloads out of its folder and leaves the folder behind, empty: a few dozen
    a run of these tests. Remove the empty ones this run made (the temp dir itself cannot move: the app's files
    must lie in it for Gradio to serve them)."""
    before = download_folders()
    yield
    for folder in download_folders() - before:
        try:
            folder.rmdir()  # only if empty
        except OSError:
            pass


@pytest.fixture(scope="module")
def view():
    """The Explore tab's parts by name, in a Blocks that is never launched."""
    with gr.Blocks():
        above = explore.main()
        with gr.Tabs():
            return explore.tabs(above)
