#!/usr/bin/env bash
# Installs the Debian packages named in the arguments that are not installed yet.
# Sourced by demo.sh and test.sh; needs root (or sudo) only when something is missing.
set -euo pipefail

nvmekit_install_missing() {
    local missing=()
    local package
    for package in "$@"; do
        if [ "$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null)" != "install ok installed" ]; then
            missing+=("$package")
        fi
    done
    [ ${#missing[@]} -eq 0 ] && return 0

    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            echo "nvmekit: missing Debian packages (${missing[*]}); run as root or install them" >&2
            return 1
        fi
    fi
    echo "nvmekit: installing Debian packages: ${missing[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# What building the library and its examples needs.
nvmekit_build_packages=(cmake ninja-build g++ libfmt-dev libspdlog-dev libboost-dev)
# What the tests, benchmarks and packaging checks add.
# nlohmann-json3-dev: the JSON-RPC headers (nvmekit::rpc), the vfio-user transport
# (nvmekit::vfio_user), nvmekit-serve and their tests.
# liburing-dev: the io_uring backend (nvmekit::uring), its tests, nvmekit-serve --io uring and
# nvmekit-perf --backend uring.
# libsystemc-dev: the SystemC TLM-2.0 device (nvmekit::systemc), its tests and example.
# dpkg-dev: dpkg-shlibdeps computes the nvmekit-serve package's dependencies.
# clang-format-14, clang-tidy-14: the style checks (cmake/style.sh).
nvmekit_test_packages=(clang libclang-rt-14-dev clang-format-14 clang-tidy-14 libgtest-dev libbenchmark-dev
    nlohmann-json3-dev liburing-dev libsystemc-dev pkgconf dpkg-dev)
