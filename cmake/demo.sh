#!/usr/bin/env bash
# The demo: installs what is missing, builds the examples and runs nvmekit-demo.
set -euo pipefail
cd "$(dirname "$0")/.."
source cmake/deps.sh
nvmekit_install_missing "${nvmekit_build_packages[@]}"

cmake --preset demo
cmake --build --preset demo
./build/demo/examples/nvmekit-demo
