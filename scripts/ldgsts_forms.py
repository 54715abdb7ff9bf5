#!/usr/bin/env python3
"""Counts the async copies (LDGSTS) of sm_90 kernels by SASS form, without the CUDA toolkit's
disassembler (this machine and CI have none), and fails when a copy takes the folded form:
    python3 scripts/ldgsts_forms.py build/CMakeFiles/kbench_ops.dir/kernels/rmsnorm/rmsnorm.cu.o
Reads cubins, or objects and executables with cubins inside (every sm_90 CUDA ELF in the file).
An sm_90 instruction is 16 bytes; LDGSTS is opcode 0x1ae in its low 9 bits. Bit 9 clear (low 12
bits 0xdae) is the form whose shared address adds a uniform register, [R+UR]: with an L2 cache
hint on the copies (KBENCH_ASYNC_EVICT_LAST), ptxas 13.0 emitted that form with no policy
descriptor, and each was an illegal instruction at run time (kernels/rmsnorm/NOTES.md,
fifty-ninth session). How this was read: on cubins of gpu_kernels.cu, polynorm.cu and
layernorm_bwd.cu with the hint, the kernels with such copies were 11, 15 and 30, the kernels
`sass_desc_check.py` (nvdisasm) flagged on the GPU machine; builds without the hint have none.
The encoding is NVIDIA's and undocumented. Checked against the disassembler (sixtieth session,
nvdisasm 13.5): on a lab build's objects this and sass_desc_check.py flagged the same 67
kernels, each folded copy's descriptor an odd register; the tree's build has none.
Exit 1 when a folded copy is found, 2 when no sm_90 kernel is."""
import struct
import sys

from sass_counts import demangle

EM_CUDA = 190
LDGSTS = 0x1AE
FOLDED = 0xDAE


def cuda_elfs(data: bytes):
    """(offset) of each sm_90 CUDA ELF in `data`."""
    at = data.find(b"\x7fELF")
    while at >= 0:
        machine, = struct.unpack_from("<H", data, at + 0x12)
        flags, = struct.unpack_from("<I", data, at + 0x30)
        if machine == EM_CUDA and (flags >> 8) & 0xFF == 90:
            yield at
        at = data.find(b"\x7fELF", at + 1)


def kernel_code(data: bytes, base: int):
    """(kernel name, code bytes) of each `.text.<kernel>` section of the ELF at `base`."""
    shoff, = struct.unpack_from("<Q", data, base + 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, base + 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, base + shoff + i * shentsize)
               for i in range(shnum)]
    names_at = base + headers[shstrndx][4]
    for h in headers:
        name = data[names_at + h[0]:data.index(b"\0", names_at + h[0])].decode()
        if name.startswith(".text."):
            yield name[len(".text."):], data[base + h[4]:base + h[4] + h[5]]


def copy_forms(code: bytes):
    """(LDGSTS count, folded LDGSTS count) in one kernel's code."""
    copies = folded = 0
    for at in range(0, len(code) - 15, 16):
        low, = struct.unpack_from("<Q", code, at)
        if low & 0x1FF == LDGSTS:
            copies += 1
            folded += low & 0xFFF == FOLDED
    return copies, folded


def main() -> int:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    kernels = copies = 0
    bad = []
    for path in sys.argv[1:]:
        data = open(path, "rb").read()
        for base in cuda_elfs(data):
            for name, code in kernel_code(data, base):
                n, folded = copy_forms(code)
                kernels += 1
                copies += n
                if folded:
                    bad.append((name, folded, n))
    if kernels == 0:
        print(f"ldgsts_forms: no sm_90 kernels in {' '.join(sys.argv[1:])}")
        return 2
    for (_, folded, n), name in zip(bad, demangle([b[0] for b in bad]) if bad else []):
        print(f"{name}: {folded} of {n} async copies in the folded form")
    print(f"ldgsts_forms: {kernels} kernels, {copies} async copies, {len(bad)} kernels with folded "
          "copies")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
