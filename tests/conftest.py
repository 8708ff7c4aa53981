"""Shared fixtures: the hermetic tiny pair (fast, no files) and the real embedded pair (slow, loaded once).

Tests that need the real pair or a browser carry the `slow` marker: `pytest -m "not slow"` runs the fast,
hermetic part alone; the README's test command runs everything. The markers `ray` (a local Ray cluster), `server`
(the app on a port) and `distribution` (a thousand seeded decodes) mark what the minute-long inner loop leaves out:
`pytest -m "not slow and not ray and not server and not distribution"`.
"""

from __future__ import annotations

import os

import pytest
import torch
from tiny_pair import byte_tokenizer
from tiny_pair import tiny_pair as build_tiny_pair

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(2)


@pytest.fixture(scope="session")
def tokenizer():
    """The tiny pair's byte-level tokenizer (built in memory)."""
    return byte_tokenizer()


@pytest.fixture(scope="session")
def tiny_pair():
    return build_tiny_pair()


@pytest.fixture(scope="session")
def noisy_pair():
    """A tiny pair whose draft disagrees with the target often: rejections, corrections, relaxed accepts."""
    return build_tiny_pair(noise=0.01)


@pytest.fixture(scope="module")
def real_pair_f32():
    """The embedded pair in float32, the mode for exactness tests; freed after each module (8 GB), so the
    app's bf16 pair and the browser have the memory to themselves later in the run."""
    import gc

    from dropmatch import models

    yield models.load_pair(dtype="float32", device="cpu")
    models.clear_cache()
    gc.collect()
