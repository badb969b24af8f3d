#!/usr/bin/env bash
# Installs what tfg needs, and only what is missing, so re-running it costs a dpkg query and a
# checksum:
#  - Debian 12 packages (the compiler tool chain, the libraries tfg uses, Debian's LibTorch 1.13 and
#    python3-torch for the second, 1.13 build);
#  - a project venv (.venv, or $TFG_VENV) with the pinned PyPI packages of tools/requirements-torch.txt
#    (PyTorch 2.15.0 and torchvision): the default build compiles against the LibTorch in that wheel.
# Run as root (or with sudo available).
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(
  build-essential cmake ninja-build ccache
  python3-venv                              # the project venv for the PyPI torch wheel
  libtorch-dev libopenblas0-openmp          # LibTorch 1.13 CPU (the second build); OpenBLAS (reference BLAS is 10-40x slower)
  python3-torch python3-torchvision         # the 1.13 build's zoo and repro.py
  chromium python3-pil                      # the report test renders report.html headless
  python3-jsonschema python3-rfc3987        # the SARIF test validates findings.sarif, URIs included
  libboost-dev doctest-dev libbenchmark-dev
  nlohmann-json3-dev libfmt-dev libcli11-dev libsqlite3-dev libxxhash-dev
  clang                                     # the libFuzzer harness over the DSL front end (tests/fuzz)
  clang-format                              # the house style (.clang-format; make check-format)
  tmux                                      # the fuzz test reads flowmut fuzz's status screen in a terminal
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The venv: made with Debian's or pyenv's python3 (3.11), re-installed when the requirements change.
VENV=${TFG_VENV:-.venv}
REQ=tools/requirements-torch.txt
stamp="$VENV/.tfg-requirements.sha256"
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi
echo "setup-deps: installing $REQ into $VENV (PyPI; about 5 GiB with torch's CUDA libraries)"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ"
"$VENV/bin/python" -c 'import torch, torchvision; print("setup-deps: torch", torch.__version__, "torchvision", torchvision.__version__)'
echo "$want" > "$stamp"
