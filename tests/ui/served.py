"""The app served on a local port: for gradio_client (`served`) and for Debian's chromium (`app_in_chromium`), with
the helpers the browser tests share."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gradio_client import Client

import app
from ui import runs

CHROMIUM = "/usr/bin/chromium"
NO_CHROMIUM = not Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is None
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@contextmanager
def served() -> Iterator[Client]:
    demo = app.build_demo()
    _, url, _ = demo.launch(prevent_thread_lock=True, quiet=True)
    try:
        yield Client(url, verbose=False)
    finally:
        demo.close()


@contextmanager
def app_in_chromium(preload: bool = False, queue_size: int = app.QUEUE_SIZE) -> Iterator[tuple]:
    """The app served as `python app.py` serves it (its launch options), and Debian's chromium: (browser, url).
    `preload`: the default pair loaded first, so a Run's timing is the decoding's."""
    from playwright.sync_api import sync_playwright

    demo = app.build_demo(queue_size=queue_size)
    _, url, _ = demo.launch(prevent_thread_lock=True, quiet=True, **app.launch_options())
    try:
        if preload:
            app.preload().join()
        with sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                yield chromium, url
            finally:
                chromium.close()
    finally:
        demo.close()


def slow_runs(monkeypatch, pair, seconds: float = 0.4) -> None:
    """Every run of the app on `pair`, each round `seconds` long: a queue forms behind one run."""
    monkeypatch.setattr(runs, "model_pair", lambda name, draft_quant="none": pair)
    decode = runs.rounds

    def slow(*args, **kwargs):
        for step in decode(*args, **kwargs):
            time.sleep(seconds)
            yield step

    monkeypatch.setattr(runs, "rounds", slow)


def set_tokens(page, n: int) -> None:
    """Type `n` in the max-new-tokens box and wait until the slider holds it: a click right after the typing could
    send the old value."""
    from playwright.sync_api import expect

    box = page.locator("#max-new-tokens input[type=number]")
    box.fill(str(n))
    box.press("Tab")
    expect(page.locator("#max-new-tokens input[type=range]")).to_have_value(str(n))


def titles_past_their_box(page) -> list[str]:
    """The titles of the page's visible plots that run past what a reader sees of their plot: the plot's box, or the
    box of the panel it scrolls in, and the window."""
    return page.evaluate(
        """() => [...document.querySelectorAll('.js-plotly-plot')].filter((p) => p.offsetParent).flatMap((p) => {
            const title = p.querySelector('.gtitle');
            if (!title || !title.textContent) return [];
            let box = p.getBoundingClientRect();
            for (let e = p.parentElement; e; e = e.parentElement)
                if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(e).overflowX)) {
                    box = e.getBoundingClientRect();
                    break;
                }
            const lines = [title, ...title.querySelectorAll('tspan')];
            const right = Math.max(...lines.map((t) => t.getBoundingClientRect().right));
            const past = right - Math.min(box.right, innerWidth);
            return past > 1 ? [`${title.textContent} (${past | 0} px past)`] : [];
        })"""
    )
