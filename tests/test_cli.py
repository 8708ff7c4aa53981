"""The CLI contract: bad input exits 2 with one clear line (`generate --json` on the real pair: test_real_pair.py)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dropmatch.cli import FIGURES_HINT, build_parser, decode_config, main
from dropmatch.config import DecodeConfig
from dropmatch.models import DEFAULT_DRAFT


@pytest.mark.parametrize(
    "args, message",
    [
        (["generate", "--prompt", "hi", "--gamma", "0"], "gamma must be an integer in [1, 16]"),
        (["generate", "--prompt", "hi", "--p-drop", "1.0"], "p_drop must lie in [0, 1)"),
        (["generate", "--prompt", "hi", "--criterion", "psychic"], "invalid choice: 'psychic'"),
        (["generate", "--prompt", "hi", "--k", "many"], "invalid int value: 'many'"),
        (["generate"], "the following arguments are required: --prompt"),
        (["generate", "--prompt", "hi", "--dtype", "int3"], "invalid choice: 'int3'"),
        (["bench", "--prompts", "/nonexistent.jsonl"], "suite file not found"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["generate", "--prompt", "hi", "--criterion", "typical", "--knob", "5"], "epsilon must lie in [0, 1]"),
        (["generate", "--prompt", "hi", "--method", "dropmatch", "--criterion", "mars"], "'mars' is not a dropmatch"),
        (["sweep", "--suite", "humaneval", "--out", "x", "--rule", "bogus=1"], "NAME one of typical, top-k"),
        (["matched", "--from", "tests/data/sweep_small"], "no relative ran on mini_spec_bench"),
        (["calibrate", "--suite", "humaneval", "--target-unanimity", "2"], "target unanimity must lie in [0, 1]"),
        (["generate", "--prompt", "hi", "--max-new-tokens", "3000"], "max new tokens must be an integer in [1, 2048]"),
        (["calibrate", "--suite", "humaneval", "--k", "40"], "K must be an integer in [1, 32]; got '40'"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, message, capsys):
    try:
        code = main(args)  # in-process: no model is loaded before the input is checked
    except SystemExit as exit_:  # argparse's own checks
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_the_entry_point_exits_2_with_one_line_and_no_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "dropmatch", "generate", "--prompt", "hi", "--gamma", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "gamma must be an integer in [1, 16]" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_the_decode_arguments_are_the_configs_fields():
    parser = build_parser()
    assert decode_config(parser.parse_args(["generate", "--prompt", "hi"]), None) == DecodeConfig()  # the defaults
    given = ["--k", "3", "--p-drop", "0.1", "--criterion", "typical", "--knob", "0.2", "--max-new-tokens", "9"]
    cfg = decode_config(parser.parse_args(["generate", "--prompt", "hi", *given]), None)
    assert (cfg.method, cfg.K, cfg.p_drop, cfg.criterion, cfg.knob, cfg.max_new_tokens) == (
        "relative",
        3,
        0.1,
        "typical",
        0.2,
        9,
    )
    lossless = decode_config(parser.parse_args(["bench", "--prompts", "p.jsonl", *given]), "lossless")
    assert lossless.method == "lossless" and lossless.knob is None  # a relative's knob, ignored by the others


@pytest.mark.parametrize(
    "command, lean",
    [
        (["generate", "--prompt", "hi"], True),
        (["bench", "--prompts", "p.jsonl"], True),
        (["sweep", "--suite", "s", "--out", "x"], True),
        (["calibrate", "--suite", "s"], False),
    ],
)
def test_every_decoding_subcommand_takes_the_same_pair_arguments(command, lean):
    args = build_parser().parse_args([*command, "--target", "t", "--dtype", "float32", "--device", "cpu"])
    assert (args.target, args.draft, args.dtype, args.device) == ("t", DEFAULT_DRAFT, "float32", "cpu")
    assert hasattr(args, "draft_quant") is lean and hasattr(args, "draft_vocab") is lean


def test_bench_times_each_lean_draft_asked_for_and_generate_takes_one():
    bench = build_parser().parse_args(["bench", "--prompts", "p", "--draft-quant", "int8", "--draft-quant", "int4"])
    assert bench.draft_quant == ["int8", "int4"]
    assert build_parser().parse_args(["bench", "--prompts", "p"]).draft_quant == []
    assert build_parser().parse_args(["generate", "--prompt", "hi", "--draft-quant", "int4"]).draft_quant == "int4"


# A machine without the app's libraries: importing plotly or gradio fails (ModuleNotFoundError).
WITHOUT_APP_LIBRARIES = "import sys; sys.modules.update(plotly=None, gradio=None); "
ENTRY_POINT = "import runpy; sys.argv[0] = 'dropmatch'; runpy.run_module('dropmatch', run_name='__main__')"


def _without_app_libraries(code: str, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", WITHOUT_APP_LIBRARIES + code, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["headbench", "--help"],
        ["sweep", "--help"],
        ["calibrate", "--help"],
        ["headbench", "--hidden", "16", "--vocab", "64", "--k", "2", "--positions", "2", "--device", "cpu"]
        + ["--dtype", "float32", "--repeat", "1"],
    ],
)
def test_the_decoders_commands_run_without_plotly_or_gradio(args):
    proc = _without_app_libraries(ENTRY_POINT, *args)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_without_plotly_a_sweep_writes_its_tables_and_the_report_says_what_it_needs(tmp_path):
    sweep_dir = tmp_path / "sweep"
    shutil.copytree(Path(__file__).parent / "data" / "sweep_small", sweep_dir)
    proc = _without_app_libraries("from dropmatch import cli; cli._sweep_outputs(sys.argv[1])", str(sweep_dir))
    assert proc.returncode == 0 and "plotly is not installed" in proc.stderr, proc.stderr
    assert (sweep_dir / "table.csv").exists() and (sweep_dir / "summary.csv").exists()
    assert not (sweep_dir / "figures").exists()
    proc = _without_app_libraries(ENTRY_POINT, "report", "--from", str(sweep_dir))
    assert proc.returncode == 2 and FIGURES_HINT in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
