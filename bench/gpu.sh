#!/usr/bin/env bash
# The GPU run: the whole conformance suite against the `vectorized` backend with every tensor
# input of the tensor functions (and every tensor payload of a SampleBatch) on CUDA. The
# multi-rank scenarios run on CPU whatever --device says, here through torch.distributed only.
#
# Needs a CUDA build of torch, pytest, hypothesis, numpy, safetensors, tokenizers and
# zephon==0.2.0 with its dependencies. On an offline machine, put the missing wheels in .whl/
# first (e.g. `pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl
# zephon==0.2.0 optree tenacity backports.zstd` for that machine's platform); they are installed
# into a scratch folder, never over the machine's own packages.
#
# Usage: bash bench/gpu.sh [extra pytest arguments]; reports go to $OUT (default reports/gpu).
set -euo pipefail
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/batchspec-site .whl/*.whl
  export PYTHONPATH=/tmp/batchspec-site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
out=${OUT:-reports/gpu}
mkdir -p "$out"
python3 - <<'PY'
import torch, zephon
assert torch.cuda.is_available(), "bench/gpu.sh needs CUDA: torch.cuda.is_available() is False"
print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}, zephon {zephon.__version__}")
PY
set -o pipefail
python3 -m pytest conformance -p no:cacheprovider --backend=vectorized --device=cuda --launcher=torch \
  --junitxml="$out/conformance-vectorized-cuda.xml" --clause-report="$out/clauses-vectorized-cuda.json" "$@" \
  2>&1 | tee "$out/conformance-vectorized-cuda.log"
