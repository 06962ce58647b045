#!/usr/bin/env bash
# Style checks, part of the test suite (cmake/test.sh):
#   bash cmake/style.sh format        every C++ file as .clang-format lays it out (clang-format 14)
#   bash cmake/style.sh tidy BUILD    the .clang-tidy checks, every finding an error, on translation
#                                     units that together include every library header; BUILD is a
#                                     configured build tree with compile_commands.json
# To format: clang-format-14 -i $(git ls-files '*.hpp' '*.cpp')
set -euo pipefail
cd "$(dirname "$0")/.."

cpp_files() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files '*.hpp' '*.cpp'
    else
        find bench examples include tests -name '*.hpp' -o -name '*.cpp' | sort
    fi
}

case "${1:-}" in
format)
    mapfile -t files < <(cpp_files)
    clang-format-14 --dry-run --Werror "${files[@]}"
    echo "${#files[@]} files formatted as .clang-format says"
    ;;
tidy)
    build=${2:?usage: style.sh tidy BUILD}
    # The controller with every command set and the testing providers, the vfio-user server and
    # transports, the umbrella header's consumers, and the in-process host.
    units=(examples/serve.cpp examples/demo.cpp examples/vendor_async_command.cpp tests/unit/controller_test.cpp)
    # One unit per core at a time; each prints its findings as it ends, and any finding fails.
    printf '%s\0' "${units[@]}" | xargs -0 -P "$(nproc)" -I{} \
        sh -c 'out=$(clang-tidy-14 -p "$1" --quiet "$2" 2>&1); status=$?; printf "clang-tidy: %s\n%s\n" "$2" "$out"; exit $status' \
        sh "$build" {} || { echo "clang-tidy: findings above" >&2; exit 1; }
    ;;
*)
    echo "usage: style.sh format | tidy BUILD" >&2
    exit 2
    ;;
esac
