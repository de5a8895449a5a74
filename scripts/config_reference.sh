#!/usr/bin/env bash
# config_reference.sh: rewrite the configuration reference in README.md (between the
# markers <!-- config-reference --> and <!-- /config-reference -->) from
# `bin/gmatrain --config-reference`, the schema every config is validated against.
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(bin/gmatrain --config-reference)
awk -v table="$table" '
  /<!-- config-reference -->/ { print; print table; skip = 1; next }
  /<!-- \/config-reference -->/ { skip = 0 }
  !skip { print }' README.md > README.md.tmp
mv README.md.tmp README.md
