#!/usr/bin/env bash
# The GPU tests (pytest -m gpu) on one GPU, with the native timing helpers built first where
# missing; log in $LOGS/gpu_tests.log. GPU_TESTS='tests/x.py -k y' picks some. Other variables:
# run.sh. Tests that need two GPUs skip here: two_gpus.sh tests runs them.
#
#   LIMIT=900 bash benchmarks/gpu/gpu_tests.sh
cd "$(dirname "$0")/../.." || exit 2
export LIMIT=${LIMIT:-900}
export GPU_TESTS=${GPU_TESTS:-tests}
export GPU_TESTS_S=${GPU_TESTS_S:-$(( LIMIT - 60 ))}
exec bash benchmarks/gpu/run.sh
