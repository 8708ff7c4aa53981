"""`bench` on the tiny pair: every method side by side, the lean draft beside the stock one."""

from __future__ import annotations

import pytest
from tiny_pair import tiny_models

from dropmatch.config import DecodeConfig
from dropmatch.lab import bench
from dropmatch.lab.suites import SuiteItem
from dropmatch.models import ModelPair
from dropmatch.quant import quantize


@pytest.fixture(scope="module")
def table(noisy_pair):
    _, draft = tiny_models(len(noisy_pair.tokenizer), noise=0.01)
    lean = ModelPair(
        noisy_pair.target, quantize(draft, "int8"), noisy_pair.tokenizer, "t", "d", noisy_pair.eos_ids, "int8"
    )
    items = [SuiteItem(f"p{i}", "c", prompt) for i, prompt in enumerate(["def add(a, b):", "The quick brown fox"])]
    configs = {m: DecodeConfig(method=m, max_new_tokens=16) for m in ("target", "lossless", "dropmatch")}
    return bench.run_bench(noisy_pair, items, configs, 5, 16, lean)


def test_every_method_runs_on_every_prompt_and_the_lean_draft_is_lossless(table):
    methods = ["target", "lossless", "dropmatch", "lossless+int8", "dropmatch+int8", bench.ASSISTED]
    assert sorted(table["method"]) == sorted(methods * 2)
    lossless = table[table["method"].isin(["lossless", "lossless+int8", bench.ASSISTED])]
    assert (lossless["equal_to_lossless"] == 1.0).all()  # greedy: every lossless run writes the same text
    decoded = table[table["method"] != bench.ASSISTED]
    shares = decoded["draft_share"] + decoded["target_share"]
    assert ((shares > 0) & (shares <= 1 + 1e-9)).all()
    assert (decoded.loc[decoded["method"] == "target", "draft_share"] < 0.05).all()  # no draft: only bookkeeping


def test_summary_ratios_are_ratios_of_mean_speeds(table):
    s = bench.summarise(table)
    assert s.loc["lossless", "speedup_vs_lossless"] == pytest.approx(1.0)
    assert s.loc["lossless+int8", "speedup_vs_assisted"] == pytest.approx(
        s.loc["lossless+int8", "tokens_per_s"] / s.loc[bench.ASSISTED, "tokens_per_s"]
    )
    assert s.loc[bench.ASSISTED, "cpu_speedup_vs_assisted"] == pytest.approx(1.0)
    assert bench.lean_label(ModelPair(None, None, None, "t", "d", frozenset(), "int8", 4096)) == "int8+v4096"
