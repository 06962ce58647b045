#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for a bounded time on a copy of its seed corpus,
# one target per core at a time (NVMEKIT_FUZZ_JOBS, default nproc).
#   bash tests/fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET]    (default 60)
# Fails when a target finds a crash, a sanitizer report, a leak, a timeout or an out-of-memory;
# the input that caused it is kept as BUILD_DIR/fuzz-findings/<target>-crash-* (or -timeout-*,
# -oom-*, -leak-*). A finding, once fixed, goes into tests/fuzz/corpus/<target>/ as
# regression-<name> so that every later run replays it.
set -euo pipefail
build="${1:?usage: run.sh BUILD_DIR [SECONDS_PER_TARGET]}"
seconds="${2:-60}"
source_dir="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "$build" && pwd)"
work="$build/fuzz-run"
findings="$build/fuzz-findings"
rm -rf "$work"
mkdir -p "$work" "$findings"

shopt -s nullglob
targets=("$build"/tests/fuzz/fuzz_*)
if [ ${#targets[@]} -eq 0 ]; then
    echo "nvmekit fuzz: no fuzz_* executables under $build/tests/fuzz" >&2
    exit 1
fi

# Runs one target; its report goes to $work/<name>.report, its status to $work/<name>.status.
run_target() {
    local target=$1 name corpus seeds log result=0
    name="$(basename "$target")"
    corpus="$work/$name"
    mkdir -p "$corpus"
    if [ -d "$source_dir/corpus/$name" ]; then
        cp "$source_dir/corpus/$name"/* "$corpus"/ 2>/dev/null || true
    fi
    seeds=$(find "$corpus" -type f | wc -l)
    log="$work/$name.log"
    {
        echo "--- $name: $seeds seeds, ${seconds} s"
        "$target" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 -print_final_stats=1 \
            -artifact_prefix="$findings/$name-" "$corpus" >"$log" 2>&1 || result=$?
        # The last status line: executions, coverage (cov = edges, ft = features), corpus size.
        grep -E '^#[0-9]+' "$log" | tail -n 1 || true
        grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$log" || true
        if [ "$result" -ne 0 ]; then
            echo "nvmekit fuzz: $name FAILED (exit $result); its log:"
            tail -n 60 "$log"
        fi
    } >"$work/$name.report" 2>&1
    echo "$result" >"$work/$name.status"
}

# Each target is one process on one core, so as many run at once as there are cores
# (NVMEKIT_FUZZ_JOBS changes that); each still runs for its whole time.
jobs="${NVMEKIT_FUZZ_JOBS:-$(nproc)}"
names=()
for target in "${targets[@]}"; do
    [ -x "$target" ] || continue
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
        wait -n || true
    done
    run_target "$target" &
    names+=("$(basename "$target")")
done
wait

status=0
for name in "${names[@]}"; do
    cat "$work/$name.report"
    if [ "$(cat "$work/$name.status" 2>/dev/null || echo missing)" != 0 ]; then
        status=1
    fi
done
exit "$status"
