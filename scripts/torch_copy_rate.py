#!/usr/bin/env python3
"""PyTorch's device-to-device copy rate (bytes read + written), to check that kbench's
calibrated ceiling is at least what another tool on the same GPU reaches. Timed the way kbench
times: CUDA events, warm-up, median of repeated copies of a 1 GiB tensor."""
import statistics

import torch


def main() -> None:
    n_bytes = 1 << 30
    src = torch.randn(n_bytes // 2, dtype=torch.bfloat16, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    rates = []
    for _ in range(30):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        stop.record()
        stop.synchronize()
        rates.append(2 * n_bytes / (start.elapsed_time(stop) * 1e-3) / 1e9)
    print(f"torch copy_ {torch.cuda.get_device_name()}: median {statistics.median(rates):.0f} GB/s, "
          f"max {max(rates):.0f} GB/s (bytes read + written, 1 GiB, 30 runs)")


if __name__ == "__main__":
    main()
