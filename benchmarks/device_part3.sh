#!/usr/bin/env bash
# Third device call of the session: resumes the verifier and runner result sets in
# benchmarks/results/h200/ (they travel with the checkout) and reruns the spine's GPU test.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export CUDAL1_KERNELBENCH=$PWD/.carry/kernelbench/cudal1_h100_dev.jsonl
OUT=${OUT:-$PWD/benchmarks/results/device}
W=$OUT/work; mkdir -p $W
R=benchmarks/results/h200
python3 setup.py -q egg_info >$W/egg_info.log 2>&1 || cat $W/egg_info.log
timeout 110 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_backend_gpu.py 2>&1 | tail -30 > $W/gpu_tests_backend.log
tail -3 $W/gpu_tests_backend.log
OUT=$W timeout 80 python3 benchmarks/spine_bench.py --device cuda --kernelbench $CUDAL1_KERNELBENCH \
    --only kb_L1_19 --tasks 1:19 2>$W/spine_stderr.log | tail -8
timeout 160 python3 benchmarks/verify_kernelbench.py --data $CUDAL1_KERNELBENCH --device cuda \
    --no-inductor --workers 14 --max-seconds 110 --top-published 26 --out $R/verify > $W/verify_stdout.log 2>&1
tail -14 $W/verify_stdout.log
timeout 200 python3 benchmarks/kernelbench_runner.py --data $CUDAL1_KERNELBENCH --device cuda \
    --fast --stride 9 --max-seconds 140 --task-timeout 150 --out $R/runner > $W/runner_stdout.log 2>&1
tail -12 $W/runner_stdout.log
cp -r $R/verify $R/runner $W/
tar czf $OUT/results_part3.tgz -C $W . && rm -rf $W
