"""Golden decodes: the tiny pairs decode today exactly as the decoder did when tests/data/golden_tiny.json was made.

The file holds, per case, the token ids, every token record and every round's costs (timings left out) of a
decode on the hermetic tiny pair (noise 0.002) or its noisy twin (noise 0.01): DropMatch greedy and sampled, lazy
and evidence, OR and replace mode, lossless, target-only, and the relatives lazily and in replace mode. Token ids,
decisions, reasons and which fields a record keeps must match exactly; floats to 1e-5 (the JS values, a difference
of entropies, move by about 1e-6 with the thread count).

A change that is meant to alter decodes regenerates the file, and its diff is the review:
`PYTHONPATH=. .venv/bin/python tests/test_golden.py` (from the repository root).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from dropmatch.config import DecodeConfig
from dropmatch.decode import generate

FILE = Path(__file__).parent / "data" / "golden_tiny.json"
FOX, ADD, ONCE = "The quick brown fox", "def add(a, b):", "Once upon a time"
# name -> (prompt, config); a "noisy:" case decodes on the noisy pair. Only "evidence" keeps its top-N lists.
CASES = {
    "evidence": (FOX, {"method": "dropmatch", "evidence": True, "max_new_tokens": 40}),
    "lazy": (FOX, {"method": "dropmatch", "max_new_tokens": 40}),
    "naive_p05": (ADD, {"method": "dropmatch", "criterion": "naive", "p_drop": 0.5, "evidence": True,
                        "max_new_tokens": 40}),
    "replace_majority": (ADD, {"method": "dropmatch", "criterion": "majority", "mode": "replace", "evidence": True,
                               "max_new_tokens": 32}),
    "sampled": (ONCE, {"method": "dropmatch", "temperature": 0.8, "seed": 3, "evidence": True, "max_new_tokens": 32}),
    "lossless_sampled": (ONCE, {"method": "lossless", "temperature": 1.0, "seed": 5, "max_new_tokens": 32}),
    "target": (ONCE, {"method": "target", "max_new_tokens": 16}),
    "noisy:evidence": (FOX, {"method": "dropmatch", "evidence": True, "max_new_tokens": 40}),
    "noisy:lazy_js": (ADD, {"method": "dropmatch", "criterion": "js", "p_drop": 0.5, "max_new_tokens": 40}),
    "noisy:sampled": (ONCE, {"method": "dropmatch", "temperature": 0.8, "seed": 3, "evidence": True,
                             "max_new_tokens": 32}),
    "noisy:lossless_sampled": (ONCE, {"method": "lossless", "temperature": 1.0, "seed": 5, "max_new_tokens": 32}),
    "noisy:lossless_evidence": (FOX, {"method": "lossless", "evidence": True, "max_new_tokens": 32}),
    "noisy:typical": (FOX, {"method": "relative", "criterion": "typical", "knob": 0.3, "max_new_tokens": 32}),
    "noisy:fuzzy_tv_sampled": (ONCE, {"method": "relative", "criterion": "fuzzy-tv", "temperature": 0.7, "seed": 2,
                                      "max_new_tokens": 32}),
    "noisy:mars_replace": (ADD, {"method": "relative", "criterion": "mars", "knob": 0.5, "mode": "replace",
                                 "evidence": True, "max_new_tokens": 32}),
    "noisy:fly_sampled": (ONCE, {"method": "relative", "criterion": "fly", "knob": 0.05, "temperature": 0.7,
                                 "seed": 6, "gamma": 3, "max_new_tokens": 32}),
    "noisy:ears_sampled": (ONCE, {"method": "relative", "criterion": "ears", "temperature": 0.7, "seed": 3,
                                  "max_new_tokens": 32}),
    "noisy:cascade_token": (FOX, {"method": "relative", "criterion": "cascade-token", "knob": 0.05,
                                  "max_new_tokens": 32}),
    "noisy:cascade_token_sampled": (FOX, {"method": "relative", "criterion": "cascade-token", "knob": 0.3,
                                          "temperature": 0.7, "seed": 1, "max_new_tokens": 32}),
    "noisy:cascade_opt": (ADD, {"method": "relative", "criterion": "cascade-opt", "knob": 0.0, "max_new_tokens": 32}),
    "noisy:cascade_opt_sampled": (FOX, {"method": "relative", "criterion": "cascade-opt", "knob": 0.0,
                                        "temperature": 0.3, "seed": 2, "max_new_tokens": 32}),
    "noisy:ensemble": (ADD, {"method": "relative", "criterion": "ensemble", "knob": 0.3, "evidence": True,
                             "max_new_tokens": 32}),
    "noisy:ensemble_sampled": (ONCE, {"method": "relative", "criterion": "ensemble", "knob": 0.5, "temperature": 0.7,
                                      "seed": 4, "max_new_tokens": 32}),
    "noisy:lenience_sampled": (ONCE, {"method": "relative", "criterion": "lenience", "knob": 0.5, "temperature": 0.7,
                                      "seed": 4, "max_new_tokens": 32}),
    "noisy:lenience": (FOX, {"method": "relative", "criterion": "lenience", "knob": 0.5, "max_new_tokens": 32}),
    "noisy:relaxed_top_k": (ADD, {"method": "relative", "criterion": "relaxed-top-k", "knob": [8, 1.0],
                                  "max_new_tokens": 32}),
    "noisy:relaxed_top_k_sampled": (ONCE, {"method": "relative", "criterion": "relaxed-top-k", "knob": [200, 1.0],
                                          "temperature": 0.7, "seed": 5, "max_new_tokens": 32}),
    "noisy:typical_gated": (ADD, {"method": "relative", "criterion": "typical", "knob": 0.3, "span_gate": True,
                                  "max_new_tokens": 32}),
    "noisy:tie_only_replace": (FOX, {"method": "relative", "criterion": "tie-only", "mode": "replace",
                                     "max_new_tokens": 32}),
}  # fmt: skip


def decode(case: str, pair) -> dict:
    """One case decoded, as the file keeps it: the trace's dict without timings (and without top-N lists)."""
    prompt, config = CASES[case]
    trace = generate(pair, prompt, DecodeConfig(**config)).to_dict()
    keep = {"prompt": prompt, "config": config, "token_ids": trace["token_ids"], "finish": trace["finish"]}
    keep["rounds"] = [{k: v for k, v in r.items() if not k.startswith("t_")} for r in trace["rounds"]]
    keep["records"] = [r if case == "evidence" else r | {"top": None} for r in trace["records"]]
    return keep


def same(a, b) -> bool:
    """Equal values, floats to 1e-5, recursively through lists and dicts."""
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-5)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(FILE.read_text(encoding="utf-8"))


def test_the_file_holds_every_case(golden):
    assert sorted(golden) == sorted(CASES)
    assert all(golden[c]["config"] == CASES[c][1] and golden[c]["prompt"] == CASES[c][0] for c in CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_decode_matches_the_golden_trace(case, golden, tiny_pair, noisy_pair):
    want = golden[case]
    got = decode(case, noisy_pair if case.startswith("noisy:") else tiny_pair)
    assert got["token_ids"] == want["token_ids"] and got["finish"] == want["finish"]
    assert got["rounds"] == want["rounds"]
    assert len(got["records"]) == len(want["records"])
    for mine, theirs in zip(got["records"], want["records"]):
        assert mine.keys() == theirs.keys()
        bad = [k for k in theirs if not same(mine[k], theirs[k])]
        assert not bad, f"round {theirs['round']} pos {theirs['pos']}: {[(k, mine[k], theirs[k]) for k in bad]}"


def main() -> None:
    """Regenerate the file from the decoder as it is now."""
    import torch
    from tiny_pair import tiny_pair

    torch.set_num_threads(2)
    pairs = {False: tiny_pair(), True: tiny_pair(noise=0.01)}
    out = {case: decode(case, pairs[case.startswith("noisy:")]) for case in CASES}
    FILE.write_text(json.dumps(out, ensure_ascii=True) + "\n", encoding="utf-8")
    print(f"wrote {FILE} ({FILE.stat().st_size:,} bytes, {len(out)} cases)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
