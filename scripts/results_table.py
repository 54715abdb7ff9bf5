#!/usr/bin/env python3
"""Markdown table of % of the measured copy ceiling, per op, impl, dtype and N, from kbench
result CSVs (it reads column names only, no list of kernels). The README's results table is
this script's output:  python3 scripts/results_table.py results/*/rmsnorm-default.csv
Options: --dtype bf16 (default), --impl-prefix v (skip test-only impls), --l2 cold."""
import argparse
import csv
import sys
from collections import defaultdict


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="+")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--l2", default="cold")
    args = parser.parse_args()

    cells = defaultdict(dict)  # (device, op, impl) -> {n: ceiling_pct}
    columns = set()
    for path in args.csv:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row["dtype"] != args.dtype or row["l2"] != args.l2 or row["status"] != "pass":
                    continue
                if not row.get("ceiling_pct"):
                    continue
                n = int(row["n"])
                columns.add(n)
                cells[(row["device"], row["op"], row["impl"])][n] = float(row["ceiling_pct"])
    if not cells:
        print(f"no passing {args.dtype} rows with ceiling_pct in {args.csv}", file=sys.stderr)
        return 2
    ns = sorted(columns)
    print(f"% of the measured copy ceiling, {args.dtype}, {args.l2} L2, M·N = 32M elements "
          f"(kbench `ceiling_pct`):\n")
    print("| device | op | impl | " + " | ".join(f"N={n}" for n in ns) + " |")
    print("|---|---|---|" + "---:|" * len(ns))
    for (device, op, impl), by_n in sorted(cells.items()):
        values = " | ".join(f"{by_n[n]:.1f}" if n in by_n else "" for n in ns)
        print(f"| {device} | {op} | {impl} | {values} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
