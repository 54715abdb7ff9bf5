#!/usr/bin/env python3
"""Checks that every memory instruction's descriptor is an aligned, written register pair:
    python3 scripts/sass_desc_check.py build/kbench
On sm_90 each global access names a 64-bit descriptor in a uniform register pair, desc[URn]
(the default one loaded from the constant bank, or an L2 cache policy), n even. ptxas 13.0,
given an L2 cache hint on cp.async, emitted LDGSTS in the form [R+UR] (a uniform shared offset
folded in) whose descriptor is an odd register: desc[UR1], a pair no instruction of the kernel
writes, was an illegal instruction at run time (kernels/rmsnorm/NOTES.md, fifty-eighth
session); in a lab build some read desc[UR15] with UR15 and UR16 both written, which the
unwritten rule alone let pass (sixtieth session). This flags a kernel with either: a descriptor
in an odd register, or one whose pair is not written. Static: a pair written on one path and
read on another passes. Takes objects, executables, cubins (cuobjdump and nvdisasm, as
sass_counts.py) or a .sass text file. Exit 1 when a kernel has such a descriptor."""
import re
import sys

from sass_counts import KERNEL, demangle, disassemble

INSTRUCTION = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*)")
FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")  # cuobjdump -sass's kernel header
UNIFORM_DEST = re.compile(r"^UR(\d+)\b")
DESCRIPTOR = re.compile(r"desc\[UR(\d+)\]")


def kernels_of(text: str) -> dict:
    """{kernel: (uniform registers written, [(descriptor register, instruction)])}."""
    kernels, current = {}, None
    for line in text.splitlines():
        m = KERNEL.match(line) or FUNCTION.match(line)
        if m:
            current = kernels.setdefault(m.group(1), (set(), []))
            continue
        m = INSTRUCTION.match(line)
        if not m or current is None:
            continue
        opcode, operands = m.group(1), m.group(2)
        written, reads = current
        dest = UNIFORM_DEST.match(operands)
        if dest:
            n = int(dest.group(1))
            written.add(n)
            if ".64" in opcode or ".WIDE" in opcode:
                written.add(n + 1)
        for d in DESCRIPTOR.findall(operands):
            reads.append((int(d), f"{opcode} {operands.split(';')[0].strip()}"))
    return kernels


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    text = open(path).read() if path.endswith(".sass") else disassemble(path)
    kernels = kernels_of(text)
    if not kernels:
        sys.exit(f"sass_desc_check: no kernels found in {path}")
    names = list(kernels)
    bad = 0
    with_copies = 0
    for name, pretty in zip(names, demangle(names)):
        written, reads = kernels[name]
        misaligned = [(r, i) for r, i in reads if r % 2]
        unwritten = [(r, i) for r, i in reads if r not in written or r + 1 not in written]
        with_copies += any(i.startswith(("LDGSTS", "UBLKCP")) for _, i in reads)
        if misaligned or unwritten:
            bad += 1
        if misaligned:
            print(f"{pretty}: {len(misaligned)} of {len(reads)} accesses read a descriptor in an "
                  f"odd register, first: {misaligned[0][1]}")
        elif unwritten:
            print(f"{pretty}: {len(unwritten)} of {len(reads)} accesses read an unwritten "
                  f"descriptor, first: {unwritten[0][1]}")
    print(f"sass_desc_check: {len(kernels)} kernels, {with_copies} with async copies, {bad} reading "
          "a misaligned or unwritten descriptor")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
