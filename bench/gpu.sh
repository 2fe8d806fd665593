#!/usr/bin/env bash
# The GPU run, one prepared script for a lent GPU machine (no network needed there):
#   1. the whole conformance suite against `vectorized` with every tensor input of the tensor
#      functions (and every tensor payload of a SampleBatch) on CUDA; the multi-rank scenarios
#      run on CPU whatever --device says, here through torch.distributed only;
#   2. the GPU benchmarks of `vectorized` beside its comparators (tensor payloads live on the
#      GPU; pipeline payloads are lists, whose conversion is CPU work by [tb-device]), at 8x8192
#      and 64x32768, with the HBM copy floor measured in the same run;
#   3. bench/report.py's table and plots;
#   4. the model-level equivalence check (batchspec check-model) of the tiny Llama in bfloat16 on
#      CUDA, the metadata and THD routes through torch's flash varlen kernel
#      (torch.nn.attention.varlen.varlen_attn), the mask routes through sdpa, with bf16 tolerances.
# Each step writes its results to OUTDIR as it finishes and has its own time limit, so a failed
# or slow step does not lose the others; the whole script stays under 6 minutes without step 5
# (the triton backend, run only where triton is installed; up to 7 minutes more).
#
# Needs a CUDA build of torch, pytest, hypothesis, numpy, safetensors, tokenizers, matplotlib,
# pytest-benchmark, transformers (the version pyproject.toml pins; step 4 and the suite's model
# checks) and zephon==0.2.0
# with their dependencies. On an offline machine put the missing
# wheels in .whl/ beforehand (e.g. `pip download --no-deps --only-binary=:all: --python-version
# 3.12 -d .whl zephon==0.2.0 optree tenacity backports.zstd`, with that machine's Python version
# and platform); they
# are installed into a scratch folder, never over the machine's own packages.
#
# Usage: bash bench/gpu.sh [OUTDIR]   (default: $OUT, else reports/gpu); BATCHSPEC_GPU_BACKEND
# names another backend (default: vectorized).
# Off a GPU, BATCHSPEC_GPU_DEVICE=cpu (and e.g. BATCHSPEC_GPU_SHAPES=8x4096) runs the same steps
# on the CPU, to test the script.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-reports/gpu}}
device=${BATCHSPEC_GPU_DEVICE:-cuda}
backend=${BATCHSPEC_GPU_BACKEND:-vectorized}
shapes=${BATCHSPEC_GPU_SHAPES:-8x8192,64x32768}
mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/batchspec-site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/batchspec-site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
$python - "$device" <<'PY' 2>&1 | tee "$out/machine.txt" || exit 1
import sys, torch, zephon
device = sys.argv[1]
assert device == "cpu" or torch.cuda.is_available(), "bench/gpu.sh needs CUDA: torch.cuda.is_available() is False"
name = torch.cuda.get_device_name() if device != "cpu" else "cpu"
print(f"torch {torch.__version__} on {name}, zephon {zephon.__version__}")
PY
status=0
timeout 270 $python -m pytest conformance -p no:cacheprovider -q --backend="$backend" --device="$device" \
  --launcher=torch --junitxml="$out/conformance-$backend.xml" --conformance-report="$out/conformance-$backend" \
  >"$out/conformance-$backend.log" 2>&1 || status=1
tail -3 "$out/conformance-$backend.log"
timeout 150 $python -m pytest bench -p no:cacheprovider -q --backend="$backend" --device="$device" \
  --bench-shapes="$shapes" --benchmark-max-time=0.2 --benchmark-json="$out/bench.json" \
  >"$out/bench.log" 2>&1 || status=1
tail -3 "$out/bench.log"
[ -f "$out/bench.json" ] && { $python bench/report.py "$out/bench.json" --out "$out" || status=1; }
# 5. the triton backend (issue 33) beside it, where triton is installed: its conformance run on
#    the same device, and its GPU benchmarks in their own JSON (on CPU: under the interpreter, a
#    smoke only, no timing targets)
if [ "$backend" != triton ] && $python -c "import triton" 2>/dev/null; then
  [ "$device" = cpu ] && export TRITON_INTERPRET=1
  timeout 270 $python -m pytest conformance -p no:cacheprovider -q --backend=triton --device="$device" \
    --launcher=torch --junitxml="$out/conformance-triton.xml" --conformance-report="$out/conformance-triton" \
    >"$out/conformance-triton.log" 2>&1 || status=1
  tail -3 "$out/conformance-triton.log"
  timeout 150 $python -m pytest bench -p no:cacheprovider -q --backend=triton --device="$device" \
    --bench-shapes="$shapes" --benchmark-max-time=0.2 --benchmark-json="$out/bench-triton.json" \
    >"$out/bench-triton.log" 2>&1 || status=1
  tail -3 "$out/bench-triton.log"
  [ -f "$out/bench-triton.json" ] && { $python bench/report.py "$out/bench-triton.json" --out "$out/triton" || status=1; }
fi
kernel=torch_varlen dtype=bfloat16
[ "$device" = cpu ] && kernel=emulated dtype=float64
$python -c "import json; from batchspec.conformance.model.models import tiny_llama_config as c; print(json.dumps(c()))" \
  >"$out/tiny-llama.json" || status=1
timeout 120 $python -m batchspec check-model --config "$out/tiny-llama.json" --backend="$backend" --device="$device" \
  --dtype=$dtype --kernel=$kernel --attention=sdpa >"$out/check-model.txt" 2>&1 || status=1
tail -14 "$out/check-model.txt"
exit $status
