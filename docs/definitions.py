"""Rewrite the metric definitions table in docs/*.md from `dropmatch.metrics.DEFINITIONS`.

Run from the project root after changing a definition: `.venv/bin/python docs/definitions.py`. The table sits
between the marker comments `<!-- definitions:start -->` and `<!-- definitions:end -->`; tests/test_docs.py
fails while a committed page differs from what DEFINITIONS generates.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dropmatch.metrics import definitions_markdown  # noqa: E402 (the project root is put on the path first)

START, END = "<!-- definitions:start -->", "<!-- definitions:end -->"
BLOCK = re.compile(f"{START}\n.*?{END}", re.S)


def synced(text: str) -> str:
    """`text` with every marked block holding the generated table."""
    return BLOCK.sub(lambda _: f"{START}\n{definitions_markdown()}\n{END}", text)


def main() -> None:
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        if synced(text) != text:
            page.write_text(synced(text), encoding="utf-8")
            print(f"rewrote {page.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
