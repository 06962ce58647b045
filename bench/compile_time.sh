#!/usr/bin/env bash
# Compile-time budget of the public headers: each header alone in one translation unit, g++ -O2,
# best of N runs. The core umbrella header's budget is 3 s on a 2-core machine.
#   bash bench/compile_time.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
cxx=${CXX:-g++}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

headers=(nvmekit/spec.hpp nvmekit/format.hpp nvmekit/controller.hpp fmt/format.h spdlog/spdlog.h)
printf '%-24s %8s\n' header "best ms"
for header in "${headers[@]}"; do
    echo "#include <${header}>" > "$work/tu.cpp"
    best=
    for _ in $(seq "$runs"); do
        start=$(date +%s%N)
        "$cxx" -std=c++20 -O2 -Iinclude -c "$work/tu.cpp" -o "$work/tu.o"
        elapsed=$((($(date +%s%N) - start) / 1000000))
        if [ -z "$best" ] || [ "$elapsed" -lt "$best" ]; then best=$elapsed; fi
    done
    printf '%-24s %8d\n' "$header" "$best"
done
