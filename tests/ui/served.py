"""The app built and served on a local port, for the tests that call it through gradio_client."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from gradio_client import Client

import app


@contextmanager
def served() -> Iterator[Client]:
    demo = app.build_demo()
    _, url, _ = demo.launch(prevent_thread_lock=True, quiet=True)
    try:
        yield Client(url, verbose=False)
    finally:
        demo.close()
