#!/usr/bin/env bash
# What the end-to-end tests' host sides share (run.sh, hotplug.sh, tcp.sh source it, with `here`
# set to tests/e2e): the provisioned environment and the host checks' output.
#
#   require_provisioned LABEL   exits with 1, listing what provision.sh check finds missing,
#                               unless everything is provisioned; then sources env.sh
#   host_ok TEXT, host_fail TEXT  print "E2E ok: TEXT" or "E2E FAIL: TEXT" (counted in failures)
#   stop_processes PID...       kills each process (a server left running) and reaps it

e2e_dir=${NVMEKIT_E2E_DIR:-/var/tmp/nvmekit-e2e}
failures=0

require_provisioned() {
    local missing
    missing=$(bash "$here/provision.sh" check 2>&1) || {
        echo "$1: FAILED: not provisioned (run: bash tests/e2e/provision.sh, as root); missing:"
        echo "$missing" | sed 's/^/  /'
        exit 1
    }
    # shellcheck disable=SC1091
    source "$e2e_dir/env.sh"
}

host_ok() { echo "E2E ok: $*"; }
host_fail() { echo "E2E FAIL: $*"; failures=$((failures + 1)); }

stop_processes() {
    local pid
    for pid in "$@"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}
