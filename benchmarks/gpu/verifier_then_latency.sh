#!/usr/bin/env bash
# One GPU call: the verifier's and the built-in engine's GPU tests (the sandbox carried from
# .carry/bwrap/ where the host has none), then the time to a winner in what is left
# (search_latency.sh). Logs and results into $OUT.   LIMIT (default 550), TESTS_S (default 230).
set -u
cd "$(dirname "$0")/../.." || exit 2
LIMIT=${LIMIT:-550}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
command -v bwrap >/dev/null || { [ -x .carry/bwrap/run ] && export CUDAL1_BWRAP=$PWD/.carry/bwrap/run; }
export CUDAL1_SANDBOX=${CUDAL1_SANDBOX:-bwrap}
O=${OUT:-$(mktemp -d)}
timeout ${TESTS_S:-230} python3 -m pytest -m gpu -q -p no:cacheprovider -n 4 tests/test_verify_gpu.py \
  tests/test_verify_stateful.py tests/test_engine_gpu.py > $O/gpu_tests.log 2>&1
grep -E "passed|failed|error" $O/gpu_tests.log | tail -3
grep -E "^(FAILED|ERROR)" $O/gpu_tests.log | head -20
LIMIT=$(( LIMIT - SECONDS )) bash benchmarks/gpu/search_latency.sh
