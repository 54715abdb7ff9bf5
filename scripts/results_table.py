#!/usr/bin/env python3
"""Markdown table of % of the measured copy ceiling, per op, impl, dtype and N, from kbench
result CSVs (it reads column names only, no list of kernels). The README's results table is
this script's output:  python3 scripts/results_table.py results/*/rmsnorm-default.csv
Options: --dtype bf16 (default), --l2 cold, --best (per device and op only kbench's best impl,
by mean over N among those covering the most N, plus any peer rows `torch_*`, and a column
with the worst N of each row)."""
import argparse
import csv
import sys
from collections import defaultdict


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="+")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--l2", default="cold")
    parser.add_argument("--best", action="store_true")
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
    if args.best:
        cells = best_rows(cells)
    ns = sorted(columns)
    print(f"% of the measured copy ceiling, {args.dtype}, {args.l2} L2, M·N = 32M elements "
          f"(kbench `ceiling_pct`):\n")
    worst = " | worst" if args.best else ""
    print("| device | op | impl | " + " | ".join(f"N={n}" for n in ns) + worst + " |")
    print("|---|---|---|" + "---:|" * (len(ns) + bool(args.best)))
    for (device, op, impl), by_n in sorted(cells.items()):
        values = " | ".join(f"{by_n[n]:.1f}" if n in by_n else "" for n in ns)
        if args.best:
            n_min = min(by_n, key=by_n.get)
            values += f" | {by_n[n_min]:.1f} (N={n_min})"
        print(f"| {device} | {op} | {impl} | {values} |")
    return 0


def best_rows(cells):
    """Per (device, op): among the kbench impls that cover the most N (an impl may skip rows,
    as layernorm v5 past N = 1024), the one with the highest mean % over them; and peer rows."""
    best = {}
    for (device, op, impl), by_n in cells.items():
        if impl.startswith("torch_"):
            continue
        rank = (len(by_n), sum(by_n.values()) / len(by_n))
        if (device, op) not in best or rank > best[(device, op)][0]:
            best[(device, op)] = (rank, impl)
    return {key: by_n for key, by_n in cells.items()
            if key[2].startswith("torch_") or best.get(key[:2], (0, None))[1] == key[2]}


if __name__ == "__main__":
    sys.exit(main())
