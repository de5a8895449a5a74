#!/usr/bin/env bash
# setup.sh: install the Debian packages gma needs (run as root or with sudo).
#   scripts/setup.sh           install what is missing (required, then optional)
#   scripts/setup.sh --check   exit 0 if every required package is present, 1 otherwise (installs nothing)
# Optional packages (MPI, for make mpi and its test; gnuplot-nox, for the PNG figures of
# scripts/plot_runs.sh and gmaeval --analyze; python3-numpy, for scripts/read_checkpoint.py
# and its test) are installed when setup.sh runs but are not
# required: a machine without them builds and tests everything else, tests/test_mpi.c and
# scripts/check_plot_runs.sh say what they skipped, and the plots are skipped with a line.
set -euo pipefail
PKGS=(build-essential pkg-config libcjson-dev libcurl4-openssl-dev zlib1g-dev check libopenblas-dev libopenblas-openmp-dev)
OPTIONAL=(openmpi-bin libopenmpi-dev gnuplot-nox python3-numpy)
missing_of() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(missing_of "${PKGS[@]}")
mapfile -t missing_opt < <(missing_of "${OPTIONAL[@]}")
if [ "${1:-}" = "--check" ]; then
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "missing: ${missing[*]}"; exit 1
fi
if [ ${#missing[@]} -eq 0 ] && [ ${#missing_opt[@]} -eq 0 ]; then echo "setup: all packages present"; exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ${#missing_opt[@]} -gt 0 ]; then
  echo "setup: installing optional ${missing_opt[*]} (MPI: make mpi, data-parallel training; gnuplot-nox: PNG plots; python3-numpy: the Python checkpoint reader's test)"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing_opt[@]}" ||
    echo "setup: could not install ${missing_opt[*]}; everything but make mpi and the PNG plots works without them"
fi
