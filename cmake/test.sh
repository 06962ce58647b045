#!/usr/bin/env bash
# The whole test suite: installs what is missing, then builds and runs every test with g++
# (-Werror, header self-containment), with clang (-Werror, header self-containment) and under
# AddressSanitizer + UndefinedBehaviorSanitizer, and checks the Debian package.
set -euo pipefail
cd "$(dirname "$0")/.."
source cmake/deps.sh
nvmekit_install_missing "${nvmekit_build_packages[@]}" "${nvmekit_test_packages[@]}"

start=$SECONDS
for preset in ci-gcc ci-clang ci-sanitize; do
    echo "=== nvmekit: ${preset}"
    cmake --workflow --preset "$preset" --fresh
done

echo "=== nvmekit: Debian package"
bash tests/package/deb.sh build/ci-gcc

echo "=== nvmekit: all checks passed in $((SECONDS - start)) s"
