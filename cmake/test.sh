#!/usr/bin/env bash
# The whole test suite: installs what is missing, then builds and runs every test with g++ 12
# (Release, -Werror, header self-containment) and with clang 14 (-Werror, header
# self-containment, under AddressSanitizer + UndefinedBehaviorSanitizer), runs the controller
# tests again with their I/O queues over 2 and 4 poll groups and with groups on threads of their
# own, runs the tests of multi-threaded code and the controller tests with 4 threaded poll groups
# under ThreadSanitizer, runs each libFuzzer
# target for a minute on its seed corpus (NVMEKIT_FUZZ_SECONDS changes that), checks the Debian
# package, and runs the end-to-end guest test when tests/e2e/provision.sh has provisioned QEMU.
set -euo pipefail
cd "$(dirname "$0")/.."
source cmake/deps.sh
nvmekit_install_missing "${nvmekit_build_packages[@]}" "${nvmekit_test_packages[@]}"

start=$SECONDS
# The tests that drive a whole controller through the test fixture (tests/unit/controller_fixture.hpp).
controller_tests='^(controller_[a-z_]*test|command_sets_[a-z_]*test|fault_injection_test|dma_guard_test)\.'
for preset in ci-gcc ci-clang ci-tsan; do
    echo "=== nvmekit: ${preset}"
    cmake --workflow --preset "$preset" --fresh
    if [ "$preset" = ci-gcc ]; then
        # The controller tests again, with the I/O queues spread over 2 and 4 poll groups.
        for groups in 2 4; do
            echo "=== nvmekit: ci-gcc controller tests with ${groups} poll groups"
            NVMEKIT_TEST_POLL_GROUPS=$groups ctest --preset ci-gcc -R "$controller_tests"
        done
        echo "=== nvmekit: ci-gcc controller tests with 2 poll groups on threads of their own"
        NVMEKIT_TEST_POLL_GROUPS=2 NVMEKIT_TEST_THREADED_GROUPS=1 ctest --preset ci-gcc -R "$controller_tests"
    fi
    if [ "$preset" = ci-tsan ]; then
        echo "=== nvmekit: ci-tsan controller tests with 4 poll groups on threads of their own"
        ctest --preset ci-tsan-controllers
    fi
done

echo "=== nvmekit: fuzz targets (clang 14, libFuzzer + ASan + UBSan), ${NVMEKIT_FUZZ_SECONDS:-60} s each"
cmake --preset ci-fuzz --fresh
cmake --build --preset ci-fuzz
bash tests/fuzz/run.sh build/ci-fuzz "${NVMEKIT_FUZZ_SECONDS:-60}"

echo "=== nvmekit: compile-time budget of the core header (bench/compile_time.sh --check)"
bash bench/compile_time.sh --check 3

echo "=== nvmekit: Debian package"
bash tests/package/deb.sh build/ci-gcc

echo "=== nvmekit: end to end (QEMU guest over vfio-user)"
e2e_status=0
bash tests/e2e/run.sh build/ci-gcc/examples/nvmekit-serve || e2e_status=$?
if [ "$e2e_status" -eq 77 ]; then
    echo "=== nvmekit: end to end SKIPPED: no vfio-user QEMU provisioned (bash tests/e2e/provision.sh)"
elif [ "$e2e_status" -ne 0 ]; then
    exit "$e2e_status"
fi

echo "=== nvmekit: all checks passed in $((SECONDS - start)) s"
