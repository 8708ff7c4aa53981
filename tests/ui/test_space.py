"""The app on a Hugging Face Space. Without the embedded chunks and the hub unreachable it must start, serve the page,
the recorded example and the Analysis tab, and say why it cannot decode (no model is loaded). On ZeroGPU: `spaces`
is imported before torch, the default pair loads in the main thread before launch, the GPU function checks the heads
once per worker and sends each round's additions (not the whole trace), and the Python is one ZeroGPU supports."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import os
import pickle
import re
import subprocess
import sys
import threading
import urllib.request
import weakref
from types import SimpleNamespace

import gradio as gr
import pandas as pd
import pytest
from gradio_client import Client
from huggingface_hub import constants
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from same_trace import assert_same_run
from tiny_pair import tiny_models

import app
from dropmatch import embedded, models
from dropmatch.config import DRAFT_QUANTS, SETTINGS
from dropmatch.decode import generate
from dropmatch.lab import live, suites
from ui import analysis, common, explore, runs

ROOT = common.ROOT
ZEROGPU_PYTHONS = ("3.10.13", "3.12.12")  # the Python versions ZeroGPU's documentation lists as supported


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
    monkeypatch.setattr(common, "_START_FAILURE", [])
    models.clear_cache()
    yield
    models.clear_cache()


@pytest.mark.server  # launches the app on a local port
def test_a_space_without_the_embedded_pair_starts_serves_and_says_why_it_cannot_decode(space, capsys):
    assert not embedded.available() and common.default_pair() == "hub"
    app.preload().join(60)
    log = capsys.readouterr().out
    assert "[dropmatch] the hub pair is not loaded: The hub pair needs huggingface.co" in log and "Traceback" not in log
    assert common.start_failure().startswith("The hub pair did not load as the app started: The hub pair needs")
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


# ---- ZeroGPU --------------------------------------------------------------------------------------------------------
FAKE_SPACES = """
import sys

# As the package does: gradio's own `import spaces`, half way through importing gradio, is refused (gradio goes on
# without it), so whatever imports spaces next is the import that counts.
if (gr := sys.modules.get("gradio")) is not None and not hasattr(gr, "Blocks"):
    raise ImportError

torch_first = "torch" in sys.modules  # what ZeroGPU warns against: torch imported before spaces patches it


def GPU(task=None, *, duration=None, size=None):
    return task if callable(task) else (lambda fn: fn)
"""


def test_app_imports_spaces_before_anything_imports_torch(tmp_path):
    """`import app` in a fresh interpreter, a stand-in `spaces` first on the path: it finds torch not yet imported."""
    (tmp_path / "spaces").mkdir()
    (tmp_path / "spaces" / "__init__.py").write_text(FAKE_SPACES, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]), "HF_HUB_OFFLINE": "1"}
    env.pop("SPACES_ZERO_GPU", None)
    script = "import sys, app, spaces; print(spaces.__file__, spaces.torch_first, 'torch' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True
    )
    where, torch_first, torch_after = done.stdout.split()
    assert where.startswith(str(tmp_path)), "the stand-in spaces package was imported"
    assert (torch_first, torch_after) == ("False", "True"), "spaces first, then whatever imports torch"


def fake_spaces(zero_gpu: bool | None):
    """A stand-in for the `spaces` package: its config says whether this is ZeroGPU (None: no config, the env var
    decides)."""
    return (
        SimpleNamespace()
        if zero_gpu is None
        else SimpleNamespace(config=SimpleNamespace(Config=SimpleNamespace(zero_gpu=zero_gpu)))
    )


def test_zerogpu_is_what_the_spaces_package_says(monkeypatch):
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    monkeypatch.setattr(common, "spaces", None)
    assert not common.zero_gpu()
    for said in (True, False):
        monkeypatch.setattr(common, "spaces", fake_spaces(said))
        assert common.zero_gpu() is said
    monkeypatch.setattr(common, "spaces", fake_spaces(None))
    assert not common.zero_gpu()
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert common.zero_gpu()


def test_on_zerogpu_the_default_pair_loads_in_the_main_thread_and_elsewhere_in_the_background(monkeypatch):
    monkeypatch.setenv("GRADIO_SSR_MODE", "false")  # start() sets it: restored after the test
    loaded = []
    monkeypatch.setattr(app, "model_pair", lambda *args: loaded.append(threading.current_thread()))
    monkeypatch.setattr(common, "spaces", fake_spaces(True))
    assert app.start() is None and loaded == [threading.main_thread()]
    monkeypatch.setattr(common, "spaces", fake_spaces(False))
    thread = app.start()
    thread.join(30)
    assert loaded[1:] == [thread] and thread.name == "preload" and thread is not threading.main_thread()


@pytest.mark.server  # launches the app on a local port
def test_a_load_that_fails_in_any_way_still_launches_and_the_page_can_say_why(monkeypatch, capsys):
    """On ZeroGPU the pair loads before launch, in the main thread: an unexpected error there (not a gr.Error) is
    logged with its traceback and kept for the page, and `python app.py` goes on to serve."""

    def broken(*args):
        raise RuntimeError("the weights are truncated")

    monkeypatch.setattr(app, "model_pair", broken)
    monkeypatch.setattr(common, "spaces", fake_spaces(True))
    monkeypatch.setattr(common, "_START_FAILURE", [])
    monkeypatch.setenv("GRADIO_SSR_MODE", "true")  # as a Space sets it
    assert common.start_failure() is None
    assert app.start() is None
    captured = capsys.readouterr()
    pair = common.default_pair()
    assert f"[dropmatch] the {pair} pair is not loaded: RuntimeError: the weights are truncated" in captured.out
    assert "Traceback" in captured.err
    assert common.start_failure() == (
        f"The {pair} pair did not load as the app started: RuntimeError: the weights are truncated"
    )
    demo = app.build_demo()
    _, url, _ = demo.launch(prevent_thread_lock=True, quiet=True)
    try:
        assert urllib.request.urlopen(url, timeout=30).status == 200 and demo.ssr_mode is False
    finally:
        demo.close()


def test_the_page_renders_in_the_browser_whatever_the_space_sets(monkeypatch):
    """A Gradio Space sets GRADIO_SSR_MODE, and there it decides over launch(ssr_mode=...): `python app.py` turns
    server-side rendering off through it, so the page runs as its tests run it (rendered by the browser)."""
    monkeypatch.setenv("GRADIO_SSR_MODE", "true")
    monkeypatch.setattr(app, "model_pair", lambda *args: None)
    monkeypatch.setattr(common, "spaces", fake_spaces(True))
    with gr.Blocks() as demo:
        gr.Markdown("a page")
    assert demo._resolve_ssr_mode(None) is True  # what Gradio makes of the variable as a Space sets it
    app.start()
    assert os.environ["GRADIO_SSR_MODE"] == "false" and demo._resolve_ssr_mode(None) is False


def test_on_zerogpu_the_pair_loads_unchecked_and_only_with_the_draft_loaded_at_start(monkeypatch):
    """The main process of a ZeroGPU Space only emulates CUDA on the CPU: the heads are checked in the GPU functions,
    on the GPU, not at load. A draft other than the one loaded as the app starts would load inside the GPU slot: the
    page offers none, and a request for one is refused before anything loads."""
    asked = []
    monkeypatch.setattr(common, "load_pair", lambda *ids, **options: asked.append(options))
    monkeypatch.setattr(common, "_START_FAILURE", [])
    start_draft = common.DEFAULTS["draft_quant"]
    for on_zero_gpu in (True, False):
        monkeypatch.setattr(common, "spaces", fake_spaces(on_zero_gpu))
        common.model_pair("embedded", start_draft)
        assert asked.pop()["check"] is (not on_zero_gpu)
    assert common.draft_quant_choices() == list(DRAFT_QUANTS)
    monkeypatch.setattr(common, "spaces", fake_spaces(True))
    assert common.draft_quant_choices() == [start_draft]
    other = next(q for q in DRAFT_QUANTS if q != start_draft)
    with pytest.raises(common.UserError, match=f"the {other} draft would load inside the GPU slot"):
        common.model_pair("embedded", other)
    assert asked == []


def test_a_pair_loaded_unchecked_is_checked_by_whoever_decodes(monkeypatch, tmp_path, tokenizer):
    checked = []
    monkeypatch.setattr(models, "_HEADS_CHECKED", weakref.WeakKeyDictionary())
    monkeypatch.setattr(models, "check_head", lambda model, name: checked.append(name))
    for role, model in zip(("target", "draft"), tiny_models(len(tokenizer))):
        model.save_pretrained(tmp_path / role)
        tokenizer.save_pretrained(tmp_path / role)
    models.clear_cache()
    try:
        pair = models.load_pair(str(tmp_path / "target"), str(tmp_path / "draft"), "float32", "cpu", check=False)
        assert checked == []
        models.load_pair(str(tmp_path / "target"), str(tmp_path / "draft"), "float32", "cpu")
        assert len(checked) == 2, "a load that checks checks the cached pair, once"
        models.check_heads(pair)
        assert len(checked) == 2
    finally:
        models.clear_cache()


def test_the_live_sweeps_gpu_function_checks_the_heads(monkeypatch, noisy_pair, tmp_path):
    checked = []
    monkeypatch.setattr(analysis, "model_pair", lambda pair, draft_quant="none": noisy_pair)
    monkeypatch.setattr(models, "_HEADS_CHECKED", weakref.WeakKeyDictionary())
    monkeypatch.setattr(models, "check_head", lambda model, name: checked.append(name))
    p = live.plan("mini_spec_bench", 1, "p_drop", "0.3", 8, {"draft_quant": "none"})
    assert len(list(analysis.cells(p, "embedded", tmp_path))) == p.cells
    assert checked == ["the target 'tiny-target'", "the draft 'tiny-draft'"]


def test_a_live_sweep_scores_humaneval_after_the_gpu_function_not_in_it(monkeypatch, noisy_pair, tmp_path):
    """A HumanEval cell's tests are CPU work: run inside the GPU function they would take GPU time from the visitor's
    quota. The GPU function decodes; the sweep scores each cell as it arrives."""
    running, scored_while = [], []

    def stand_in_scorer(problem, completion, timeout):
        scored_while.append("the GPU function ran" if running else "between its steps")
        return {"passed": False, "result": "failed: a stand-in scorer"}

    monkeypatch.setattr(analysis, "model_pair", lambda pair, draft_quant="none": noisy_pair)
    monkeypatch.setattr(suites, "score_completion", stand_in_scorer)  # HumanEval's scorer, behind suites.score
    gpu_function = analysis.decode_sweep

    def watched(*args):  # the GPU function, marked as running while its body runs (not while it waits at a yield)
        steps = gpu_function(*args)
        while True:
            running.append(True)
            try:
                step = next(steps)
            except StopIteration:
                return
            finally:
                running.pop()
            yield step

    monkeypatch.setattr(analysis, "decode_sweep", watched)
    p = live.plan("humaneval", 1, "p_drop", "0.3", 8, {"draft_quant": "none"})
    rows = [row for _, _, row in analysis.cells(p, "embedded", tmp_path)]
    assert scored_while == ["between its steps"] * p.cells
    assert [row["score_result"] for row in rows] == ["failed: a stand-in scorer"] * p.cells


def test_python_app_py_loads_the_pair_before_it_launches():
    """The `__main__` block: start() (the load, or the background preload), then the launch."""
    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    (main,) = [node for node in tree.body if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)]
    assert [ast.unparse(statement) for statement in main.body] == [
        "start()",
        "build_demo().launch(**launch_options())",
    ]


def test_a_fork_taken_while_a_load_holds_the_lock_can_load():
    """A ZeroGPU worker forked while another thread held the loading lock inherits a fresh one, not a lock that no
    thread there will ever release."""
    with models._LOADING:
        pid = os.fork()
        if pid == 0:  # the child: take the lock, as its first load_pair would
            os._exit(0 if models._LOADING.acquire(timeout=5) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the forked child found the loading lock held"


def test_the_heads_are_checked_once_per_process_and_again_in_a_fork(monkeypatch, tiny_pair):
    checked = []
    monkeypatch.setattr(models, "_HEADS_CHECKED", weakref.WeakKeyDictionary())
    monkeypatch.setattr(models, "check_head", lambda model, name: checked.append(name))
    models.check_heads(tiny_pair)
    models.check_heads(tiny_pair)
    assert checked == ["the target 'tiny-target'", "the draft 'tiny-draft'"]  # once: the second call checks nothing
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a worker forked from this process: its own check, once
        models.check_heads(tiny_pair)
        models.check_heads(tiny_pair)
        os.write(write, str(len(checked)).encode())
        os._exit(0)
    os.close(write)
    in_child = int(os.read(read, 16))
    os.waitpid(pid, 0)
    assert in_child == 4 and len(checked) == 2


def test_the_gpu_function_checks_the_heads_once_per_process(monkeypatch, noisy_pair):
    checked = []
    monkeypatch.setattr(runs, "model_pair", lambda pair, draft_quant="none": noisy_pair)
    monkeypatch.setattr(models, "_HEADS_CHECKED", weakref.WeakKeyDictionary())
    monkeypatch.setattr(models, "check_head", lambda model, name: checked.append(name))
    cfgs = common.configs(START | {"max_new_tokens": 2})
    for _ in range(2):
        assert list(runs.decode("embedded", "def f(x):", cfgs, False))
    assert len(checked) == 2  # the target and the draft, once

    def refused(model, name):
        raise ValueError(f"{name} post-processes its logits")

    monkeypatch.setattr(models, "_HEADS_CHECKED", weakref.WeakKeyDictionary())
    monkeypatch.setattr(models, "check_head", refused)
    with pytest.raises(common.UserError, match="Cannot decode with the embedded pair: the target .* post-processes"):
        next(runs.rounds("embedded", "def f(x):", cfgs, False))


START = {name: common.DEFAULTS.get(name) for name in SETTINGS} | {"draft_quant": "none", "max_new_tokens": 32}


def test_each_yield_of_the_gpu_function_sends_the_rounds_additions_and_the_page_gets_the_whole_trace(
    monkeypatch, noisy_pair
):
    """As on ZeroGPU: every yield pickled across and unpickled where the page is served. What crosses stays the size
    of a round while the trace grows, and the traces rebuilt from it are the library's own."""
    monkeypatch.setattr(runs, "model_pair", lambda pair, draft_quant="none": noisy_pair)
    sizes: dict[str, list[int]] = {}
    gpu_function = runs.decode

    def across(*args):
        for name, step in gpu_function(*args):
            sent = pickle.dumps((name, step))
            sizes.setdefault(name, []).append(len(sent))
            yield pickle.loads(sent)

    monkeypatch.setattr(runs, "decode", across)
    cfgs = common.configs(START)
    seen: dict[str, list[int]] = {}
    for name, trace in runs.rounds("embedded", "def f(x):", cfgs, False):
        seen.setdefault(name, []).append(len(trace.rounds))
    traces = {name: trace for name, trace in runs.rounds("embedded", "def f(x):", cfgs, False)}
    for name, cfg in cfgs.items():
        assert seen[name] == list(range(1, len(seen[name]) + 1)), "one yield per round, the trace growing"
        assert_same_run(traces[name], generate(noisy_pair, "def f(x):", cfg, False), name)  # a batch of two
        first, whole = sizes[name][0], len(pickle.dumps(traces[name]))
        assert len(sizes[name]) >= 8 and max(sizes[name]) < 2 * first, f"{name}: a yield grew with the trace"
        assert whole > 5 * first, f"{name}: the whole trace is several times a round (the test has teeth)"


def watch_closing(monkeypatch, module, name: str) -> list:
    """Replace the GPU function `module.name` by itself watched: the list returned gets True when it is closed."""
    closed, gpu_function = [], getattr(module, name)

    def watched(*args):
        try:
            yield from gpu_function(*args)
        finally:
            closed.append(True)

    monkeypatch.setattr(module, name, watched)
    return closed


def test_stopping_a_run_stops_the_gpu_function(monkeypatch, noisy_pair):
    monkeypatch.setattr(runs, "model_pair", lambda pair, draft_quant="none": noisy_pair)
    closed = watch_closing(monkeypatch, runs, "decode")
    stream = runs.rounds("embedded", "def f(x):", common.configs(START), False)
    next(stream)
    stream.close()
    assert closed == [True]


def front_matter() -> dict[str, str]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    top = lines[1 : lines.index("---", 1)]
    return dict(re.match(r"(\w+):\s*(.*)", line).groups() for line in top if re.match(r"\w+:", line))


def test_the_space_runs_a_python_zerogpu_supports_and_every_requirement_accepts():
    version = front_matter()["python_version"].strip("\"'")
    supported = [v for v in ZEROGPU_PYTHONS if v.startswith(f"{version}.")]
    assert supported, f"python_version {version}: ZeroGPU supports {' and '.join(ZEROGPU_PYTHONS)}"
    full = supported[0]
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name = Requirement(line).name
            needs = importlib.metadata.metadata(name).get("Requires-Python") or ""
            assert full in SpecifierSet(needs), f"{name} needs Python {needs}; the Space runs {full}"


def test_on_zerogpu_the_page_says_what_a_run_asks_for(monkeypatch, noisy_pair):
    """Before Run (under the button) and as a run starts (the status line): the GPU seconds it asks ZeroGPU for, as
    ZeroGPU counts them; only the draft loaded at start is offered."""
    import gradio as gr

    monkeypatch.setattr(common, "zero_gpu", lambda: True)
    monkeypatch.setattr(explore, "zero_gpu", lambda: True)
    monkeypatch.setattr(runs, "model_pair", lambda pair, draft_quant="none": noisy_pair)
    with gr.Blocks():
        above = explore.main()
        with gr.Tabs():
            view = explore.tabs(above)
    assert view["draft_quant"].choices == [(q, q) for q in common.draft_quant_choices()]
    settings = {name: common.DEFAULTS.get(name) for name in explore.SETTINGS} | {"max_new_tokens": 4}
    first = next(explore.run(view, "def f(x):", False, "embedded", None, **settings))
    asked = runs.gpu_seconds("embedded", "def f(x):", common.configs(settings), False)
    assert f"asks ZeroGPU for {asked} s of GPU time" in first[view["status"]]


def test_stop_ends_a_live_sweep_after_its_cell_with_the_report_of_the_cells_done(monkeypatch, noisy_pair):
    """The tab's Stop marks the session: the sweep ends after the cell in progress, says so, and its report and
    table hold the cells done; the GPU function is closed."""
    import gradio as gr

    monkeypatch.setattr(analysis, "model_pair", lambda pair, draft_quant="none": noisy_pair)
    with gr.Blocks():
        a = analysis.layout()
    closed = watch_closing(monkeypatch, analysis, "decode_sweep")
    sweep = analysis.live_sweep(a, "mini_spec_bench", 2, "p_drop", "0.3", 8, "embedded", "visitor")
    next(sweep), next(sweep)  # "loading", then the first cell
    explore.STOPS.mark("visitor")  # Explore's Stop is not the sweep's
    next(sweep)
    analysis.STOPS.mark("visitor")
    last = list(sweep)
    note = last[-1][a["note"]]
    assert len(last) == 1 and note.startswith("**Live sweep stopped** after 3 of 4 cells"), note
    assert closed == [True] and "visitor" not in analysis.STOPS
    files = last[-1][a["files"]]
    assert any(f.endswith("report.html") for f in files) and any(f.endswith("table.csv") for f in files)
    assert pd.read_csv(next(f for f in files if f.endswith("table.csv"))).shape[0] == 3, "the cells done"
