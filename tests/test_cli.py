"""The CLI contract: bad input exits 2 with one clear line (`generate --json` on the real pair: test_real_pair.py)."""

import subprocess
import sys

import pytest

from dropmatch.cli import main


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
        (["sweep", "--suite", "humaneval", "--out", "x", "--rule", "bogus=1"], "NAME one of fuzzy-js"),
        (["matched", "--from", "tests/data/sweep_small"], "no relative ran on mini_spec_bench"),
        (["calibrate", "--suite", "humaneval", "--target-unanimity", "2"], "target unanimity must lie in [0, 1]"),
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
