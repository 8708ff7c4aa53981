"""The docs hold what they claim: the README is a first screen whose example runs, every link and every section
named from the code exists, and the metric definitions in docs/ are what `metrics.DEFINITIONS` generates."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dropmatch import metrics, models

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# A section named from the code: a docs page or the README, then the heading's first words in double quotes.
SECTION_REF = re.compile(r'(docs/\w+\.md|README),?\s*\(?"([^"]+)"')


def headings(page: Path) -> list[str]:
    return [
        line.lstrip("#").strip()
        for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines()
        if line.startswith("#")
    ]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_every_definitions_block_is_what_DEFINITIONS_generates():
    table = metrics.definitions_markdown()
    rows = table.splitlines()[2:]
    assert [row.split("`")[1] for row in rows] == list(metrics.DEFINITIONS), "one row per definition, in order"
    blocks = {}
    for page in PAGES:
        found = re.findall(
            r"<!-- definitions:start -->\n(.*?)\n<!-- definitions:end -->", page.read_text("utf-8"), re.S
        )
        blocks |= {f"{page.name} #{i}": block for i, block in enumerate(found)}
    assert "algorithm.md #0" in blocks, "docs/algorithm.md embeds the definitions table"
    stale = [name for name, block in blocks.items() if block != table]
    assert not stale, f"{stale} differ from metrics.DEFINITIONS: run .venv/bin/python docs/definitions.py"


def test_the_readme_is_a_first_screen():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == "---" and "app_file: app.py" in lines[: lines.index("---", 1)], "Space front matter on top"
    assert len(lines) <= 100, "the README is a first screen: results live in docs/results.md"
    ci = (ROOT / ".ci/run").read_text(encoding="utf-8").strip().splitlines()[-1]
    for command in ("bash setup.sh && .venv/bin/python app.py", ci):
        assert f"\n{command}\n" in text, f"the README shows {command!r} on a line of its own"
    shot = ROOT / "docs/explorer.webp"
    assert f"]({shot.relative_to(ROOT)})" in text and shot.stat().st_size < 150_000


def test_the_readme_example_runs(monkeypatch, capsys, tiny_pair):
    """The library example, as printed, on the tiny pair in place of the embedded one."""
    (example,) = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(example.strip().splitlines()) <= 6
    monkeypatch.setattr(models, "load_pair", lambda *args, **kwargs: tiny_pair)
    scope: dict = {}
    exec(compile(example, "README.md", "exec"), scope)
    trace = scope["trace"]
    assert trace.config["method"] == "dropmatch" and 0 < len(trace.token_ids) <= trace.config["max_new_tokens"]
    assert capsys.readouterr().out.rstrip().endswith(str(metrics.compute(trace)["tau"]))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_points_at_something_that_exists(page):
    for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target} (no such file)"
        if anchor:
            assert anchor in {slug(h) for h in headings(linked)}, f"{page.name}: {target} (no such section)"


def test_every_section_named_in_the_code_exists():
    sources = [p for d in ("dropmatch", "viz", "ui", "tests") for p in (ROOT / d).rglob("*.py")] + [ROOT / "app.py"]
    sources.remove(Path(__file__).resolve())
    named = [
        (source, doc, " ".join(re.sub(r"\n\s*#?\s*", " ", section).split()))
        for source in sources
        for doc, section in SECTION_REF.findall(source.read_text(encoding="utf-8"))
    ]
    assert any(doc == "docs/algorithm.md" for _, doc, _ in named), "the pattern finds the code's references"
    for source, doc, section in named:
        page = README if doc == "README" else ROOT / doc
        assert any(h.startswith(section) for h in headings(page)), f"{source.name} names {doc}, {section!r}"
