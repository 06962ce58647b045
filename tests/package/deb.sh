#!/usr/bin/env bash
# Builds the nvmekit-dev and nvmekit-serve .debs from a configured build tree, installs them
# with dpkg, builds and runs the find_package consumer against the system installation, runs
# the installed nvmekit-serve, then removes the packages again (unless they were installed
# before this script ran).
set -euo pipefail
build_dir=$(realpath "$1")
source_dir=$(realpath "$(dirname "$0")/../..")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$build_dir" && cpack -G DEB -B "$work/cpack" >/dev/null)
deb=$(ls "$work"/cpack/nvmekit-dev_*_all.deb)
serve_deb=$(ls "$work"/cpack/nvmekit-serve_*.deb)
echo "built $(basename "$deb") and $(basename "$serve_deb")"
if ! dpkg-deb --contents "$serve_deb" | grep -qF ./usr/bin/nvmekit-serve; then
    echo "deb package: ./usr/bin/nvmekit-serve is missing from $(basename "$serve_deb")" >&2
    exit 1
fi
contents=$(dpkg-deb --contents "$deb")
for expected in ./usr/share/cmake/nvmekit/nvmekitConfig.cmake ./usr/share/cmake/nvmekit/nvmekitConfigVersion.cmake \
    ./usr/share/pkgconfig/nvmekit.pc ./usr/include/nvmekit/spec.hpp; do
    if ! grep -qF "$expected" <<<"$contents"; then
        echo "deb package: $expected is missing" >&2
        exit 1
    fi
done

sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)
was_installed=no
dpkg-query -W -f='${Status}' nvmekit-dev 2>/dev/null | grep -q 'install ok installed' && was_installed=yes
serve_was_installed=no
dpkg-query -W -f='${Status}' nvmekit-serve 2>/dev/null | grep -q 'install ok installed' && serve_was_installed=yes
"${sudo[@]}" dpkg -i "$deb" "$serve_deb" >/dev/null
cleanup_package() {
    [ "$was_installed" = no ] && "${sudo[@]}" dpkg -r nvmekit-dev >/dev/null
    [ "$serve_was_installed" = no ] && "${sudo[@]}" dpkg -r nvmekit-serve >/dev/null
    rm -rf "$work"
}
trap cleanup_package EXIT

cmake -S "$source_dir/tests/package/find_package" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/consumer" >/dev/null
output=$("$work/consumer/consumer")
echo "$output"
case "$output" in
    "nvmekit "*": READ cid=5 nsid=1"*) echo "deb package: installed with dpkg -i and found by find_package" ;;
    *) echo "deb package: unexpected consumer output" >&2; exit 1 ;;
esac

usage=$(/usr/bin/nvmekit-serve --help 2>&1 || true)
case "$usage" in
    *"usage: nvmekit-serve --vfio-user SOCKET"*) echo "deb package: nvmekit-serve installed in /usr/bin and runs" ;;
    *) echo "deb package: the installed nvmekit-serve did not run: $usage" >&2; exit 1 ;;
esac
