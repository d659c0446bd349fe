"""``causal-mw pairs export``: validated repairs as contrastive training pairs (JSONL)."""

from __future__ import annotations

import argparse
from typing import Any

from causal_middleware.cli._common import add_json_arg, add_store_arg, print_json
from causal_middleware.repair.pairs import FORMATS, pairs_from_records, write_pairs


def register(subparsers: Any) -> None:
    pairs = subparsers.add_parser("pairs", help="export validated repairs as contrastive training pairs")
    sub = pairs.add_subparsers(dest="pairs_command", metavar="SUBCOMMAND")
    sub.required = True
    p = sub.add_parser(
        "export",
        help="write the store's validated repairs as JSONL (TRL DPO or reward-model format)",
        description=(
            "dpo: one {prompt, chosen, rejected, metadata} object per line (TRL DPOTrainer). "
            "reward: {chosen, rejected, metadata} with the prompt prepended to both (TRL RewardTrainer)."
        ),
    )
    p.add_argument("--out", required=True, metavar="FILE", help="JSONL file to write")
    p.add_argument("--format", choices=FORMATS, default="dpo", help="pair format (default: dpo)")
    p.add_argument(
        "--all",
        action="store_true",
        help="also export repairs that failed validation (default: validated only)",
    )
    add_json_arg(p)
    add_store_arg(p)
    p.set_defaults(func=_export)


def _export(args: argparse.Namespace) -> int:
    from causal_middleware.store.open import open_store

    try:
        store = open_store(args.store, create=False)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"span store not found: {args.store} (pass --store or set CAUSAL_MW_STORE)"
        ) from None
    try:
        records = store.get_records("repair")
    finally:
        store.close()
    pairs = pairs_from_records(records, validated_only=not args.all)
    count = write_pairs(pairs, args.out, args.format)
    summary = {"out": str(args.out), "format": args.format, "pairs": count, "repair_records": len(records)}
    if args.json:
        print_json(summary)
    else:
        print(f"wrote {count} {args.format} pair(s) from {len(records)} repair record(s) to {args.out}")
    return 0
