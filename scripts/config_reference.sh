#!/usr/bin/env bash
# config_reference.sh: rewrite the configuration reference in docs/config.md (between the
# markers <!-- config-reference --> and <!-- /config-reference -->) from
# `bin/gmatrain --config-reference`, the schema every config is validated against.
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(bin/gmatrain --config-reference)
awk -v table="$table" '
  /<!-- config-reference -->/ { print; print table; skip = 1; next }
  /<!-- \/config-reference -->/ { skip = 0 }
  !skip { print }' docs/config.md > docs/config.md.tmp
mv docs/config.md.tmp docs/config.md
