#!/usr/bin/env python3
"""PyTorch peer rows in kbench's CSV schema: torch_eager and torch_compile for kbench's ops,
shapes and dtypes, timed the way kbench times (cold L2, device events, median), so that
`kbench compare` and `kbench plot` put them next to kbench's impls.

    python3 scripts/torch_peers.py --kbench build/kbench --ops rmsnorm,rmsnorm_bwd \\
        --dtype bf16 --out results/<device-slug>/torch-peers.csv

Shapes, eps and each point's minimum bytes and flops come from `kbench list --json` (the op's
reference file is the one model); device name, arch, datasheet peak and measured ceiling from
`kbench devices --json`. Only what each op *is* in PyTorch terms lives here (FORWARDS, GRADS).
Correctness is a sanity check against a float64 PyTorch computation on the same inputs:
status pass when every output is finite and its ||out - ref|| / ||ref|| is under
4 units of roundoff of the dtype (1e-5 at least); kbench's own per-element check is stricter.
"""
import argparse
import csv
import json
import math
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

# DESIGN.md's stable schema; compare and plot read columns by name.
COLUMNS = (
    "kbench_version timestamp device device_slug arch sm_count driver runtime op impl dtype "
    "shape m n k l2 samples median_us mean_us min_us p10_us p90_us stddev_us noise_pct "
    "sm_clock_mhz bytes flops gbps tflops intensity peak_gbps peak_pct ceiling_gbps "
    "ceiling_pct max_abs_err max_rel_err rel_l2_err atol rtol status note"
).split()

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
ROUNDOFF = {"fp32": 2.0**-24, "fp16": 2.0**-11, "bf16": 2.0**-8}


# ----- what each op is in PyTorch ------------------------------------------------------------
# A forward: its inputs (name, extent, init) in kbench's order and fn(eps, n) -> f(*inputs)
# returning the outputs as a tuple. A backward "<op>_bwd" differentiates the forward's
# outputs (upstream gradients random, one per output) with respect to the inputs kbench's
# backward returns gradients for (GRADS). Only the backward is timed: the forward graph is
# built once and its backward re-run (retain_graph).

def poly_norm(x, w, b, eps):
    """Motif's PolyNorm, computed in fp32 as a careful user would (float64 for the reference);
    returns the input dtype."""
    def norm(u):
        return u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + eps)
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    xf, wf, bf = x.to(acc), w.to(acc), b.to(acc)
    y = wf[0] * norm(xf ** 3) + wf[1] * norm(xf ** 2) + wf[2] * norm(xf) + bf[0]
    return y.to(x.dtype)


def fused_add_rms_norm(x, r, w, n, eps):
    h = x + r
    return F.rms_norm(h, (n,), w, eps), h


FORWARDS = {
    "rmsnorm": ([("x", "mn", "normal"), ("w", "n", "one")],
                lambda eps, n: lambda x, w: (F.rms_norm(x, (n,), w, eps),)),
    "fused_add_rmsnorm": ([("x", "mn", "normal"), ("r", "mn", "normal"), ("w", "n", "one")],
                          lambda eps, n: lambda x, r, w: fused_add_rms_norm(x, r, w, n, eps)),
    "layernorm": ([("x", "mn", "normal"), ("w", "n", "one"), ("b", "n", "normal")],
                  lambda eps, n: lambda x, w, b: (F.layer_norm(x, (n,), w, b, eps),)),
    "polynorm": ([("x", "mn", "normal"), ("w", 3, "one"), ("b", 1, "normal")],
                 lambda eps, n: lambda x, w, b: (poly_norm(x, w, b, eps),)),
    "fused_mul_polynorm": ([("x", "mn", "normal"), ("m", "mn", "normal"), ("w", 3, "one"), ("b", 1, "normal")],
                           lambda eps, n: lambda x, m, w, b: (poly_norm(x, w, b, eps) * m,)),
}
# Inputs whose gradients each backward returns, in kbench's output order (fused add: x and r
# get the same gradient, kbench writes it once).
GRADS = {"rmsnorm": ("x", "w"), "fused_add_rmsnorm": ("x", "w"), "layernorm": ("x", "w", "b"),
         "polynorm": ("x", "w", "b"), "fused_mul_polynorm": ("x", "m", "w", "b")}


def make_inputs(specs, m, n, dtype):
    out = []
    for _, extent, init in specs:
        shape = (m, n) if extent == "mn" else (n,) if extent == "n" else (extent,)
        t = torch.randn(*shape, device="cuda", dtype=dtype)
        out.append(1 + 0.1 * t if init == "one" else t)
    return out


def forward_peer(op_name, m, n, dtype, eps, compiled):
    specs, make_fn = FORWARDS[op_name]
    inputs = make_inputs(specs, m, n, dtype)
    fn = make_fn(eps, n)
    ref_fn = fn
    if compiled:
        fn = torch.compile(fn, dynamic=False)  # specialized per shape: the peer at its best
    run = lambda: fn(*inputs)  # noqa: E731
    reference = lambda: ref_fn(*(t.double() for t in inputs))  # noqa: E731
    return run, reference


def backward_peer(op_name, m, n, dtype, eps, compiled):
    specs, make_fn = FORWARDS[op_name]
    names = [name for name, _, _ in specs]
    wanted = [names.index(g) for g in GRADS[op_name]]
    inputs = [t.requires_grad_(i in wanted) for i, t in enumerate(make_inputs(specs, m, n, dtype))]
    fn = make_fn(eps, n)
    ref_fn = fn
    if compiled:
        fn = torch.compile(fn, dynamic=False)
    outputs = fn(*inputs)
    upstream = [torch.randn_like(o) for o in outputs]
    run = lambda: torch.autograd.grad(outputs, [inputs[i] for i in wanted], upstream, retain_graph=True)  # noqa: E731

    def reference():
        inputs64 = [t.detach().double().requires_grad_(i in wanted) for i, t in enumerate(inputs)]
        outputs64 = ref_fn(*inputs64)
        return torch.autograd.grad(outputs64, [inputs64[i] for i in wanted], [u.double() for u in upstream])

    return run, reference


def peer(op_name):
    """make(m, n, dtype, eps, compiled) -> (run, reference) for a kbench op, or None."""
    if op_name in FORWARDS:
        return lambda *args: forward_peer(op_name, *args)
    if op_name.endswith("_bwd") and op_name[:-4] in FORWARDS:
        return lambda *args: backward_peer(op_name[:-4], *args)
    return None


# ----- timing, as kbench does it ---------------------------------------------------------------

def persisting_l2_reset():
    """cudaCtxResetPersistingL2Cache of a CUDA runtime in this process, or None. Triton loads
    with an L2 evict_last policy (Inductor's first pass over a row); such lines outlive a
    read-only flush of any size, as kbench's flush found (kernels/rmsnorm/NOTES.md, fifty-eighth
    session), so they are returned to normal status before each flush, as kbench does."""
    import ctypes
    import glob
    import os
    names = []
    for module in ("nvidia.cuda_runtime", "nvidia.cu13", "nvidia.cu12"):
        try:
            package = __import__(module, fromlist=["_"])
        except ImportError:
            continue
        for root in getattr(package, "__path__", []):
            names += sorted(glob.glob(os.path.join(root, "lib", "libcudart.so*")))
    names += ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    for name in names:
        try:
            reset = ctypes.CDLL(name).cudaCtxResetPersistingL2Cache
        except (OSError, AttributeError):
            continue
        reset.restype = ctypes.c_int
        return reset
    return None


class ColdTimer:
    """Reads a buffer of twice the L2 before each sample (clean lines, nothing dirty left to
    write back), after returning persisting lines to normal (persisting_l2_reset), then queues
    a ~50 us sleep so Python's launch overhead stays out of the event interval."""

    def __init__(self, l2_bytes, clock_khz):
        self.flush = torch.ones(max(2 * l2_bytes, 64 << 20) // 4, device="cuda", dtype=torch.int32)
        self.sleep_cycles = int(50e-6 * clock_khz * 1e3)
        self.reset = persisting_l2_reset()
        if self.reset is None:
            print("torch_peers: no CUDA runtime to reset persisting L2 lines with; "
                  "evict_last lines may outlive the flush", file=sys.stderr)

    def sample_us(self, run):
        if self.reset is not None:
            self.reset()  # the previous sample is done: nothing of it still in flight
        self.flush.sum()
        torch.cuda._sleep(self.sleep_cycles)
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) * 1e3


def percentile(sorted_values, q):
    pos = (len(sorted_values) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def errors(outputs, references):
    """Max abs, max rel and the worst ||out-ref||/||ref|| over the outputs."""
    max_abs = max_rel = rel_l2 = 0.0
    finite = True
    for out, ref in zip(outputs, references):
        out = out.detach().double()
        diff = (out - ref).abs()
        finite = finite and bool(torch.isfinite(out).all())
        max_abs = max(max_abs, float(diff.max()))
        nz = ref != 0
        if bool(nz.any()):
            max_rel = max(max_rel, float((diff[nz] / ref[nz].abs()).max()))
        rel_l2 = max(rel_l2, float(diff.norm() / max(float(ref.norm()), 1e-300)))
    return finite, max_abs, max_rel, rel_l2


# ----- main --------------------------------------------------------------------------------

def kbench_json(kbench, *args):
    return json.loads(subprocess.run([kbench, *args], check=True, capture_output=True, text=True).stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kbench", default="build/kbench")
    p.add_argument("--ops", default="rmsnorm,rmsnorm_bwd")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--sweep", default="default", choices=["quick", "default", "full"])
    p.add_argument("--providers", default="eager,compile")
    p.add_argument("--samples", type=int, default=50)
    p.add_argument("--ceilings", default=None, help="measured ceilings (kbench devices --ceilings)")
    p.add_argument("--out", required=True)
    a = p.parse_args()

    for flag in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, flag):  # one compile per shape: lift the limits
            setattr(torch._dynamo.config, flag, 1024)
    # The backward is re-run on one graph (retain_graph=True), which donated buffers forbid.
    if hasattr(torch._functorch.config, "donated_buffer"):
        torch._functorch.config.donated_buffer = False

    ops = {o["op"]: o for o in kbench_json(a.kbench, "list", "--json")}
    devices = kbench_json(a.kbench, "devices", "--json", *(["--ceilings", a.ceilings] if a.ceilings else []))
    dev = devices[torch.cuda.current_device()]
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    clock_khz = getattr(props, "clock_rate", 0) or 1980000
    timer = ColdTimer(getattr(props, "L2_cache_size", 64 << 20), clock_khz)
    version = subprocess.run([a.kbench, "--version"], capture_output=True, text=True).stdout.strip()
    ceiling = dev.get("ceiling_copy_gbps") or float("nan")

    with open(a.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for op_name in a.ops.split(","):
            if peer(op_name) is None or op_name not in ops:
                have = sorted(list(FORWARDS) + [f + "_bwd" for f in FORWARDS])
                sys.exit(f"torch_peers: no PyTorch peer for op '{op_name}' (have: {', '.join(have)})")
            op = ops[op_name]
            work = {(w["shape"], w["dtype"]): w for w in op["work"]}
            for dtype in a.dtype.split(","):
                for shape in op["sweep_" + a.sweep]:
                    m, n = (int(v) for v in shape.split("x")[:2])
                    for provider in a.providers.split(","):
                        try:
                            row = measure(op_name, op, provider, m, n, dtype, timer, a.samples)
                        except Exception as e:  # one peer failing must not lose the others
                            print(f"{op_name} torch_{provider} {dtype} {shape}: {e}", file=sys.stderr)
                            torch.cuda.empty_cache()
                            continue
                        w = work[(shape, dtype)]
                        seconds = row["median_us"] * 1e-6
                        gbps = w["bytes"] / seconds / 1e9
                        row.update(
                            kbench_version=version, timestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            device=dev["name"], device_slug=dev["slug"], arch=dev["arch"],
                            sm_count=dev["sm_count"], driver=dev["driver"], runtime=dev["runtime"],
                            op=op_name, impl="torch_" + provider, dtype=dtype, shape=shape, m=m, n=n,
                            k=0, l2="cold", sm_clock_mhz="", bytes=w["bytes"], flops=w["flops"],
                            gbps=gbps, tflops=w["flops"] / seconds / 1e12,
                            intensity=w["flops"] / w["bytes"], peak_gbps=dev["peak_gbps"],
                            peak_pct=100 * gbps / dev["peak_gbps"], ceiling_gbps=ceiling,
                            ceiling_pct=100 * gbps / ceiling, atol="", rtol="",
                            note=f"torch {torch.__version__}")
                        writer.writerow(row)
                        f.flush()
                        print(f"{op_name:12} torch_{provider:8} {dtype} {shape:12} "
                              f"{row['median_us']:9.2f} us {gbps:7.0f} GB/s {row['ceiling_pct']:5.1f}% "
                              f"{row['status']}", flush=True)
    return 0


def measure(op_name, op, provider, m, n, dtype, timer, samples):
    run, reference = peer(op_name)(m, n, DTYPES[dtype], op["eps"], provider == "compile")
    outputs = run()  # also the warm-up (and the compile)
    finite, max_abs, max_rel, rel_l2 = errors(outputs, reference())
    ok = finite and rel_l2 <= max(4 * ROUNDOFF[dtype], 1e-5)
    for _ in range(3):
        timer.sample_us(run)
    times = sorted(timer.sample_us(run) for _ in range(samples))
    mean = statistics.fmean(times)
    std = statistics.stdev(times) if len(times) > 1 else 0.0
    return dict(samples=len(times), median_us=statistics.median(times), mean_us=mean,
                min_us=times[0], p10_us=percentile(times, 10), p90_us=percentile(times, 90),
                stddev_us=std, noise_pct=100 * std / mean if mean else 0.0,
                max_abs_err=max_abs, max_rel_err=max_rel, rel_l2_err=rel_l2,
                status="pass" if ok else "fail")


if __name__ == "__main__":
    sys.exit(main())
