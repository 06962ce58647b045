#!/usr/bin/env bash
# Compile time of the public headers: each header alone in one translation unit, g++ -O2, best
# of N runs, as wall-clock time and as the compiler's CPU time (user + system; what a loaded
# machine changes least), printed as a table.
#   bash bench/compile_time.sh [runs]
#   bash bench/compile_time.sh --check [runs]
# --check is what the test command runs. A time is a benchmark figure, not a pass/fail verdict
# (the same compilation takes 2.1 s to 3.3 s of CPU time on these machines from one run to the
# next), so the check is structural: it fails when the umbrella header (nvmekit/nvmekit.hpp; another
# with NVMEKIT_BUDGET_HEADER) includes, directly or not, a header that the compile-time budget keeps
# out of the core: {fmt}, spdlog, Asio, <filesystem>, <future>, <regex>, <iostream>, <fstream>. It
# then prints the umbrella's time for the record, beside <fmt/format.h> measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [ "${1:-}" = --check ]; then
    check=1
    shift
fi
runs=${1:-3}
cxx=${CXX:-g++}
budget_header=${NVMEKIT_BUDGET_HEADER:-nvmekit/nvmekit.hpp}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "$check" -eq 1 ]; then
    echo "#include <${budget_header}>" > "$work/tu.cpp"
    "$cxx" -std=c++20 -O2 -Iinclude -H -fsyntax-only "$work/tu.cpp" 2> "$work/includes"
    heavy='(/fmt/|/spdlog/|/boost/asio|/c\+\+/[0-9]+/(filesystem|future|regex|iostream|fstream)$)'
    if grep -E "^\.+ " "$work/includes" | awk '{ print $2 }' | grep -E "$heavy" | sort -u > "$work/heavy"; then
        echo "nvmekit compile time: $budget_header includes headers kept out of the core:" >&2
        sed 's/^/    /' "$work/heavy" >&2
        exit 1
    fi
    echo "$budget_header includes none of {fmt}, spdlog, Asio, <filesystem>, <future>, <regex>, <iostream>, <fstream>"
    headers=("$budget_header" fmt/format.h)
else
    headers=(nvmekit/spec.hpp nvmekit/format.hpp nvmekit/controller.hpp "$budget_header" fmt/format.h spdlog/spdlog.h)
fi
printf '%-24s %12s %12s\n' header "best wall ms" "best CPU ms"
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
done
