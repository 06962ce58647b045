#!/usr/bin/env bash
# Compile time of the public headers: each header alone in one translation unit, g++ -O2, best
# of N runs, as wall-clock time and as the compiler's CPU time (user + system; what a loaded
# machine changes least), printed as a table.
#   bash bench/compile_time.sh [runs]
#   bash bench/compile_time.sh --check [runs]
# With --check it is also the budget check the test suite runs: it fails when the core header
# (nvmekit/controller.hpp, the controller with every component, both command sets, the subsystem
# and the backends) takes more than NVMEKIT_COMPILE_BUDGET_MS (default 3000) of CPU time at its best.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [ "${1:-}" = --check ]; then
    check=1
    shift
fi
runs=${1:-3}
cxx=${CXX:-g++}
budget_header=nvmekit/controller.hpp
budget_ms=${NVMEKIT_COMPILE_BUDGET_MS:-3000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "$check" -eq 1 ]; then
    headers=("$budget_header")
else
    headers=(nvmekit/spec.hpp nvmekit/format.hpp "$budget_header" fmt/format.h spdlog/spdlog.h)
fi
printf '%-24s %12s %12s\n' header "best wall ms" "best CPU ms"
status=0
for header in "${headers[@]}"; do
    echo "#include <${header}>" > "$work/tu.cpp"
    best_wall=
    best_cpu=
    for _ in $(seq "$runs"); do
        start=$(date +%s%N)
        # GNU time is not installed everywhere: bash's `times` gives the children's CPU time.
        cpu=$(bash -c '"$@" && times' _ "$cxx" -std=c++20 -O2 -Iinclude -c "$work/tu.cpp" -o "$work/tu.o" |
            awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000 }')
        wall=$((($(date +%s%N) - start) / 1000000))
        if [ -z "$best_wall" ] || [ "$wall" -lt "$best_wall" ]; then best_wall=$wall; fi
        if [ -z "$best_cpu" ] || [ "$cpu" -lt "$best_cpu" ]; then best_cpu=$cpu; fi
    done
    printf '%-24s %12d %12d\n' "$header" "$best_wall" "$best_cpu"
    if [ "$header" = "$budget_header" ] && [ "$best_cpu" -gt "$budget_ms" ]; then
        echo "nvmekit compile time: $header took $best_cpu ms of CPU time, above the budget of $budget_ms ms" >&2
        status=1
    fi
done
exit "$status"
