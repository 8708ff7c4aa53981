"""The size probe on the tiny pair: teacher-forced positions of the solutions only, unanimity falling with p_drop
and total at p_drop 0, the margin quantiles; the fit against model size on points with a known answer."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from device_checks import DeviceMixing

from dropmatch.lab import probe

TEXTS = [("def add(a, b):\n", "    return a + b\n"), ("x = ", "[1, 2, 3]\n")]


def test_hidden_states_cover_the_solutions_only(tiny_pair):
    tok, model = tiny_pair.tokenizer, tiny_pair.target
    h, nexts = probe.hidden_states(model, tok, TEXTS, max_positions=1000)
    solution_tokens = sum(len(tok(c + s)["input_ids"]) - len(tok(c)["input_ids"]) for c, s in TEXTS)
    assert h.shape == (solution_tokens, model.config.hidden_size)
    assert tok.decode(nexts[: len(tok(TEXTS[0][1])["input_ids"])]) == TEXTS[0][1]  # the solution's own tokens
    cut_h, cut_next = probe.hidden_states(model, tok, TEXTS, max_positions=5)
    assert len(cut_h) == len(cut_next) == 5


def test_statistics_on_the_tiny_pair(tiny_pair):
    h, nexts = probe.hidden_states(tiny_pair.target, tiny_pair.tokenizer, TEXTS, max_positions=1000)
    rows = probe.statistics(tiny_pair.target, h, nexts, [0.0, 0.3, 0.6], K=5)
    assert [r["p_drop"] for r in rows] == [0.0, 0.3, 0.6]
    assert rows[0]["unanimity"] == 1.0 and rows[0]["unanimity_paper"] == 1.0
    assert rows[0]["js_threshold"] == pytest.approx(0.0, abs=1e-6)  # p_drop 0: every path is the head
    assert rows[2]["unanimity"] <= rows[1]["unanimity"] <= 1.0  # masks nest: more dropped, fewer agree
    assert all(r["unanimity"] <= r["unanimity_paper"] for r in rows)  # all on the top-1 implies all on one token
    assert rows[1]["margin_q10"] <= rows[1]["margin_q50"] <= rows[1]["margin_q90"]
    assert 0 <= rows[0]["top1_accuracy"] <= 1
    assert probe.describe(tiny_pair.target)["hidden"] == tiny_pair.target.config.hidden_size


def test_the_probe_reads_its_numbers_to_the_host_through_cpu(tiny_pair):
    """On CUDA `.numpy()` raises on a tensor that did not come through `.cpu()`, and a tensor made without a device
    lands on the CPU: neither happens in the probe's own code."""
    with DeviceMixing(probe.hidden_states, probe.statistics) as mixing:
        h, nexts = probe.hidden_states(tiny_pair.target, tiny_pair.tokenizer, TEXTS, max_positions=20)
        probe.statistics(tiny_pair.target, h, nexts, [0.3], K=3)
    assert [str(c) for c in mixing.calls] == []


def test_prediction_on_points_of_a_known_line():
    # logit(u) = 2 log10(params) - 18 exactly: at 1e10 parameters logit 2, u = sigmoid(2); no scatter, no width
    points = [{"params": 10**e, "unanimity_paper": 1 / (1 + math.exp(-(2 * e - 18)))} for e in (8, 8.5, 9, 9.5)]
    got = probe.predict(points, params=1e10)
    assert got["predicted"] == pytest.approx(1 / (1 + math.exp(-2))) and got["slope"] == pytest.approx(2)
    assert got["low"] == pytest.approx(got["predicted"]) and got["high"] == pytest.approx(got["predicted"])
    scattered = [dict(p, unanimity_paper=p["unanimity_paper"] * f) for p, f in zip(points, (1, 0.9, 1, 0.95))]
    wide = probe.predict(scattered, params=1e10)
    assert wide["low"] < wide["predicted"] < wide["high"]
    assert math.isnan(probe.predict(points[:2])["predicted"])  # two models: no interval


def test_an_unknown_or_missing_model_is_refused_clearly(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="unknown model 'llama-70b'"):
        probe.load("llama-70b")
    monkeypatch.setenv("DROPMATCH_CACHE", str(tmp_path))
    missing = probe.EmbeddedModel(**{**probe.SMOLLM2.__dict__, "chunks": (("no_such_package_xyz", "x.gguf"),)})
    monkeypatch.setitem(probe.MODELS, "smollm2-135m", missing)
    with pytest.raises(FileNotFoundError, match="requirements-probe.txt"):
        probe.load("smollm2-135m")


def test_size_figure_draws_each_p_drop_the_fit_and_the_papers_point():
    from viz.calibration import size_figure

    def rows(u: float) -> list[dict]:
        return [
            {"p_drop": p, "positions": 10, "unanimity": u - p, "unanimity_paper": u - p / 2}
            | {"js_threshold": 0.01, "margin_q50": 2.0}
            for p in (0.1, 0.3)
        ]

    models = [
        {"name": n, "original": n, "quantisation": "q", "params": size, "hidden": 8, "vocab": 9, "rows": rows(u)}
        for n, size, u in (("a", 1e8, 0.6), ("b", 5e8, 0.7), ("c", 1.5e9, 0.8))
    ]
    points = {
        p: [{"params": m["params"]} | next(r for r in m["rows"] if r["p_drop"] == p) for m in models]
        for p in (0.1, 0.3)
    }
    record = {"K": 5, "p_drops": [0.1, 0.3], "models": models, "paper": probe.PAPER_POINT}
    record["prediction"] = {f"{p:g}": probe.predict(points[p]) for p in (0.1, 0.3)}
    fig = size_figure(record)
    names = [t.name for t in fig.data]
    assert names[0] == "p_drop 0.1" and names[-1].startswith("the paper") and fig.layout.xaxis.type == "log"
    assert list(fig.data[0].y) == pytest.approx([0.55, 0.65, 0.75])
    fits = [t for t in fig.data if t.name.startswith("fit at 70B")]
    narrow = [p for p, f in record["prediction"].items() if f["high"] - f["low"] < 0.2]
    assert len(fits) == len(narrow) and all(t.x[0] == probe.PAPER_POINT["params"] for t in fits)
    wide = record | {"prediction": {"0.3": {"predicted": 0.99, "low": 0.107, "high": 1.0, "models": 4}}}
    assert not [t for t in size_figure(wide).data if t.name.startswith("fit at 70B")]  # says nothing: not drawn
    sharp = record | {"prediction": {"0.3": {"predicted": 0.95, "low": 0.9, "high": 0.97, "models": 4}}}
    assert [t.name for t in size_figure(sharp).data if t.name.startswith("fit at 70B")] == [
        "fit at 70B, p_drop 0.3 (95% interval)"
    ]
    assert "no model probed" in size_figure({}).layout.annotations[0].text


def test_a_probe_file_is_checked_where_it_is_read(tmp_path):
    from dropmatch.lab.files import read_probe

    row = {"p_drop": 0.3, "K": 5, "positions": 4, "unanimity": 0.5, "unanimity_paper": 0.6, "js_threshold": 0.1}
    model = {"name": "a", "original": "a", "quantisation": "q", "params": 10, "hidden": 2, "vocab": 3, "rows": [row]}
    record = {"texts": "t", "K": 5, "p_drops": [0.3], "max_positions": 4, "models": [model], "paper": {}}
    path = tmp_path / "size.json"
    path.write_text(json.dumps(record | {"prediction": {}}))
    assert read_probe(path)["models"][0]["name"] == "a"
    bad = record | {"prediction": {}, "models": [model | {"rows": [row | {"unanimity": 1.5}]}]}
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=r"models\[0\].rows\[0\].unanimity: must lie in \[0, 1\]"):
        read_probe(path)
    path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="probe.prediction: missing"):
        read_probe(path)


def test_the_recorded_probe_reads_back():
    from pathlib import Path

    from dropmatch.lab.files import read_probe

    recorded = read_probe(Path(__file__).parents[2] / "assets" / "probe" / "size.json")
    assert {m["name"] for m in recorded["models"]} == set(probe.MODELS)
    assert all(len(m["rows"]) == len(recorded["p_drops"]) for m in recorded["models"])


def test_the_margin_over_the_dropout_noise_on_a_handmade_head():
    """H 2, V 3; h = (1, 2); rows w0 = (3, 0), w1 = (0, 1.25), w2 = (1, 0.5): logits 3, 2.5, 2. Top-2: tokens 0 and
    1, margin 0.5; s = ||h * (w0 - w1)|| = ||(3, -2.5)|| = sqrt(15.25)."""
    head = torch.nn.Linear(2, 3, bias=False)
    with torch.no_grad():
        head.weight.copy_(torch.tensor([[3.0, 0.0], [0.0, 1.25], [1.0, 0.5]]))
    got = probe.margin_over_noise(head, torch.tensor([[1.0, 2.0]]))
    assert got == pytest.approx([0.5 / math.sqrt(15.25)], rel=1e-6)


def test_the_p_drop_whose_predicted_unanimity_matches_a_target():
    """Every position at r = 2: unanimity Phi(2 / c)^K; at the paper's 98.4% with K 5, Phi(2 / c) = 0.984^(1/5), so
    c = 2 / z(0.984^(1/5)) and p = c^2 / (1 + c^2)."""
    from statistics import NormalDist

    ratios = np.full(10, 2.0)
    c = 2 / NormalDist().inv_cdf(0.984 ** (1 / 5))
    assert probe.matching_p_drop(ratios) == pytest.approx(c * c / (1 + c * c), rel=1e-6)
    assert probe.predicted_unanimity(ratios, 0.5) == pytest.approx(NormalDist().cdf(2.0) ** 5)
    assert math.isnan(probe.matching_p_drop(np.zeros(3)))  # a margin of 0 flips at any p_drop
