"""How the page looks and reads in a real browser (Debian's chromium), light and dark, at 1440 px and at 390 px: no
script error over a visit, the system's fonts, AA contrast of the coloured tokens and their marks, the Analysis tab's
comparison and verdict on a phone, and the queue's counter apart from the status text.

Screenshots land in artifacts/ (gitignored): look_*.png.
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import pytest
from served import NO_CHROMIUM, app_in_chromium, set_tokens, slow_runs, titles_past_their_box

import app
from ui.common import DEFAULTS

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
DESKTOP, PHONE = {"width": 1440, "height": 900}, {"width": 390, "height": 844}
POLL = {"polling": 250, "timeout": 60_000}
VERDICT = "The verdict: every rule on all of HumanEval · humaneval"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(NO_CHROMIUM, reason="needs Debian's chromium at /usr/bin/chromium"),
]

# WCAG 2 contrast from computed styles: a colour with alpha is laid over what is under it, down to an opaque one.
CONTRAST_JS = """
const parse = (c) => {
  const v = (c.match(/[\\d.]+/g) || [0, 0, 0, 0]).map(Number);
  return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1];
};
const over = (top, below) => [0, 1, 2].map((i) => top[i] * top[3] + below[i] * (1 - top[3])).concat([1]);
const backdrop = (el) => {
  const layers = [];
  for (let e = el; e; e = e.parentElement) {
    const c = parse(getComputedStyle(e).backgroundColor);
    if (c[3] > 0) layers.push(c);
    if (c[3] >= 1) break;
  }
  return layers.reverse().reduce((below, top) => over(top, below), [255, 255, 255, 1]);
};
const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
const ratio = (a, b) => { const [h, l] = [lum(a), lum(b)].sort((x, y) => y - x); return (h + 0.05) / (l + 0.05); };
"""


@pytest.fixture(scope="module")
def browser():
    """The app served once, and Debian's chromium: (browser, url)."""
    ARTIFACTS.mkdir(exist_ok=True)
    with app_in_chromium() as served:
        yield served


def open_page(browser, viewport: dict, scheme: str = "light", errors: list | None = None):
    """A page on the first screen (the recorded example shown), in `scheme`; page errors go to `errors`."""
    chromium, url = browser
    page = chromium.new_page(viewport=viewport, color_scheme=scheme)
    page.set_default_timeout(60_000)
    if errors is not None:
        page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(url + ("?__theme=dark" if scheme == "dark" else ""))
    first_screen(page)
    return page


def first_screen(page) -> None:
    """Wait for the recorded example, shown without pressing anything."""
    page.wait_for_function(
        "document.querySelector('#status') && document.querySelector('#status').innerText.includes('Recorded example')",
        **POLL,
    )


def no_sideways_scroll(page) -> None:
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1] + 1, f"the page scrolls sideways: {width[0]} px of content in {width[1]} px"


def open_verdict(page) -> None:
    page.get_by_role("tab", name="Analysis").click()
    page.locator("#lab-suite label", has_text=VERDICT).click()
    page.wait_for_selector("#lab-verdict table", **{"timeout": 60_000})
    page.wait_for_function("document.querySelector('#lab-note').innerText.includes('humaneval')", **POLL)
    time.sleep(1)


# ---- a visit: no script error, the system's fonts ------------------------------------------------------------
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_visit_throws_no_page_error_and_draws_with_the_system_fonts(browser, viewport):
    errors = []
    page = open_page(browser, viewport, errors=errors)
    page.get_by_role("button", name="Math word problem").click()
    page.wait_for_function("document.querySelector('#prompt textarea').value.includes('Keiko')", **POLL)
    for tab in ("Analysis", "How it works", "Explore"):
        page.get_by_role("tab", name=tab).click()
        time.sleep(1)
    page.locator("#out-dropmatch .token").nth(3).click()
    time.sleep(2)
    assert errors == [], f"{len(errors)} page errors in one visit: {errors[:3]}"
    fonts = page.evaluate(
        """() => ['#header h1', '#run-btn', '[role=tab]', '#status p'].map((sel) => {
            const e = document.querySelector(sel); return [sel, e ? getComputedStyle(e).fontFamily : null]; })"""
    )
    for sel, family in fonts:
        assert family and family.startswith("system-ui") and "Montserrat" not in family, f"{sel}: {family}"
    page.close()


# ---- contrast, and marks beyond colour ------------------------------------------------------------------------
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_coloured_tokens_and_their_marks_keep_aa_contrast(browser, scheme):
    page = open_page(browser, DESKTOP, scheme)
    page.wait_for_function(  # the tokens' colour transitions done
        "!document.getAnimations().some((a) => a.effect.target && a.effect.target.closest('.dm-output'))", **POLL
    )
    measured = page.evaluate(
        "() => {"
        + CONTRAST_JS
        + """
        return [...document.querySelectorAll('.dm-output .token')].map((t) => {
            const text = t.querySelector('.text') || t, bg = backdrop(t), after = getComputedStyle(t, '::after');
            const mark = after.content && after.content !== 'none' ? ratio(over(parse(after.color), bg), bg) : null;
            return [text.textContent, t.getAttribute('style'), ratio(over(parse(getComputedStyle(text).color), bg), bg),
                    mark];
        }); }"""
    )
    assert len(measured) > 40
    worst = {}
    for text, style, ratio, mark in measured:
        key = re.search(r"\d+, \d+, \d+", style)[0]
        worst[key] = min(worst.get(key, (99, text))[0], ratio, mark or 99), text
    low = {k: v for k, v in worst.items() if v[0] < 4.5}
    assert low == {}, f"{scheme}: tokens (rgb, (ratio, text)) below 4.5:1: {low}"
    divergence = [r for text, _, r, _ in measured if text.strip() == "»"]
    assert divergence and min(divergence) >= 4.5, f"{scheme}: the divergence mark reads at {divergence}"
    page.locator("#out-dropmatch").screenshot(path=str(ARTIFACTS / f"look_tokens_{scheme}.png"))
    page.get_by_role("tab", name="Accept / reject map").click()
    page.wait_for_selector("#map-dropmatch .js-plotly-plot", timeout=30_000)
    shown = page.locator("#map-dropmatch .main-svg").first.text_content()
    assert "J" in shown and "c" in shown, "each map cell carries its reason's mark beside its colour"
    page.locator("#map-dropmatch").screenshot(path=str(ARTIFACTS / f"look_map_{scheme}.png"))
    page.close()


# ---- the Analysis tab on a phone ------------------------------------------------------------------------------
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_comparison_and_the_verdict_read_on_a_phone(browser, scheme):
    page = open_page(browser, PHONE, scheme)
    open_verdict(page)
    no_sideways_scroll(page)
    problems = []
    cells = page.evaluate(  # the comparison's result column: every cell inside the phone's width and its own box
        """() => { const table = document.querySelector('#lab-compare table');
            const col = [...table.tHead.rows[0].cells].findIndex((th) => th.innerText.trim() === 'this sweep');
            return [...table.tBodies[0].rows].map((tr) => {
                const r = tr.cells[col].getBoundingClientRect(), box = table.closest('.scroll').getBoundingClientRect();
                return [tr.cells[col].innerText.slice(0, 30), r.left, r.right, box.left, box.right, innerWidth];
            }); }"""
    )
    assert len(cells) >= 5, "the comparison shows this sweep's results"
    for text, left, right, box_left, box_right, width in cells:
        if not (box_left - 1 <= left and right <= min(box_right, width) + 1):
            problems.append(f"'{text}' runs off the phone: {left:.0f}..{right:.0f} px in {box_right:.0f} px")
    problems += [f"a title runs past its plot: {t}" for t in titles_past_their_box(page)]
    screens = page.locator("#lab-verdict").bounding_box()["height"] / PHONE["height"]
    if screens > 2.5:
        problems.append(f"the verdict is {screens:.1f} screens tall on a phone")
    headers = page.evaluate(
        """() => [...document.querySelectorAll('#lab-verdict th')].filter((th) => th.offsetParent && th.offsetWidth)
            .map((th) => [th.innerText.replace(/\\s+/g, ' '), th.title])"""
    )
    assert len(headers) >= 8
    for text, title in headers:
        if re.fullmatch(r"[a-z]+(_[a-z0-9.]+)+", text) and text != "p_drop":  # p_drop: the paper's own symbol
            problems.append(f"a code name as a header: {text}")
        if len(title) <= len(text):
            problems.append(f"{text}: its definition is not one hover or tap away ({title!r})")
    page.locator("#lab-compare").screenshot(path=str(ARTIFACTS / f"look_phone_compare_{scheme}.png"))
    page.locator("#lab-verdict").screenshot(path=str(ARTIFACTS / f"look_phone_verdict_{scheme}.png"))
    assert problems == [], f"{len(problems)} problems: {problems[:8]}"
    page.locator("#lab-verdict th", has_text="best τ shown within the bar").first.click()  # a definition, one tap away
    tip = page.locator(".dm-tip")
    assert "best_tau_non_inferior" in tip.inner_text() and "lower bound" in tip.inner_text()
    page.locator('#lab-compare td[data-label="this sweep"]').first.click()  # a card's line: its column's definition
    assert tip.inner_text() == "computed from this sweep's table" and page.locator(".dm-tip").count() == 1
    tip.click()
    assert page.locator(".dm-tip").count() == 0
    page.close()


def test_on_a_desktop_the_verdict_shows_every_table_open(browser):
    page = open_page(browser, DESKTOP, "dark")
    open_verdict(page)
    assert page.locator("#lab-verdict details.dm-fold:not([open])").count() == 0
    assert page.locator("#lab-verdict th", has_text="95% interval: low").first.is_visible()
    page.locator("#lab-verdict").screenshot(path=str(ARTIFACTS / "look_desktop_verdict_dark.png"))
    page.close()


# ---- the queue -------------------------------------------------------------------------------------------------
def tracker_and_text(page) -> dict:
    """The status line's queue tracker (its text, and the box of its text and spinner) and the status text's box."""
    return page.evaluate(
        """() => {
        const status = document.querySelector('#status');
        const tracker = status.querySelector('[data-testid=status-tracker]:not(.hide)');
        const parts = tracker ? [...tracker.querySelectorAll('.progress-text, svg')] : [];
        const boxes = parts.map((e) => e.getBoundingClientRect()).filter((b) => b.width > 0);
        const text = status.querySelector('[data-testid=markdown] p').getBoundingClientRect();
        const hit = boxes.some((b) => b.left < text.right && text.left < b.right && b.top < text.bottom
            && text.top < b.bottom);
        return {tracker: tracker ? (tracker.querySelector('.progress-text') || {}).innerText || '' : '', overlap: hit};
    }"""
    )


def test_a_waiting_request_shows_its_place_apart_from_the_status_text_and_no_estimate(browser, noisy_pair, monkeypatch):
    """Two visitors wait behind a run (on this test's own app: two places in the queue, a model that takes 0.4 s a
    round): the counter says where each is and how long it has waited, on its own row above the faded status text."""
    slow_runs(monkeypatch, dataclasses.replace(noisy_pair, draft_quant=DEFAULTS["draft_quant"]))
    demo = app.build_demo(queue_size=2)
    _, url, _ = demo.launch(prevent_thread_lock=True, quiet=True, **app.launch_options())
    chromium = browser[0]
    first = chromium.new_page(viewport=DESKTOP)
    waiting = [chromium.new_page(viewport=PHONE, color_scheme=scheme) for scheme in ("light", "dark")]
    try:
        for page in (first, *waiting):
            page.goto(url + ("?__theme=dark" if page is waiting[1] else ""))
            first_screen(page)
            set_tokens(page, 16)
        first.click("#run-btn")
        first.wait_for_function("document.querySelector('#status').innerText.includes('Running')")
        for page in waiting:
            page.click("#run-btn")
        waiting[1].wait_for_function("document.querySelector('#status').innerText.includes('queue: 2/2')")
        seen = []
        for i in range(120):  # until the last request runs
            seen += [state for state in map(tracker_and_text, waiting) if state["tracker"].startswith("queue")]
            if i == 2:
                for name, page in zip(("light", "dark"), waiting):
                    page.locator("#status").screenshot(path=str(ARTIFACTS / f"look_queue_phone_{name}.png"))
            if "Running" in waiting[1].locator("#status").inner_text():
                break
            time.sleep(0.5)
        assert len(seen) >= 4, seen
        estimates = [s["tracker"] for s in seen if not re.fullmatch(r"queue: \d+/\d+ \| \d+\.\d+s", s["tracker"])]
        assert estimates == [], f"the counter shows an estimate: {estimates[:4]}"
        overlaps = [s for s in seen if s["overlap"]]
        assert overlaps == [], f"the counter is drawn over the status text {len(overlaps)} of {len(seen)} times"
    finally:
        for page in (first, *waiting):
            page.close()
        demo.close()
