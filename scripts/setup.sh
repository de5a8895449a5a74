#!/usr/bin/env bash
# setup.sh: install the Debian packages gma needs (run as root or with sudo).
#   scripts/setup.sh           install what is missing
#   scripts/setup.sh --check   exit 0 if everything is present, 1 otherwise (installs nothing)
set -euo pipefail
PKGS=(build-essential pkg-config libcjson-dev libcurl4-openssl-dev zlib1g-dev check libopenblas-dev libopenblas-openmp-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${1:-}" = "--check" ]; then
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "missing: ${missing[*]}"; exit 1
fi
if [ ${#missing[@]} -eq 0 ]; then echo "setup: all packages present"; exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
