#!/usr/bin/env bash
# All GPU work of a session in one device call (part 1 or 2), results under $OUT.
#   part 1: GPU tests, CUDA-L1 solutions through the verifier (most suspect first)
#   part 2: spine benchmark, the spine's GPU test, KernelBench runner on a spread-out sample
# Needs the KernelBench data copied to .carry/kernelbench/ (carried: ../shared does not travel).
set -u
PART=${1:-1}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export CUDAL1_KERNELBENCH=$PWD/.carry/kernelbench/cudal1_h100_dev.jsonl
OUT=${OUT:-$PWD/benchmarks/results/device}
W=$OUT/work; mkdir -p $W
# Registers the torch_dynamo_backends entry point (egg-info on PYTHONPATH) with no pip/network.
python3 setup.py -q egg_info >$W/egg_info.log 2>&1 || cat $W/egg_info.log
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv > $W/gpu_$PART.txt
if [ "$PART" = 1 ]; then
  timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/ 2>&1 | tail -40 > $W/gpu_tests.log
  tail -5 $W/gpu_tests.log
  timeout 190 python3 benchmarks/verify_kernelbench.py --data $CUDAL1_KERNELBENCH --device cuda \
      --no-inductor --workers 14 --max-seconds 140 --top-published 14 --out $W/verify > $W/verify_stdout.log 2>&1
  tail -15 $W/verify_stdout.log
else
  timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_backend_gpu.py 2>&1 | tail -30 > $W/gpu_tests_backend.log
  tail -3 $W/gpu_tests_backend.log
  OUT=$W timeout 150 python3 benchmarks/spine_bench.py --device cuda --kernelbench $CUDAL1_KERNELBENCH \
      --only tiny_block,kb_L1_19 --tasks 1:19 2>$W/spine_stderr.log | tail -14
  timeout 290 python3 benchmarks/kernelbench_runner.py --data $CUDAL1_KERNELBENCH --device cuda \
      --fast --stride 9 --max-seconds 220 --task-timeout 100 --out $W/runner > $W/runner_stdout.log 2>&1
  tail -25 $W/runner_stdout.log
fi
tar czf $OUT/results_part$PART.tgz -C $W . && rm -rf $W
ls -la $OUT
