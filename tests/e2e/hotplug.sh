#!/usr/bin/env bash
# End-to-end test of the management interface: nvmekit-serve starts with no device and only its
# JSON-RPC socket; the target is built through the socket with SPDK's method names (VFIOUSER and
# TCP transports, a RAM bdev, a subsystem, a namespace, a listener of each transport). Two Linux
# guests run at once: one attached to the VFIOUSER listener as a PCI function, the other
# connected to the TCP listener with its kernel's nvme-tcp host, so the same subsystem is served
# over both transports. A second namespace is added while they run and must appear in both, then
# is removed and must go from both (tests/e2e/guest-hotplug.sh). Then the configuration is saved,
# the server restarted from it, and nvmf_get_subsystems compared.
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
start_serve() {
    "$serve" -r "$sock" "$@" >>"$work/serve.log" 2>&1 &
    serve_pid=$!
    for _ in $(seq 1 50); do [ -S "$sock" ] && return 0; sleep 0.1; done
    echo "e2e [hotplug]: FAILED: no socket"; cat "$work/serve.log"; exit 1
}

start_serve
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
    python3 -c 'import json, sys; c = json.loads(sys.argv[1]); assert [x["num_io_qpairs"] for x in c] == [2, 2] and c[0]["hostnqn"] == "" and c[1]["hostnqn"].startswith("nqn."), c' \
        "$controllers" && host_ok "nvmf_subsystem_get_controllers: the function's and the TCP host's, 2 I/O queue pairs each" \
        || host_fail "nvmf_subsystem_get_controllers: expected the function's and the TCP host's controllers with 2 I/O queue pairs each, got $controllers"
    qpairs=$(rpc nvmf_subsystem_get_qpairs "{\"nqn\": \"$nqn\"}")
    python3 -c 'import json, sys; q = json.loads(sys.argv[1]); assert [(p["qid"], p["listen_address"]["trtype"]) for p in q] == [(0, "VFIOUSER"), (1, "VFIOUSER"), (2, "VFIOUSER"), (0, "TCP"), (1, "TCP"), (2, "TCP")], q' \
        "$qpairs" && host_ok "nvmf_subsystem_get_qpairs: queue pairs 0, 1 and 2 over each transport" \
        || host_fail "nvmf_subsystem_get_qpairs: expected queue pairs 0, 1 and 2 over VFIOUSER and TCP, got $qpairs"
    stats=$(rpc nvmf_get_stats)
    python3 -c 'import json, sys; g = json.loads(sys.argv[1])["poll_groups"]; assert [x["current_io_qpairs"] for x in g] == [2, 2] and all(x["completed_nvme_io"] > 0 for x in g), g' \
        "$stats" && host_ok "nvmf_get_stats: the function's poll group and the TCP listener's hold 2 I/O queue pairs each and completed commands" \
        || host_fail "nvmf_get_stats: expected two poll groups with 2 I/O queue pairs and completed commands, got $stats"
    rpc nvmf_subsystem_add_ns "{\"nqn\": \"$nqn\", \"namespace\": {\"bdev_name\": \"Malloc1\", \"nsid\": 2}}" >/dev/null
    if wait_line "E2E: waiting for namespace 2 to go away" 300; then
        rpc nvmf_subsystem_remove_ns "{\"nqn\": \"$nqn\", \"nsid\": 2}" >/dev/null
    fi
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
    warnings=$(grep -E "^\[ *[0-9.]+\] nvme" "$2" | grep -i -E "timeout|duplicate|fail|error|warn|abort" || true)
    [ -z "$warnings" ] && host_ok "$1: no NVMe warnings in the guest kernel log" \
        || host_fail "$1: NVMe warnings in the guest kernel log: $warnings"
    warnings=$(grep -E "^\[ *[0-9.]+\] " "$2" | grep -E "WARNING|BUG|Call Trace|RIP:" || true)
    [ -z "$warnings" ] && host_ok "$1: no WARNING, BUG or call trace in the guest kernel log" \
        || host_fail "$1: the guest kernel logged: $warnings"
}
check_guest vfio-user "$work/guest.log" "$qemu_pid"
qemu_pid=''
check_guest NVMe/TCP "$work/guest-tcp.log" "$tcp_qemu_pid"
tcp_qemu_pid=''

# Saved, restarted from the file, the same subsystems.
before=$(rpc nvmf_get_subsystems)
{
    echo '{"subsystems": ['
    echo "{\"subsystem\": \"bdev\", \"config\": $(rpc framework_get_config '{"name": "bdev"}')},"
    echo "{\"subsystem\": \"nvmf\", \"config\": $(rpc framework_get_config '{"name": "nvmf"}')}"
    echo ']}'
} >"$work/config.json"
kill -INT "$serve_pid"
wait "$serve_pid" && host_ok "nvmekit-serve stopped on SIGINT with status 0" || host_fail "nvmekit-serve: non-zero exit on SIGINT"
serve_pid=''
start_serve -c "$work/config.json"
after=$(rpc nvmf_get_subsystems)
[ "$before" = "$after" ] && host_ok "nvmf_get_subsystems the same after save, restart and load" \
    || host_fail "nvmf_get_subsystems after restart: expected $before, got $after"
[ -S "$work/vm0/cntrl" ] && host_ok "the listener's function is served again from the configuration" \
    || host_fail "no $work/vm0/cntrl after the restart"
(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && host_ok "the TCP listener listens again from the configuration" \
    || host_fail "nothing listens on 127.0.0.1:$port after the restart"
kill -INT "$serve_pid"
wait "$serve_pid" || true
serve_pid=''
echo "---- e2e [hotplug]: nvmekit-serve log"
cat "$work/serve.log"
echo "e2e [hotplug]: $failures failed"
[ "$failures" -eq 0 ]
