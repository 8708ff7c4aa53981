"""`bench` on the tiny pair: every method side by side, the lean draft beside the stock one."""

from __future__ import annotations

import pytest
from tiny_pair import tiny_models

from dropmatch.config import DecodeConfig
from dropmatch.lab import bench
from dropmatch.lab.suites import DEFAULT_SUITE, SuiteItem, load_suite
from dropmatch.models import ModelPair
from dropmatch.quant import quantize


@pytest.fixture(scope="module")
def table(noisy_pair):
    def lean(quant: str) -> ModelPair:
        draft = quantize(tiny_models(len(noisy_pair.tokenizer), noise=0.01)[1], quant)
        return ModelPair(noisy_pair.target, draft, noisy_pair.tokenizer, "t", "d", noisy_pair.eos_ids, quant)

    items = [SuiteItem(f"p{i}", "c", prompt) for i, prompt in enumerate(["def add(a, b):", "The quick brown fox"])]
    configs = {m: DecodeConfig(method=m, max_new_tokens=16) for m in ("target", "lossless", "dropmatch")}
    return bench.run_bench(noisy_pair, items, configs, 5, 16, [lean("int8"), lean("int4")])


def test_every_method_runs_on_every_prompt_and_the_lean_drafts_are_lossless(table):
    leans = [f"{m}+{q}" for q in ("int8", "int4") for m in ("lossless", "dropmatch")]
    methods = ["target", "lossless", "dropmatch", *leans, bench.ASSISTED]
    assert sorted(table["method"]) == sorted(methods * 2)
    lossless = table[table["method"].isin(["lossless", "lossless+int8", "lossless+int4", bench.ASSISTED])]
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


def test_each_row_is_compared_with_lossless_on_its_own_engine():
    engine = ModelPair(None, None, None, "embedded", "embedded", frozenset(), engine="llama.cpp")
    assert bench.reference("dropmatch+llama.cpp", engine) == "lossless+llama.cpp"
    assert bench.reference("target+llama.cpp", engine) == "lossless+llama.cpp"
    assert bench.reference("llama.cpp spec", engine) == "llama.cpp" == bench.reference("llama.cpp", None)
    assert bench.reference("dropmatch+int8", engine) == "lossless" == bench.reference("dropmatch", None)


def test_a_4_bit_targets_rows_are_compared_with_that_targets_own_decoding():
    """Another model: its lossless and DropMatch rows against its target-only run, that run against its lossless."""
    lean = ModelPair(None, None, None, "t", "d", frozenset(), "int4", target_quant="int4")
    label = bench.lean_label(lean)
    assert label == "int4+int4-target"
    ran = {f"{m}+{label}": [] for m in ("target", "lossless", "dropmatch")}
    assert bench.reference(f"lossless+{label}", None, ran) == f"target+{label}"
    assert bench.reference(f"dropmatch+{label}", None, ran) == f"target+{label}"
    assert bench.reference(f"target+{label}", None, ran) == f"lossless+{label}"


def test_speedups_against_llama_cpp_where_its_rows_ran():
    import pandas as pd

    speeds = {"target": 2.0, "lossless": 3.0, bench.ASSISTED: 2.5, "llama.cpp": 8.0, "llama.cpp spec": 4.0}
    rows = [
        {"method": m, "tau": 1.0, "n_tokens": 10, "tokens_per_s": v, "tokens_per_cpu_s": v / 2, "acceptance_rate": None}
        | {"equal_to_lossless": 1.0, "overhead_share": 0.0, "draft_share": None, "target_share": None}
        for m, v in speeds.items()
    ]
    s = bench.summarise(pd.DataFrame(rows))
    assert s.loc["lossless", "speedup_vs_llama.cpp"] == pytest.approx(3.0 / 8.0)
    assert s.loc["llama.cpp spec", "cpu_speedup_vs_llama.cpp"] == pytest.approx(0.5)
    assert "speedup_vs_llama.cpp" not in bench.summarise(pd.DataFrame(rows[:3])).columns


def test_other_draft_lengths_run_every_speculative_row_once_more(tiny_pair):
    """--gammas: lossless stays lossless at every draft length, and each row drafts its own gamma per round (tau at
    most gamma + 1; on this prompt the tiny pair's tau grows with gamma, where one gamma for all would tie)."""
    items = [SuiteItem("p0", "c", "def add(a, b):")]
    configs = {m: DecodeConfig(method=m, max_new_tokens=16) for m in ("target", "lossless", "dropmatch")}
    table = bench.run_bench(tiny_pair, items, configs, 5, 16, gammas=[1, 5, 3, 1])
    by_method = table.set_index("method")
    assert list(by_method.index) == [  # the first prompt keeps the order; 5 is the bench's own gamma
        *("target", "lossless", "dropmatch", "lossless+g1", "dropmatch+g1", "lossless+g3", "dropmatch+g3"),
        bench.ASSISTED,
    ]
    assert (by_method.loc[["lossless+g1", "lossless+g3"], "equal_to_lossless"] == 1.0).all()
    taus = by_method.loc[["lossless+g1", "lossless+g3", "lossless"], "tau"].tolist()
    assert taus == sorted(set(taus)) and all(tau <= g + 1 for tau, g in zip(taus, (1, 3, 5), strict=True))
    assert by_method.loc["dropmatch+g3", "gamma"] == 3 and by_method.loc["lossless", "gamma"] == 5
    assert by_method["gamma"].isna().loc["target"]
    assert bench.gamma_label("dropmatch+int4+int4-target", 2) == "dropmatch+g2+int4+int4-target"
    engine = ModelPair(None, None, None, "e", "e", frozenset(), engine="llama.cpp")
    assert bench.reference("dropmatch+g2+llama.cpp", engine) == "lossless+llama.cpp"
    assert bench.reference("llama.cpp spec+g2", None) == "llama.cpp"


def test_the_batch_table_runs_every_prompt_at_each_batch_size(noisy_pair):
    """bench --batches: lossless and DropMatch at batch 1, 2 and 4 on the tiny pair (float32): every prompt's tokens
    equal batch 1's, tau does not move with the batch, and the gains are ratios of the measured throughputs."""
    items = load_suite(DEFAULT_SUITE, limit=4)
    configs = {
        "lossless": DecodeConfig(method="lossless", max_new_tokens=10),
        "dropmatch": DecodeConfig(method="dropmatch", p_drop=0.3, max_new_tokens=10),
    }
    df = bench.run_batch_bench(noisy_pair, items, configs, [1, 2, 4], 10)
    assert len(df) == 6 and (df["same_as_batch_1"] == 1).all() and (df["cpu_s_per_cell"] > 0).all()
    assert df.groupby("method")["tau"].nunique().eq(1).all()
    table = bench.summarise_batches(df, "dropmatch")
    rate = df.set_index(["batch", "method"])["tokens_per_s"]
    assert table.loc[2, "dropmatch gain"] == pytest.approx(rate[2, "dropmatch"] / rate[2, "lossless"])
    assert table.loc[1, "lossless x batch 1"] == 1 and table.loc[1, "paper gain"] == bench.PAPER_BATCH_GAINS[1]


def test_bench_refuses_a_bad_batch_list(capsys):
    from dropmatch.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--prompts", "humaneval", "--batches", "0,2"])
    assert exit_.value.code == 2 and "batch sizes are positive integers" in capsys.readouterr().err
