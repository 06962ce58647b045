#!/usr/bin/env bash
# Builds the nvmekit-dev and nvmekit-serve .debs from a configured build tree, installs them
# with dpkg, builds the consumer programs (tests/package/consumers.cmake: the formatted spec
# types, README's example, a vfio-user server from the transport headers) against the system
# installation with find_package and again with pkg-config's flags, runs them, runs the installed
# nvmekit-serve, then removes the packages again (unless they were installed before this script
# ran).
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
    ./usr/share/pkgconfig/nvmekit.pc ./usr/include/nvmekit/spec.hpp ./usr/include/nvmekit/controller.hpp \
    ./usr/include/nvmekit/testing/host.hpp \
    $([ -f "$build_dir/nvmekit-rpc.pc" ] && echo ./usr/include/nvmekit/rpc/server.hpp \
        ./usr/share/pkgconfig/nvmekit-rpc.pc ./usr/share/cmake/nvmekit/nvmekitRpcTargets.cmake) \
    $([ -f "$build_dir/nvmekit-vfio_user.pc" ] && echo ./usr/include/nvmekit/transport/vfio_user/server.hpp \
        ./usr/share/pkgconfig/nvmekit-vfio_user.pc ./usr/share/cmake/nvmekit/nvmekitVfioUserTargets.cmake) \
    $([ -f "$build_dir/nvmekit-uring.pc" ] && echo ./usr/include/nvmekit/backends/uring_backend.hpp \
        ./usr/share/pkgconfig/nvmekit-uring.pc ./usr/share/cmake/nvmekit/nvmekitUringTargets.cmake) \
    $([ -f "$build_dir/nvmekit-systemc.pc" ] && echo ./usr/include/nvmekit/systemc/nvme_device.hpp \
        ./usr/share/pkgconfig/nvmekit-systemc.pc ./usr/share/cmake/nvmekit/nvmekitSystemcTargets.cmake); do
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

cmake -S "$source_dir/tests/package/find_package" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE= >/dev/null
cmake --build "$work/consumer" >/dev/null
if ! ctest --test-dir "$work/consumer" --output-on-failure; then
    echo "deb package: a consumer built with find_package against the installed package failed" >&2
    exit 1
fi
echo "deb package: installed with dpkg -i; find_package consumers built and ran"
if ! cmake -DPKG_CONFIG=pkg-config -DCXX=c++ -DOUTPUT_DIR="$work/pkg_config" \
    -P "$source_dir/tests/package/pkg_config.cmake"; then
    echo "deb package: a consumer built with the installed nvmekit.pc's flags failed" >&2
    exit 1
fi
echo "deb package: pkg-config consumers built and ran"

usage=$(/usr/bin/nvmekit-serve --help 2>&1 || true)
case "$usage" in
    *"usage: nvmekit-serve [--vfio-user SOCKET]"*) echo "deb package: nvmekit-serve installed in /usr/bin and runs" ;;
    *) echo "deb package: the installed nvmekit-serve did not run: $usage" >&2; exit 1 ;;
esac
