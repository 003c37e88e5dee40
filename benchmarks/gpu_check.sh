#!/usr/bin/env bash
# GPU check for a session that has an NVIDIA GPU (written for an H200): install the gpu extra,
# run the CUDA tests, benchmark ember on the GPU. Everything it finds goes under the output
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
#    driver works. --inexact keeps what the environment already has (torch, for comparisons).
if timeout 240 uv sync --extra gpu --inexact > "$out/uv_sync.log" 2>&1; then
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

# 2. The CUDA tests: every test whose name mentions cuda or gpu, across the suite.
timeout 240 uv run --no-sync pytest tests -q -p no:cacheprovider -k "cuda or gpu" --continue-on-collection-errors \
  -rs > "$out/pytest_gpu.txt" 2>&1
note "gpu tests (rc $?): $(tail -n 1 "$out/pytest_gpu.txt") ($(elapsed))"

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
