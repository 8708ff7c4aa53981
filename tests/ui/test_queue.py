"""Three visitors, one model, one place in the queue: while one run holds the worker, the second visitor's status
line says it waits and where (Gradio's tracker on the status line alone), and the third is told the queue is full and
how long it is. The tiny pair, slowed to 0.4 s a round, stands in for the model;
a real browser (Debian's chromium) shows the pages."""

from __future__ import annotations

import dataclasses

import pytest
from served import NO_CHROMIUM, app_in_chromium, set_tokens, slow_runs

from ui.common import DEFAULTS

pytestmark = [pytest.mark.slow, pytest.mark.skipif(NO_CHROMIUM, reason="needs Debian's chromium at /usr/bin/chromium")]


def test_a_waiting_request_shows_its_place_in_the_queue(noisy_pair, monkeypatch):
    slow_runs(monkeypatch, dataclasses.replace(noisy_pair, draft_quant=DEFAULTS["draft_quant"]))  # as controls start
    with app_in_chromium(queue_size=1) as (chromium, url):  # one place: a third visitor finds the queue full
        first, second, third = (chromium.new_page(viewport={"width": w, "height": 900}) for w in (1440, 390, 390))
        for page in (first, second, third):
            page.goto(url)
            page.wait_for_selector("#status", timeout=60_000)
            page.wait_for_function("document.querySelector('#status').innerText.includes('Recorded example')")
            set_tokens(page, 6)
        first.click("#run-btn")
        first.wait_for_function("document.querySelector('#status').innerText.includes('Running')")
        second.click("#run-btn")
        second.wait_for_function("document.querySelector('#status').innerText.includes('queue: 1/1')")
        third.click("#run-btn")  # Gradio says only "busy"; the page says how long the queue is
        third.wait_for_function("document.body.innerText.includes('The queue is full: 1 of 1 places taken')")
        assert "currently busy" not in third.locator("body").inner_text()
        second.wait_for_function(
            "document.querySelector('#status').innerText.includes('Done')", polling=250, timeout=120_000
        )
