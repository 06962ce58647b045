#!/usr/bin/env bash
# The whole test suite: installs what is missing, checks formatting and the clang-tidy checks
# (cmake/style.sh), then builds and runs every test with g++ 12 (Release: nvmekit-serve at -O2, the
# tests, examples and benchmarks at -O0; -Werror) and with clang 14 (-O0, -Werror, every public
# header compiled on its own, under AddressSanitizer + UndefinedBehaviorSanitizer; the package
# consumers are built by the g++ pass only), runs the controller tests again with their I/O queues
# over 2 and 4 poll groups and with groups on threads of their own, runs the tests of multi-threaded
# code and the controller tests with 4 threaded poll groups under ThreadSanitizer, runs each
# libFuzzer target for 30 seconds on its seed corpus, one per core at a time (NVMEKIT_FUZZ_SECONDS
# changes that), meanwhile checks the Debian package, and runs the end-to-end tests: a Linux guest
# under QEMU against nvmekit-serve over vfio-user, and over NVMe/TCP with the guest kernel's
# nvme-tcp host. The end-to-end tests run in the background from the moment nvmekit-serve is built,
# beside the other stages, and report at the end. What they need (a QEMU with the vfio-user client
# built from Debian's source package, the guest kernel and initramfs) is provisioned first when it
# is missing, once per machine, outside the checkout (tests/e2e/provision.sh; about 5 minutes on 2
# cores, seconds once done); a provisioning failure fails the run and says what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source cmake/deps.sh
nvmekit_install_missing "${nvmekit_build_packages[@]}" "${nvmekit_test_packages[@]}"

start=$SECONDS
# stage TEXT: a stage's heading, with the minutes and seconds since the start.
stage() {
    local elapsed=$((SECONDS - start))
    printf '=== nvmekit: [%d:%02d] %s\n' $((elapsed / 60)) $((elapsed % 60)) "$*"
}
stage "formatting (cmake/style.sh format)"
bash cmake/style.sh format
stage "no package-mirror or archive address in the repository (cmake/check_urls.sh)"
bash cmake/check_urls.sh

# First, so that a machine that cannot provision fails in minutes, not after the other tests.
stage "end-to-end test prerequisites (tests/e2e/provision.sh)"
if e2e_missing=$(bash tests/e2e/provision.sh check); then
    echo "already provisioned"
else
    echo "provisioning: ${e2e_missing//$'\n'/; }"
    provision=(bash tests/e2e/provision.sh)
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || {
            echo "=== nvmekit: FAILED: the end-to-end test needs, and only root can provision: ${e2e_missing//$'\n'/; }" >&2
            exit 1
        }
        provision=(sudo "${provision[@]}")
    fi
    provision_start=$SECONDS
    if ! "${provision[@]}"; then
        echo "=== nvmekit: FAILED: provisioning the end-to-end test; still missing:" >&2
        bash tests/e2e/provision.sh check 2>&1 | sed "s/^/  /" >&2 || true
        exit 1
    fi
    e2e_missing=$(bash tests/e2e/provision.sh check) || {
        echo "=== nvmekit: FAILED: provisioned, yet still missing: ${e2e_missing//$'\n'/; }" >&2
        exit 1
    }
    stage "provisioned the end-to-end test in $((SECONDS - provision_start)) s"
fi

# The end-to-end tests boot one guest at a time under TCG, which keeps one core busy and leaves
# the other idle, so they run in the background beside the builds and tests below, as soon as the
# server they drive is built; their output is printed, and their result counted, at the end.
e2e_log=build/e2e.log
e2e_pid=
fuzz_pid=
stop_background() {
    local pid
    for pid in "$e2e_pid" "$fuzz_pid"; do
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill -- -"$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
        fi
    done
}
trap stop_background EXIT
# Every script runs, even after one fails, and each one's result is reported.
run_e2e() {
    local serve=build/ci-gcc/examples/nvmekit-serve failed=()
    stage "end to end (Linux guest under QEMU, over vfio-user)"
    bash tests/e2e/run.sh "$serve" || failed+=(run.sh)
    stage "end to end, managed by JSON-RPC (namespaces hot-plugged into the guest)"
    bash tests/e2e/hotplug.sh "$serve" || failed+=(hotplug.sh)
    stage "end to end over NVMe/TCP (the Linux guest's nvme-tcp host)"
    bash tests/e2e/tcp.sh "$serve" || failed+=(tcp.sh)
    if [ ${#failed[@]} -ne 0 ]; then
        echo "=== nvmekit: end to end: FAILED: ${failed[*]} (of run.sh, hotplug.sh, tcp.sh)"
        return 1
    fi
    echo "=== nvmekit: end to end: run.sh, hotplug.sh and tcp.sh passed"
}

# run_stage NAME CTEST_ARGUMENTS...: one ctest run, judged by cmake/ctest_stage.py from its JUnit
# report: how many tests ran, passed, failed and were skipped; a skip tests/test_stages.txt does
# not allow, or fewer tests than it expects of the stage, fails the stage like a failed test.
mkdir -p build/junit
failures=build/junit/failures.txt
: >"$failures"
failed_stages=()
run_stage() {
    local name=$1 status=0
    shift
    stage "${name}"
    ctest "$@" --output-junit "$PWD/build/junit/${name}.xml" || status=$?
    python3 cmake/ctest_stage.py "$name" "build/junit/${name}.xml" "$failures" || status=1
    if [ "$status" -ne 0 ]; then
        failed_stages+=("$name")
        echo "=== nvmekit: FAILED: stage ${name}" >&2
    fi
}
# check_built BUILD_DIR: ctest registers a test whose executable was not built as <name>_NOT_BUILT;
# a build that leaves out a test it registered fails the run, whatever the stages filter.
check_built() {
    local missing
    missing=$(ctest --test-dir "$1" -N | grep -oE '[A-Za-z0-9_.-]+_NOT_BUILT' || true)
    if [ -n "$missing" ]; then
        echo "=== nvmekit: FAILED: $1 registers tests it did not build: ${missing//$'\n'/ }" >&2
        exit 1
    fi
}

for preset in ci-gcc ci-clang ci-tsan; do
    stage "${preset}"
    cmake --preset "$preset" --fresh
    if [ "$preset" = ci-gcc ]; then
        # The server compiles as one translation unit; a test group of about its size keeps the
        # other core busy meanwhile.
        cmake --build --preset ci-gcc --target nvmekit-serve controller_tests
        stage "end-to-end tests started in the background (output at the end)"
        set -m
        run_e2e >"$e2e_log" 2>&1 &
        e2e_pid=$!
        set +m
    fi
    cmake --build --preset "$preset"
    check_built "build/$preset"
    if [ "$preset" = ci-gcc ]; then
        run_stage ci-gcc --preset ci-gcc
        stage "clang-tidy (cmake/style.sh tidy)"
        bash cmake/style.sh tidy build/ci-gcc
        # The controller tests again, with the I/O queues spread over 2 and 4 poll groups, and over
        # 2 poll groups on threads of their own.
        for groups in 2 4; do
            NVMEKIT_TEST_POLL_GROUPS=$groups run_stage "ci-gcc-controllers-${groups}-groups" --preset ci-gcc -L '^controller'
        done
        NVMEKIT_TEST_POLL_GROUPS=2 NVMEKIT_TEST_THREADED_GROUPS=1 \
            run_stage ci-gcc-controllers-2-threaded-groups --preset ci-gcc -L '^controller'
    else
        run_stage "$preset" --preset "$preset"
    fi
    if [ "$preset" = ci-tsan ]; then
        # The controller tests with 4 poll groups on threads of their own.
        run_stage ci-tsan-controllers --preset ci-tsan-controllers
    fi
done

stage "fuzz targets (clang 14, libFuzzer + ASan + UBSan), ${NVMEKIT_FUZZ_SECONDS:-30} s each"
cmake --preset ci-fuzz --fresh
cmake --build --preset ci-fuzz
# The fuzz targets run for a fixed time each, one per core at a time; with an odd number of them
# a core would idle in the last round, so the two checks below run beside them. Their output is
# printed after theirs.
fuzz_log=build/fuzz.log
set -m
bash tests/fuzz/run.sh build/ci-fuzz "${NVMEKIT_FUZZ_SECONDS:-30}" >"$fuzz_log" 2>&1 &
fuzz_pid=$!
set +m

stage "the umbrella header keeps heavy headers out (bench/compile_time.sh --check)"
bash bench/compile_time.sh --check 3

stage "Debian package"
bash tests/package/deb.sh build/ci-gcc

# collect NAME PID LOG: waits for a background stage, prints its log and counts its result.
collect() {
    local status=0
    stage "waiting for the $1"
    wait "$2" || status=$?
    cat "$3"
    if [ "$status" -ne 0 ]; then
        failed_stages+=("$1")
    fi
}
collect "fuzz targets" "$fuzz_pid" "$fuzz_log"
fuzz_pid=
collect "end-to-end tests" "$e2e_pid" "$e2e_log"
e2e_pid=
if [ ${#failed_stages[@]} -ne 0 ]; then
    # The failed tests again, after the long output of the background stages.
    cat "$failures" >&2
    echo "=== nvmekit: FAILED: ${failed_stages[*]} (above)" >&2
    exit 1
fi

echo "=== nvmekit: all checks passed in $((SECONDS - start)) s"
