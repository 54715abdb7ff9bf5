#!/usr/bin/env python3
"""SASS instruction counts per kernel, of one build or two side by side, so a change's effect on
the instructions a kernel issues is read before (or without) a GPU:
    python3 scripts/sass_counts.py build/CMakeFiles/kbench_ops.dir/kernels/layernorm/layernorm.cu.o
    python3 scripts/sass_counts.py A.o B.o --filter LayernormFwdStaged --filter bfloat16 --ops FFMA,FADD
Takes objects, executables or cubins (several cubins inside one are all read). Kernels pair up by
their demangled names (an anonymous namespace's per-file hash does not survive demangling), so
the same source built with other knobs (scripts/ab-flags.sh) pairs with itself. Counts are static: an instruction
in a loop counts once. Needs cuobjdump and nvdisasm (the CUDA toolkit; $CUOBJDUMP and $NVDISASM
name others)."""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

KERNEL = re.compile(r"^(_Z\S+):\s*$")
INSTRUCTION = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)")


def tool(name: str) -> str:
    path = os.environ.get(name.upper()) or shutil.which(name) or f"/usr/local/cuda/bin/{name}"
    if not os.access(path, os.X_OK):
        sys.exit(f"sass_counts: {name} not found (the CUDA toolkit's; set ${name.upper()})")
    return path


def disassemble(path: str) -> str:
    """nvdisasm's text of every cubin in `path` (a cubin itself, or an object or executable)."""
    if path.endswith(".cubin"):
        cubins = [path]
        workdir = None
    else:
        workdir = tempfile.mkdtemp()
        subprocess.run([tool("cuobjdump"), "-xelf", "all", os.path.abspath(path)], cwd=workdir,
                       check=True, capture_output=True)
        cubins = sorted(glob.glob(os.path.join(workdir, "*.cubin")))
    try:
        return "".join(subprocess.run([tool("nvdisasm"), "-c", c], check=True, capture_output=True,
                                      text=True).stdout for c in cubins)
    finally:
        if workdir:
            shutil.rmtree(workdir)


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                         check=True).stdout.split("\n")
    return out[: len(names)]


def counts(path: str) -> dict:
    """{kernel: {opcode: count}} (the opcode without its modifiers: FFMA, LDS, ...)."""
    kernels, current = {}, None
    for line in disassemble(path).splitlines():
        m = KERNEL.match(line)
        if m:
            current = kernels.setdefault(m.group(1), {})
            continue
        m = INSTRUCTION.match(line)
        if m and current is not None:
            current[m.group(1)] = current.get(m.group(1), 0) + 1
    names = list(kernels)
    return dict(zip(demangle(names), (kernels[n] for n in names)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("builds", nargs="+", help="one or two objects, executables or cubins")
    parser.add_argument("--filter", action="append", default=[],
                        help="only kernels whose demangled name contains this (repeatable: all)")
    parser.add_argument("--ops", default="", help="opcodes to count apart, comma separated")
    args = parser.parse_args()
    if len(args.builds) > 2:
        parser.error("one or two builds")
    tables = [counts(b) for b in args.builds]
    ops = [o for o in args.ops.split(",") if o]
    header = ["total"] + ops
    print("| kernel | " + " | ".join(f"{h} ({i + 1})" for i in range(len(tables)) for h in header)
          + (" | change |" if len(tables) == 2 else " |"))
    print("|---|" + "---:|" * (len(header) * len(tables) + (len(tables) == 2)))
    for name in sorted(tables[0]):
        if not all(f in name for f in args.filter):
            continue
        cells, totals = [], []
        for t in tables:
            ops_of = t.get(name)
            if ops_of is None:  # not in this build
                cells += [""] * len(header)
                totals.append(None)
                continue
            totals.append(sum(ops_of.values()))
            cells += [str(totals[-1])] + [str(ops_of.get(o, 0)) for o in ops]
        if len(tables) == 2:
            cells.append("" if None in totals else f"{totals[1] - totals[0]:+d}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
