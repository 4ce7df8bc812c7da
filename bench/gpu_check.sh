#!/usr/bin/env bash
# GPU check, run from the repository root on a CUDA machine whose Python already has torch
# and transformers (missing pure-Python needs are installed from wheels in .whl/ when the
# folder is there; the SmolLM2 tokenizer and config come from .gpu/smol/, see
# bench/gpu_train.py). It runs the model-level tests with the tiny model on the GPU
# (log-probs against full logits, the 8 vs 8x1 invariant for every algorithm, gradients,
# generation, a short training run; the episode cache), then times the training loop on the GPU beside
# the CPU, and runs the sharded learner (FSDP2, NCCL) under torchrun beside one plain process.
# Preparing the two folders on a machine with pip (both are git-ignored locally):
#   mkdir -p .gpu/smol && cp ~/.cache/rlvr/models/smollm2-135m-instruct/{*.json,*.jinja} .gpu/smol/
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 -d .whl \
#     pydantic==2.14.3 pydantic_core==2.50.4 annotated-types==0.8.0 typing-inspection==0.4.5 jsonschema==4.26.0 \
#     jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 pyseccomp==0.1.2
set -uo pipefail
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
export RLVR_CACHE=/tmp/rlvrcache PYTHONUNBUFFERED=1
mkdir -p $RLVR_CACHE/tokenizers/smollm2-135m-instruct
cp .gpu/smol/chat_template.jinja .gpu/smol/tokenizer.json .gpu/smol/tokenizer_config.json $RLVR_CACHE/tokenizers/smollm2-135m-instruct/
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())"
python3 -c "from rlvr.cli import main; main(['sandbox', 'check'])" 2>&1 | tail -20
RLVR_TEST_DEVICE=cuda timeout 240 python3 -m pytest -q -p no:cacheprovider -x \
  tests/integration/test_learner.py tests/integration/test_generation.py 2>&1 | tee "$OUT/pytest_cuda.txt" | tail -25
RLVR_TEST_DEVICE=cuda timeout 120 python3 -m pytest -q -p no:cacheprovider tests/integration/test_episode_cache.py 2>&1 \
  | tee "$OUT/pytest_cuda_episode_cache.txt" | tail -15
timeout 270 python3 bench/gpu_train.py --smol-dir .gpu/smol --out "$OUT/gpu_train.json" "$@" 2>&1 | grep -v "Loading weights" | tail -30
# The sharded learner (FSDP2) under torchrun with NCCL beside one plain process (bench/gpu_sharded.py).
timeout 300 python3 bench/gpu_sharded.py --smol-dir .gpu/smol --out "$OUT/gpu_sharded.json" 2>&1 | grep -v "Loading weights" | tail -40
# vLLM engine (only where this Python has vLLM: pip install 'rlvr[vllm]'): the engine contract on the GPU,
# then vLLM vs HF on the TRL-bench configuration (bench/vllm_vs_hf.py; copy the JSON to bench/results/).
if python3 -c "import vllm" 2>/dev/null; then
  timeout 300 python3 -m pytest -q -p no:cacheprovider tests/integration/test_engine_contract.py -k vllm 2>&1 | tee "$OUT/pytest_vllm.txt" | tail -15
  timeout 480 python3 bench/vllm_vs_hf.py --smol-dir .gpu/smol --out "$OUT/vllm_vs_hf.json" 2>&1 | grep -v "Loading weights" | tail -30
else
  echo "vLLM is not installed in this Python: the vLLM contract test and bench/vllm_vs_hf.py were not run"
fi
