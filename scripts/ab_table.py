#!/usr/bin/env python3
"""A/B table: % of the measured copy ceiling per point (op, impl, dtype, shape), one column per
labelled kbench CSV, e.g. the builds of scripts/ab-flags.sh run in turn in one call:
    python3 scripts/ab_table.py grid=a.csv clusters=b.csv grid.2=c.csv clusters.2=d.csv
Reads column names only. A cell is blank where that file has no passing row for the point."""
import csv
import sys


def main() -> int:
    if len(sys.argv) < 2 or any("=" not in a for a in sys.argv[1:]):
        print(__doc__, file=sys.stderr)
        return 2
    labels, cells, points = [], {}, []
    for arg in sys.argv[1:]:
        label, path = arg.split("=", 1)
        labels.append(label)
        try:
            with open(path, newline="") as f:
                for row in csv.DictReader(f):
                    point = (row["op"], row["impl"], row["dtype"], row["shape"])
                    if point not in points:
                        points.append(point)
                    if row["status"] == "pass" and row.get("ceiling_pct"):
                        cells[(label, point)] = float(row["ceiling_pct"])
        except OSError as e:
            print(f"{path}: {e.strerror}", file=sys.stderr)
    print("| op | impl | dtype | shape | " + " | ".join(labels) + " |")
    print("|---|---|---|---|" + "---:|" * len(labels))
    for point in points:
        values = [f"{cells[(l, point)]:.1f}" if (l, point) in cells else "" for l in labels]
        print("| " + " | ".join(point) + " | " + " | ".join(values) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
