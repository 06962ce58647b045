#!/usr/bin/env bash
# The whole test suite: installs what is missing, then builds and runs every test with g++ 12
# (Release, -Werror, header self-containment) and with clang 14 (-Werror, header
# self-containment, under AddressSanitizer + UndefinedBehaviorSanitizer), and checks the Debian
# package.
set -euo pipefail
cd "$(dirname "$0")/.."
source cmake/deps.sh
nvmekit_install_missing "${nvmekit_build_packages[@]}" "${nvmekit_test_packages[@]}"

start=$SECONDS
for preset in ci-gcc ci-clang; do
    echo "=== nvmekit: ${preset}"
    cmake --workflow --preset "$preset" --fresh
done

echo "=== nvmekit: Debian package"
bash tests/package/deb.sh build/ci-gcc

echo "=== nvmekit: all checks passed in $((SECONDS - start)) s"
