#!/usr/bin/env bash
# The model zoo at realistic sizes on one GPU (benchmarks/zoo.py): eager, inductor and cudal1
# (first process, then a second one on its cache), resuming benchmarks/results/zoo/<gpu>/ so the
# rows already there stay. MODELS (comma-separated; default: all), JOBS models in flight
# (default 3), LIMIT seconds in all (default 560), TIMEOUT per model and backend (default 280),
# BUDGET cudal1's seconds per graph (default 45). Copies the results into $OUT.
#
#   MODELS=resnet18,mha LIMIT=560 bash benchmarks/gpu/zoo.sh
set -u
cd "$(dirname "$0")/../.." || exit 2
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
command -v bwrap >/dev/null || { [ -x .carry/bwrap/run ] && export CUDAL1_BWRAP=$PWD/.carry/bwrap/run; }
# registers the backend's entry point from the checkout (egg-info on PYTHONPATH), no pip needed
python3 setup.py -q egg_info > /dev/null 2>&1 || echo "egg_info failed: backend='cudal1' unregistered"
DEV=$(python3 -c 'from benchmarks.paths import device_dir_name; print(device_dir_name("cuda"))')
R=benchmarks/results/zoo/$DEV
mkdir -p $R
MODELS_ARG=()
[ -n "${MODELS:-}" ] && MODELS_ARG=(--models "$MODELS")
# a model's second process needs its first one's cache, which went with the machine that made it:
# rows of models whose second process is missing are run again, both processes
python3 - "$R/records.jsonl" <<'PY'
import json, sys
from pathlib import Path
p = Path(sys.argv[1])
if p.exists():
    recs = [json.loads(ln) for ln in p.read_text().splitlines() if ln.strip()]
    firsts = {r["model"] for r in recs if r["backend"] == "cudal1"}
    seconds = {r["model"] for r in recs if r["backend"] == "cudal1 (2nd process)"}
    drop = firsts - seconds
    p.write_text("".join(json.dumps(r) + "\n" for r in recs
                         if not (r["model"] in drop and r["backend"] == "cudal1")))
PY
timeout $(( ${LIMIT:-560} - 10 )) python3 benchmarks/zoo.py --device cuda --size realistic \
  --search default --budget ${BUDGET:-45} --steady 20 --backends inductor,cudal1 \
  --jobs ${JOBS:-3} --timeout ${TIMEOUT:-280} --resume "${MODELS_ARG[@]}" --out $R > ${OUT:-/tmp}/zoo.log 2>&1
echo "zoo rc=$?"
python3 benchmarks/zoo.py --table-only --device cuda --size realistic --search default --budget ${BUDGET:-45} --out $R > /dev/null 2>&1
grep -E "^\| (all|huggingface|patterns|torchbench) " $R/zoo.md
[ -n "${OUT:-}" ] && cp -r $R $OUT/zoo_$DEV
tail -30 ${OUT:-/tmp}/zoo.log | cut -c1-220
