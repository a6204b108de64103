#!/usr/bin/env bash
# The KernelBench runner on one GPU: eager, inductor, cudal1's built-in engine and CUDA-L1's
# replayed solutions per task, resumable, into benchmarks/results/kernelbench/<gpu>/ (records,
# summary.md, solutions.md). Every task without a record by default; IDS=L1_40,... (AGAIN=1) for
# some, STALE=1 for the records an engine change left stale, RECHECK=1 to re-verify replayed
# solutions first. Repeat until the summary counts every task measured. Other variables: run.sh.
#
#   CUDAL1_KERNELBENCH=path/to/cudal1_h100_dev.jsonl LIMIT=3600 bash benchmarks/gpu/kernelbench.sh
cd "$(dirname "$0")/../.." || exit 2
if [ -z "${IDS:-}${STALE:-}${RETRY:-}" ]; then export RUNNER=${RUNNER:-1}; fi
exec bash benchmarks/gpu/run.sh
