"""The tree is formatted and linted as `pyproject.toml` configures ruff: a contributor's editor and CI agree."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ruff() -> list[str]:
    found = Path(sys.executable).with_name("ruff")  # the venv's own, pinned in requirements-dev.txt
    if found.exists():
        return [str(found)]
    if shutil.which("ruff"):
        return ["ruff"]
    pytest.skip("ruff is not installed (pip install -r requirements-dev.txt)")


@pytest.mark.parametrize("command", [["format", "--check", "--diff"], ["check", "--output-format", "concise"]])
def test_ruff_is_clean(command):
    done = subprocess.run([*ruff(), *command, "."], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"ruff {' '.join(command)}:\n{done.stdout}{done.stderr}"
