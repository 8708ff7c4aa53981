"""The command line: `generate`, `bench`, `headbench`, `sweep` and `report` (a stable contract other tools rely on)."""

from __future__ import annotations

import argparse
import json
import sys

from dropmatch.config import METHODS, MODES, DecodeConfig
from dropmatch.criteria import CRITERIA
from dropmatch.models import DEFAULT_DRAFT, DEFAULT_TARGET, DTYPES


class _Parser(argparse.ArgumentParser):
    """argparse that prints one line and exits 2 on bad input (no usage dump, no traceback)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _add_decode_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default=DEFAULT_TARGET, help="hub id, local path, or 'embedded' (default)")
    p.add_argument("--draft", default=DEFAULT_DRAFT, help="hub id, local path, or 'embedded' (default)")
    p.add_argument("--gamma", type=int, default=5, help="draft tokens per round")
    p.add_argument("--k", type=int, default=5, help="dropout paths K")
    p.add_argument("--p-drop", type=float, default=0.3, help="dropout rate on the LM-head input")
    p.add_argument("--criterion", default="js+majority", choices=list(CRITERIA))
    p.add_argument("--mode", default="or", choices=MODES)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", default="bfloat16", choices=list(DTYPES))
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    p.add_argument("--device-map", default=None, help="'auto' spreads a pair too large for one device (accelerate)")
    p.add_argument("--chat", action="store_true", help="wrap the prompt in the chat template")


def decode_config(args: argparse.Namespace, method: str, evidence: bool = False) -> DecodeConfig:
    return DecodeConfig(
        method=method,
        gamma=args.gamma,
        K=args.k,
        p_drop=args.p_drop,
        criterion=args.criterion,
        mode=args.mode,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        evidence=evidence,
    )


def _cmd_generate(args: argparse.Namespace) -> int:
    from dropmatch import metrics
    from dropmatch.decode import generate
    from dropmatch.models import load_pair

    config = decode_config(args, args.method, evidence=args.evidence)
    pair = load_pair(args.target, args.draft, args.dtype, args.device, args.device_map)
    trace = generate(pair, args.prompt, config, chat=args.chat)
    m = metrics.compute(trace)
    print(trace.text)
    print("---")
    for key in ("tau", "acceptance_rate", "tokens_per_s", "n_tokens", "target_forwards", "draft_forwards", "histogram", "relaxed_share"):
        value = m[key]
        print(f"{key:>16}: {round(value, 3) if isinstance(value, float) else value}")
    if args.json:
        out = {"config": trace.config, "text": trace.text, "token_ids": trace.token_ids,
               "records": trace.to_dict()["records"], "rounds": trace.to_dict()["rounds"],
               "target_id": trace.target_id, "draft_id": trace.draft_id, "prompt": trace.prompt,
               "n_prompt_tokens": trace.n_prompt_tokens, "finish": trace.finish, "metrics": m}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, ensure_ascii=False)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m dropmatch", description="DropMatch speculative decoding")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    gen = sub.add_parser("generate", help="decode one prompt and print the text and metrics")
    gen.add_argument("--prompt", required=True)
    gen.add_argument("--method", default="dropmatch", choices=METHODS)
    gen.add_argument("--json", default=None, help="write config, text, token_ids, records, metrics here")
    gen.add_argument("--evidence", action="store_true", help="compute the K paths at every position (for display)")
    _add_decode_args(gen)
    gen.set_defaults(func=_cmd_generate)

    from dropmatch import bench, headbench, sweep

    bench.add_parser(sub, _add_decode_args)
    headbench.add_parser(sub)
    sweep.add_parsers(sub)  # sweep, report
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"{parser.prog} {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
