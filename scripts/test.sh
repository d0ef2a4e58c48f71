#!/usr/bin/env bash
# The README's test command: set up (idempotent) and run the whole suite.
# GPU tests skip cleanly without a GPU; on a GPU machine they run.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e ".[test]"
python3 -m pytest -q "$@"
