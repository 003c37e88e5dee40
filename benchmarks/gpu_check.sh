#!/usr/bin/env bash
# GPU check for a session that has an NVIDIA GPU (written for an H200): install the gpu extra,
# run the CUDA tests (tests/cuda on the device), the demo on cuda, and benchmark ember on the GPU
# (matmuls, MLP steps, the fused kernels against the CuPy chains they replace). Everything it finds goes under the output
# folder (first argument, else $OUT, else ./gpu_check_out); the whole run stays under 10 min.
#
#   bash benchmarks/gpu_check.sh "$OUT"
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu_check_out}}"
mkdir -p "$out"
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
started=$(date +%s)
elapsed() { echo $(( $(date +%s) - started ))s; }

command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet uv
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 && note "nvidia-smi: $(head -n 12 "$out/nvidia-smi.txt" | grep -m1 -o 'H[0-9]*\|A[0-9]*\|NVIDIA [A-Za-z0-9 ]*' || echo ok)" \
  || note "nvidia-smi: not found"

# 1. CuPy and the CUDA libraries as wheels (the [ctk] extra), so a bare machine with only the
#    driver works, and the test tools (--group test). --inexact keeps what the environment
#    already has (torch, for comparisons).
if timeout 240 uv sync --extra gpu --group test --inexact > "$out/uv_sync.log" 2>&1; then
  note "uv sync --extra gpu: ok ($(elapsed))"
else
  note "uv sync --extra gpu: FAILED (see uv_sync.log); going on with the environment as it is"
fi

timeout 60 uv run --no-sync python - > "$out/devices.txt" 2>&1 <<'PY'
import ember
print("cuda available:", ember.cuda.is_available())
if ember.cuda.is_available():
    import cupy
    print("cupy", cupy.__version__, "devices", ember.cuda.device_count())
    print(ember.cuda.get_device_properties(0))
    print("bf16 supported:", ember.cuda.is_bf16_supported())
    x = ember.randn(1024, 1024, device="cuda")
    y = (x @ x).cpu().numpy()
    ref = x.cpu().numpy().astype("float64") @ x.cpu().numpy().astype("float64")
    print("1024² matmul max abs error vs float64:", float(abs(y - ref).max()))
    print("memory allocated:", ember.cuda.memory_allocated())
PY
note "devices: $(tr '\n' ' ' < "$out/devices.txt" | cut -c1-300)"

# 2. The CUDA tests. First tests/cuda on the GPU itself (EMBER_REAL_CUDA=1: the whole programs,
#    fused kernels and DLPack tests that run on the fake CuPy elsewhere; NVRTC compiles every
#    kernel; the kernels are checked against their NumPy references), then every test whose
#    name mentions cuda or gpu across the suite.
EMBER_REAL_CUDA=1 timeout 180 uv run --no-sync pytest tests/cuda tests/test_cuda.py -q \
  -p no:cacheprovider -rsx > "$out/pytest_cuda_real.txt" 2>&1
note "tests/cuda on the GPU (rc $?): $(tail -n 1 "$out/pytest_cuda_real.txt") ($(elapsed))"
timeout 150 uv run --no-sync pytest tests -q -p no:cacheprovider -k "cuda or gpu" \
  --continue-on-collection-errors --ignore=tests/cuda -rs > "$out/pytest_gpu.txt" 2>&1
note "gpu tests (rc $?): $(tail -n 1 "$out/pytest_gpu.txt") ($(elapsed))"

# The demo end to end on the GPU (2 epochs), its closing line kept.
timeout 90 uv run --no-sync ember demo --device cuda --epochs 2 --no-progress \
  --out "$out/demo_cuda" > "$out/demo_cuda.log" 2>&1
note "ember demo --device cuda (rc $?): $(tail -n 1 "$out/demo_cuda.log" | cut -c1-200) ($(elapsed))"

# 3. Throughput: 8192² matmuls per dtype, MLP steps with and without AMP (ember, and torch
#    when it can use the GPU). The benchmark skips what would run past its budget.
left=$(( 570 - $(date +%s) + started ))
if [ "$left" -gt 60 ]; then
  timeout "$left" uv run --no-sync python benchmarks/gpu_bench.py --device cuda \
    --out "$out/bench" --budget $(( left - 45 )) > "$out/bench.log" 2>&1
  note "benchmark (rc $?): $out/bench/results.md ($(elapsed))"
else
  note "benchmark: skipped, only ${left}s left"
fi
note "done in $(elapsed)"
