#!/usr/bin/env bash
# Installs what kbench needs that is missing (Debian/Ubuntu packages; the CUDA toolkit is
# assumed present, as nvcc on PATH or under /usr/local/cuda). Safe to run again.
set -euo pipefail
want=(cmake g++ make libcli11-dev libbenchmark-dev libgtest-dev)
# HIP toolchain for the second (AMD) build, where the distribution packages it.
if [[ ${KBENCH_WITH_HIP:-1} == 1 ]]; then want+=(hipcc libamdhip64-dev); fi
missing=()
for pkg in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  sudo=$([[ $(id -u) -eq 0 ]] && echo "" || echo sudo)
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: nvcc is in /usr/local/cuda/bin; add it to PATH"
fi
