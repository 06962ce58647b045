#!/usr/bin/env bash
# End-to-end test of the management interface: nvmekit-serve starts with no device and only its
# JSON-RPC socket; the target is built through the socket with SPDK's method names (VFIOUSER and
# TCP transports, a RAM bdev, a subsystem, a namespace, a listener of each transport). Two Linux
# guests run at once: one attached to the VFIOUSER listener as a PCI function, the other
# connected to the TCP listener with its kernel's nvme-tcp host, so the same subsystem is served
# over both transports. A second namespace is added while they run and must appear in both, then
# is removed and must go from both (tests/e2e/guest-hotplug.sh). Then the configuration is saved,
# the server stopped with SIGINT, restarted from it, nvmf_get_subsystems compared, and the
# restarted server stopped with SIGTERM; each stop must end in exit status 0.
#
#   tests/e2e/hotplug.sh NVMEKIT_SERVE_BINARY
#
# Needs what tests/e2e/provision.sh provides. Exit status 0 on success.
set -euo pipefail

serve=${1:?usage: hotplug.sh NVMEKIT_SERVE_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/host-common.sh
source "$here/host-common.sh"
require_provisioned "e2e [hotplug]"

work=$(mktemp -d /tmp/nvmekit-e2e-hotplug.XXXXXX)
serve_pid='' qemu_pid='' tcp_qemu_pid=''
cleanup() {
    [ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null || true
    [ -n "$tcp_qemu_pid" ] && kill "$tcp_qemu_pid" 2>/dev/null || true
    [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

sock=$work/rpc.sock
rpc_sock=$sock
nqn=nqn.2019-07.io.spdk:cnode0
uuid=6a0d7c2e-3b1f-4c5e-9d8a-1f2e3d4c5b6a
# start_serve LOG ARGUMENTS...: nvmekit-serve with the JSON-RPC socket, its output in LOG
start_serve() {
    local log=$1
    shift
    "$serve" -r "$sock" "$@" >"$log" 2>&1 &
    serve_pid=$!
    for _ in $(seq 1 50); do [ -S "$sock" ] && return 0; sleep 0.1; done
    echo "e2e [hotplug]: FAILED: no socket $sock after 5 s"; cat "$log"; exit 1
}

start_serve "$work/serve.log"
mkdir -p "$work/vm0" "$work/overlay/e2e"
rpc nvmf_create_transport '{"trtype": "VFIOUSER"}' >/dev/null
rpc bdev_malloc_create "{\"name\": \"Malloc0\", \"num_blocks\": 131072, \"block_size\": 512, \"uuid\": \"$uuid\"}" >/dev/null
rpc bdev_malloc_create '{"name": "Malloc1", "num_blocks": 65536, "block_size": 512}' >/dev/null
rpc nvmf_create_subsystem "{\"nqn\": \"$nqn\", \"allow_any_host\": true, \"serial_number\": \"SPDK00000000000001\", \"ana_reporting\": false}" >/dev/null
rpc nvmf_subsystem_add_ns "{\"nqn\": \"$nqn\", \"namespace\": {\"bdev_name\": \"Malloc0\"}}" >/dev/null
rpc nvmf_subsystem_add_listener "{\"nqn\": \"$nqn\", \"listen_address\": {\"trtype\": \"VFIOUSER\", \"traddr\": \"$work/vm0\", \"trsvcid\": \"0\"}}" >/dev/null
port=$(free_port)
rpc nvmf_create_transport '{"trtype": "TCP"}' >/dev/null
rpc nvmf_subsystem_add_listener "{\"nqn\": \"$nqn\", \"listen_address\": {\"trtype\": \"TCP\", \"adrfam\": \"IPv4\", \"traddr\": \"127.0.0.1\", \"trsvcid\": \"$port\"}}" >/dev/null

cp "$here/guest-hotplug.sh" "$work/overlay/e2e/run"
cp "$here/guest-checks.sh" "$work/overlay/e2e/checks.sh"
cat >"$work/overlay/e2e/expected" <<EOF2
NQN=$nqn
SERIAL=SPDK00000000000001
NGUID=$(echo "$uuid" | tr -d '-' | tr 'A-F' 'a-f')
EOF2
bash "$here/provision.sh" pack "$work/overlay" "$work/initramfs.cpio.gz" >/dev/null
# The second guest's overlay: the same checks over NVMe/TCP, with the modules the base initramfs lacks.
mkdir -p "$work/overlay-tcp/e2e"
cp "$work/overlay/e2e/run" "$work/overlay/e2e/checks.sh" "$work/overlay-tcp/e2e/"
{ cat "$work/overlay/e2e/expected"; echo "TCP_PORT=$port"; } >"$work/overlay-tcp/e2e/expected"
copy_modules "$work/overlay-tcp/e2e/modules" crc32c_generic nvme-fabrics nvme-tcp e1000
bash "$here/provision.sh" pack "$work/overlay-tcp" "$work/initramfs-tcp.cpio.gz" >/dev/null
timeout 900 "$NVMEKIT_E2E_QEMU" "${NVMEKIT_E2E_QEMU_ARGS[@]}" -initrd "$work/initramfs.cpio.gz" \
    -append "console=ttyS0 loglevel=6" \
    -device "{\"driver\":\"vfio-user-pci\",\"socket\":{\"path\":\"$work/vm0/cntrl\",\"type\":\"unix\"}}" \
    >"$work/guest.log" 2>&1 &
qemu_pid=$!
timeout 900 "$NVMEKIT_E2E_QEMU" "${NVMEKIT_E2E_QEMU_ARGS[@]}" -initrd "$work/initramfs-tcp.cpio.gz" \
    -append "console=ttyS0 loglevel=6" -netdev user,id=net0 -device e1000,netdev=net0,romfile= \
    >"$work/guest-tcp.log" 2>&1 &
tcp_qemu_pid=$!
# wait_line TEXT SECONDS: until both guests print TEXT
wait_line() {
    for _ in $(seq 1 "$2"); do
        grep -q "$1" "$work/guest.log" && grep -q "$1" "$work/guest-tcp.log" && return 0
        sleep 1
    done
    return 1
}
if wait_line "E2E: waiting for namespace 2 to appear" 600; then
    # The guests' controllers as the management interface reports them: the function's and the
    # NVMe/TCP host's, each with its I/O queues (one a CPU, 2 here) and the admin queue pair,
    # and the commands their poll groups completed.
    controllers=$(rpc nvmf_subsystem_get_controllers "{\"nqn\": \"$nqn\"}")
    # [I/O queue pairs, the host NQN's first 4 characters] of each controller: the function's
    # (no host NQN) and the TCP host's
    expected='[[2, ""], [2, "nqn."]]'
    actual=$(json_value "$controllers" '[[c["num_io_qpairs"], c["hostnqn"][:4]] for c in j]')
    [ "$actual" = "$expected" ] \
        && host_ok "nvmf_subsystem_get_controllers: the function's and the TCP host's, 2 I/O queue pairs each" \
        || host_fail "nvmf_subsystem_get_controllers: [I/O queue pairs, host NQN prefix] expected $expected, got $actual (from $controllers)"
    qpairs=$(rpc nvmf_subsystem_get_qpairs "{\"nqn\": \"$nqn\"}")
    expected='[[0, "VFIOUSER"], [1, "VFIOUSER"], [2, "VFIOUSER"], [0, "TCP"], [1, "TCP"], [2, "TCP"]]'
    actual=$(json_value "$qpairs" '[[p["qid"], p["listen_address"]["trtype"]] for p in j]')
    [ "$actual" = "$expected" ] \
        && host_ok "nvmf_subsystem_get_qpairs: queue pairs 0, 1 and 2 over each transport" \
        || host_fail "nvmf_subsystem_get_qpairs: [qid, trtype] expected $expected, got $actual (from $qpairs)"
    stats=$(rpc nvmf_get_stats)
    expected='[[2, true], [2, true]]'
    actual=$(json_value "$stats" '[[g["current_io_qpairs"], g["completed_nvme_io"] > 0] for g in j["poll_groups"]]')
    [ "$actual" = "$expected" ] \
        && host_ok "nvmf_get_stats: the function's poll group and the TCP listener's hold 2 I/O queue pairs each and completed commands" \
        || host_fail "nvmf_get_stats: [current I/O queue pairs, completed commands > 0] of each poll group expected $expected, got $actual (from $stats)"
    rpc nvmf_subsystem_add_ns "{\"nqn\": \"$nqn\", \"namespace\": {\"bdev_name\": \"Malloc1\", \"nsid\": 2}}" >/dev/null
    if wait_line "E2E: waiting for namespace 2 to go away" 300; then
        rpc nvmf_subsystem_remove_ns "{\"nqn\": \"$nqn\", \"nsid\": 2}" >/dev/null
    else
        host_fail "the guests: expected both to print 'E2E: waiting for namespace 2 to go away' within 300 s of nvmf_subsystem_add_ns; namespace 2 not removed"
    fi
else
    host_fail "the guests: expected both to print 'E2E: waiting for namespace 2 to appear' within 600 s; the controllers, queue pairs and statistics not checked, namespace 2 not added"
fi
# check_guest LABEL LOG PID: the guest's exit, its checks and its kernel log
check_guest() {
    local status=0 result warnings
    wait "$3" || status=$?
    echo "---- e2e [hotplug]: the $1 guest"
    sed -n '/nvmekit-e2e: init reached/,$p' "$2"
    [ "$status" -eq 0 ] && host_ok "$1: QEMU exited with 0" || host_fail "$1: QEMU: expected exit status 0, got $status"
    result=$(sed -n 's/^E2E: result \([0-9]*\).*/\1/p' "$2" | tail -n 1)
    [ "$result" = 0 ] && host_ok "$1: guest checks: 0 failed" || host_fail "$1: guest checks: expected 0 failed, got ${result:-no result line}"
    warnings=$(matching -E "^\[ *[0-9.]+\] nvme" "$2" | matching -i -E "timeout|duplicate|fail|error|warn|abort")
    [ -z "$warnings" ] && host_ok "$1: no NVMe warnings in the guest kernel log" \
        || host_fail "$1: NVMe warnings in the guest kernel log: $warnings"
    warnings=$(matching -E "^\[ *[0-9.]+\] " "$2" | matching -E "WARNING|BUG|Call Trace|RIP:")
    [ -z "$warnings" ] && host_ok "$1: no WARNING, BUG or call trace in the guest kernel log" \
        || host_fail "$1: the guest kernel logged: $warnings"
}
check_guest vfio-user "$work/guest.log" "$qemu_pid"
qemu_pid=''
check_guest NVMe/TCP "$work/guest-tcp.log" "$tcp_qemu_pid"
tcp_qemu_pid=''

# Saved, restarted from the file, the same subsystems.
before=$(rpc nvmf_get_subsystems)
# Each call on its own line, so that a failing one stops the script (inside echo's arguments its
# status would be lost).
bdev_config=$(rpc framework_get_config '{"name": "bdev"}')
nvmf_config=$(rpc framework_get_config '{"name": "nvmf"}')
{
    echo '{"subsystems": ['
    echo "{\"subsystem\": \"bdev\", \"config\": $bdev_config},"
    echo "{\"subsystem\": \"nvmf\", \"config\": $nvmf_config}"
    echo ']}'
} >"$work/config.json"
stop_server "$serve_pid" "$work/serve.log" nvmekit-serve INT
serve_pid=''
start_serve "$work/serve-restarted.log" -c "$work/config.json"
after=$(rpc nvmf_get_subsystems)
[ "$before" = "$after" ] && host_ok "nvmf_get_subsystems the same after save, restart and load" \
    || host_fail "nvmf_get_subsystems after restart: expected $before, got $after"
[ -S "$work/vm0/cntrl" ] && host_ok "the listener's function is served again from the configuration" \
    || host_fail "no $work/vm0/cntrl after the restart"
(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && host_ok "the TCP listener listens again from the configuration" \
    || host_fail "nothing listens on 127.0.0.1:$port after the restart"
stop_server "$serve_pid" "$work/serve-restarted.log" "nvmekit-serve (restarted from the configuration)" TERM
serve_pid=''
echo "---- e2e [hotplug]: nvmekit-serve log"
cat "$work/serve.log"
echo "---- e2e [hotplug]: the restarted nvmekit-serve's log"
cat "$work/serve-restarted.log"
echo "e2e [hotplug]: $failures failed"
[ "$failures" -eq 0 ]
