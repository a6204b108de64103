#!/usr/bin/env bash
# Real models on one GPU (benchmarks/real_models.py): transformers' GPT-2 block and BERT layer,
# torchvision's ResNet-18, random weights, batch 32, bf16 and fp32; eager, inductor, torch.compile's
# reduce-overhead and max-autotune modes and cudal1, cold search and warm start. One process per
# model into benchmarks/results/real_models/<gpu>/<model>_<dtype>/, then real_models_table.md over
# every model there. MODELS=gpt2:bf16,... picks models, BATCH=1 a latency-bound server's batch.
# A model takes 1-5 minutes; give LIMIT (seconds, default 560) accordingly. Other variables: run.sh.
#
#   LIMIT=1800 bash benchmarks/gpu/real_models.sh
cd "$(dirname "$0")/../.." || exit 2
export MODELS=${MODELS:-gpt2:bf16,bert:bf16,gpt2:fp32,bert:fp32,resnet18:bf16,resnet18:fp32}
export MAX_AUTOTUNE=${MAX_AUTOTUNE-1} REDUCE_OVERHEAD=${REDUCE_OVERHEAD-1}
export LIMIT=${LIMIT:-560}
export FIRST_S=${FIRST_S:-$(( LIMIT - 40 ))}
exec bash benchmarks/gpu/run.sh
