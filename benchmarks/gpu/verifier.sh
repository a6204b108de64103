#!/usr/bin/env bash
# The verifier on a GPU machine, in one call: the OS sandbox with CUDA inside it, the GPU tests of
# the verifier, CUDA-L1's solutions re-verified (resumable: run it again to go on), and the cost
# of one verification before and after the judge moved out of the candidate's process.
# Results under $OUT (README.md, verdicts.jsonl, logs). Carried (git-ignored) in .carry/:
#   bwrap/        bubblewrap and the libraries it links, for a host without the package
#   kernelbench/  the KernelBench data file
#   old_verifier/ torch_cudal1 of the revision to compare the cost with
#   verify_solutions/verdicts.jsonl  verdicts of an earlier call (optional: it resumes from them)
# STEPS (default "probe host tests solutions overhead"): host runs the sandbox's, the judge's and
# the adversarial candidates' CPU tests on this host (its kernel, its sockets, its bwrap); tests
# the verifier's GPU tests and every adversarial candidate judged on CUDA (HOST_JOBS and
# TESTS_JOBS pytest-xdist workers, default 12 and 6). LIMIT (seconds, default 560), WORKERS,
# IDS (only these solutions: L1_12,L2_3,...).
set -u
LIMIT=${LIMIT:-560}
STEPS=${STEPS:-probe host tests solutions overhead}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
OUT=${OUT:-$PWD/benchmarks/results/gpu-verifier}
mkdir -p "$OUT"
command -v bwrap >/dev/null || { [ -x .carry/bwrap/run ] && export CUDAL1_BWRAP=$PWD/.carry/bwrap/run; }
export CUDAL1_SANDBOX=${CUDAL1_SANDBOX:-bwrap}
# one core for timings, the builds on the others
export CUDAL1_TIMING_CPUS=${CUDAL1_TIMING_CPUS:-0} CUDAL1_WORK_CPUS=${CUDAL1_WORK_CPUS:-1-$(( $(nproc) - 1 ))}
left() { echo $(( LIMIT - SECONDS )); }
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv > "$OUT/gpu.txt" 2>&1
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }

if has probe; then
  python3 - > "$OUT/probe.txt" 2>&1 <<'PY'
import subprocess, sys
from torch_cudal1.verify import os_sandbox
print("sandbox check:", repr(os_sandbox.check()))
cmd = os_sandbox.wrap([sys.executable, "-c", "import torch; x = torch.ones(4, device='cuda'); "
                       "print('cuda in the sandbox:', float(x.sum()), torch.cuda.get_device_name())"],
                      chdir="/tmp", writable=[], gpu=True)
r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
print(r.returncode, r.stdout, r.stderr[-2000:])
PY
  cat "$OUT/probe.txt"
fi

if has host; then
  # 16 cores, timings on one of their own: every test may share the host (tests/conftest.py)
  CUDAL1_TESTS_SHARE_HOST=1 timeout ${HOST_S:-200} \
    python3 -m pytest -m "not gpu" -v -p no:cacheprovider -n ${HOST_JOBS:-12} \
    tests/test_verify_sandbox.py tests/test_verify_freeze.py tests/test_audit_symbols.py \
    tests/test_verify_judge.py tests/test_process_groups.py tests/test_loaded_builds.py \
    tests/test_verify_heap.py tests/test_verify_adversarial.py tests/test_verify_honest.py \
    > "$OUT/host_tests.log" 2>&1
  grep -E "FAILED|ERROR|passed|failed" "$OUT/host_tests.log" | tail -25
fi

if has tests; then
  secs=${TESTS_S:-240}
  timeout $secs python3 -m pytest -m gpu -v -p no:cacheprovider -n ${TESTS_JOBS:-6} \
    tests/test_verify_gpu.py tests/test_verify_stateful.py tests/test_verify_adversarial.py \
    > "$OUT/gpu_tests.log" 2>&1
  grep -E "FAILED|ERROR|passed|failed" "$OUT/gpu_tests.log" | tail -40
fi

if has solutions; then
  mkdir -p "$OUT/solutions"
  [ -f .carry/verify_solutions/verdicts.jsonl ] && cp .carry/verify_solutions/verdicts.jsonl "$OUT/solutions/"
  secs=$(( $(left) - ${RESERVE:-150} ))
  if [ $secs -gt 60 ]; then
    timeout $(( secs + 120 )) python3 benchmarks/verify_solutions.py \
      --data .carry/kernelbench/cudal1_h100_dev.jsonl \
      --records benchmarks/results/kernelbench/h200/results.jsonl --device cuda \
      --workers ${WORKERS:-10} --max-seconds $secs --out "$OUT/solutions" ${IDS:+--ids $IDS} \
      > "$OUT/solutions.log" 2>&1
    tail -30 "$OUT/solutions.log"
  fi
fi

if has overhead && [ $(left) -gt 100 ] && [ -d .carry/old_verifier ]; then
  timeout $(( $(left) - 10 )) python3 benchmarks/verify_overhead.py --device cuda --repeat ${REPEAT:-2} \
    --against .carry/old_verifier --out "$OUT/overhead" > "$OUT/overhead.log" 2>&1
  tail -12 "$OUT/overhead.log"
fi
cd "$OUT" && tar czf "$OUT/../verifier_results.tgz" . 2>/dev/null; mv "$OUT/../verifier_results.tgz" "$OUT/" 2>/dev/null
echo "done in ${SECONDS}s"
