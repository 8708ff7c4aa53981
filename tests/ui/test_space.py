"""The app on a Hugging Face Space: requirements.txt only (no embedded chunks), the hub unreachable. It must start,
serve the page, the recorded example and the Analysis tab, and say why it cannot decode (no model is loaded)."""

from __future__ import annotations

import importlib.util
import urllib.request

import pytest
from gradio_client import Client
from huggingface_hub import constants

import app
from dropmatch import embedded, models
from ui import common

pytestmark = pytest.mark.server  # launches the app on a local port


@pytest.fixture
def space(monkeypatch, tmp_path):
    """A Space's machine: SPACE_ID set, no converted cache, no chunk packages, the hub offline with nothing cached."""
    find_spec = importlib.util.find_spec
    chunks = (embedded.TARGET.package_prefix, embedded.DRAFT.package_prefix)
    monkeypatch.setenv("SPACE_ID", "someone/dropmatch-explorer")
    monkeypatch.setattr(embedded, "cache_root", lambda: tmp_path / "cache")
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name.startswith(chunks) else find_spec(name, *a)
    )
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(common, "try_to_load_from_cache", lambda *a, **k: None)
    models.clear_cache()
    yield
    models.clear_cache()


def test_a_space_without_the_embedded_pair_starts_serves_and_says_why_it_cannot_decode(space, capsys):
    assert not embedded.available() and common.default_pair() == "hub"
    app.preload().join(60)
    log = capsys.readouterr().out
    assert "[dropmatch] the hub pair is not loaded: The hub pair needs huggingface.co" in log and "Traceback" not in log
    demo = app.build_demo()
    _, url, _ = demo.launch(prevent_thread_lock=True, quiet=True)
    try:
        assert urllib.request.urlopen(url, timeout=30).status == 200
        client = Client(url, verbose=False)
        recorded = client.predict(api_name="/open_recorded")
        assert any("Recorded example" in str(value) for value in recorded)
        sweep = client.predict("sweep/humaneval", api_name="/open_sweep")
        assert "no model needed" in sweep[0]
        with pytest.raises(Exception, match="The hub pair needs huggingface.co"):
            client.predict("def f():", api_name="/trace")  # the default pair here is the hub's
        with pytest.raises(Exception, match="Cannot load the embedded pair: the embedded model .* needs the package"):
            client.predict("def f():", pair="embedded", api_name="/trace")
    finally:
        demo.close()
