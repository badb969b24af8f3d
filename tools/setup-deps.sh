#!/usr/bin/env bash
# Installs the Debian 12 packages tfg needs, and only those that are missing, so re-running it
# costs a dpkg query. Run as root (or with sudo available).
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache
  libtorch-dev libopenblas0-openmp          # LibTorch 1.13 CPU; OpenBLAS (reference BLAS is 10-40x slower)
  python3-torch python3-torchvision         # the seed zoo; repro.py runs under plain PyTorch
  chromium python3-pil                      # the report test renders report.html headless
  python3-jsonschema python3-rfc3987        # the SARIF test validates findings.sarif, URIs included
  libboost-dev librange-v3-dev doctest-dev libbenchmark-dev
  nlohmann-json3-dev libfmt-dev libcli11-dev libsqlite3-dev libxxhash-dev
  clang                                     # the libFuzzer harness over the DSL front end (tests/fuzz)
  tmux                                      # the fuzz test reads flowmut fuzz's status screen in a terminal
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm brings the SARIF schema (tools/sarif-schema.sh); a machine with Node.js from elsewhere has it.
command -v npm > /dev/null || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
