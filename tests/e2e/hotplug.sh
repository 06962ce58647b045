#!/usr/bin/env bash
# End-to-end test of the management interface: nvmekit-serve starts with no device and only its
# JSON-RPC socket; the target is built through the socket with SPDK's method names (a VFIOUSER
# transport, a RAM bdev, a subsystem, a namespace, a listener), the Linux guest attaches to the
# listener, a second namespace is added while the guest runs and must appear in it, then is
# removed and must go (tests/e2e/guest-hotplug.sh). Then the configuration is saved, the server
# restarted from it, and nvmf_get_subsystems compared.
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
serve_pid='' qemu_pid=''
cleanup() {
    [ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null || true
    [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

sock=$work/rpc.sock
nqn=nqn.2019-07.io.spdk:cnode0
uuid=6a0d7c2e-3b1f-4c5e-9d8a-1f2e3d4c5b6a
# rpc METHOD [PARAMS-JSON]: one call, as rpc.py makes it; prints the result, fails on an error
rpc() {
    python3 - "$sock" "$1" "${2:-}" <<'PY'
import json, socket, sys
path, method, params = sys.argv[1], sys.argv[2], sys.argv[3]
request = {"jsonrpc": "2.0", "id": 1, "method": method}
if params:
    request["params"] = json.loads(params)
with socket.socket(socket.AF_UNIX) as s:
    s.connect(path)
    s.sendall(json.dumps(request).encode())
    buffer = b""
    while not buffer.endswith(b"\n"):
        buffer += s.recv(65536)
response = json.loads(buffer)
if "error" in response:
    sys.exit(f"{method}: {response['error']}")
print(json.dumps(response["result"], sort_keys=True))
PY
}
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

cp "$here/guest-hotplug.sh" "$work/overlay/e2e/run"
cp "$here/guest-checks.sh" "$work/overlay/e2e/checks.sh"
cat >"$work/overlay/e2e/expected" <<EOF2
NQN=$nqn
SERIAL=SPDK00000000000001
NGUID=$(echo "$uuid" | tr -d '-' | tr 'A-F' 'a-f')
EOF2
bash "$here/provision.sh" pack "$work/overlay" "$work/initramfs.cpio.gz" >/dev/null
timeout 900 "$NVMEKIT_E2E_QEMU" "${NVMEKIT_E2E_QEMU_ARGS[@]}" -initrd "$work/initramfs.cpio.gz" \
    -append "console=ttyS0 loglevel=6" \
    -device "{\"driver\":\"vfio-user-pci\",\"socket\":{\"path\":\"$work/vm0/cntrl\",\"type\":\"unix\"}}" \
    >"$work/guest.log" 2>&1 &
qemu_pid=$!
# wait_line TEXT SECONDS: until the guest prints TEXT
wait_line() {
    for _ in $(seq 1 "$2"); do grep -q "$1" "$work/guest.log" && return 0; sleep 1; done
    return 1
}
if wait_line "E2E: waiting for namespace 2 to appear" 600; then
    # The guest's controller as the management interface reports it: its I/O queues (one a CPU,
    # 2 here), the admin queue pair with them, and the commands its poll group completed.
    controllers=$(rpc nvmf_subsystem_get_controllers "{\"nqn\": \"$nqn\"}")
    python3 -c 'import json, sys; c = json.loads(sys.argv[1]); assert len(c) == 1 and c[0]["num_io_qpairs"] == 2, c' \
        "$controllers" && host_ok "nvmf_subsystem_get_controllers: one controller with 2 I/O queue pairs" \
        || host_fail "nvmf_subsystem_get_controllers: expected one controller with 2 I/O queue pairs, got $controllers"
    qpairs=$(rpc nvmf_subsystem_get_qpairs "{\"nqn\": \"$nqn\"}")
    python3 -c 'import json, sys; q = json.loads(sys.argv[1]); assert [p["qid"] for p in q] == [0, 1, 2], q' \
        "$qpairs" && host_ok "nvmf_subsystem_get_qpairs: queue pairs 0, 1 and 2" \
        || host_fail "nvmf_subsystem_get_qpairs: expected queue pairs 0, 1 and 2, got $qpairs"
    stats=$(rpc nvmf_get_stats)
    python3 -c 'import json, sys; g = json.loads(sys.argv[1])["poll_groups"]; assert len(g) == 1 and g[0]["current_io_qpairs"] == 2 and g[0]["completed_nvme_io"] > 0, g' \
        "$stats" && host_ok "nvmf_get_stats: the poll group holds 2 I/O queue pairs and completed commands" \
        || host_fail "nvmf_get_stats: expected a poll group with 2 I/O queue pairs and completed commands, got $stats"
    rpc nvmf_subsystem_add_ns "{\"nqn\": \"$nqn\", \"namespace\": {\"bdev_name\": \"Malloc1\", \"nsid\": 2}}" >/dev/null
    if wait_line "E2E: waiting for namespace 2 to go away" 300; then
        rpc nvmf_subsystem_remove_ns "{\"nqn\": \"$nqn\", \"nsid\": 2}" >/dev/null
    fi
fi
qemu_status=0
wait "$qemu_pid" || qemu_status=$?
qemu_pid=''
sed -n '/nvmekit-e2e: init reached/,$p' "$work/guest.log"
[ "$qemu_status" -eq 0 ] && host_ok "QEMU exited with 0" || host_fail "QEMU: expected exit status 0, got $qemu_status"
result=$(sed -n 's/^E2E: result \([0-9]*\).*/\1/p' "$work/guest.log" | tail -n 1)
[ "$result" = 0 ] && host_ok "guest checks: 0 failed" || host_fail "guest checks: expected 0 failed, got ${result:-no result line}"
warnings=$(grep -E "^\[ *[0-9.]+\] nvme" "$work/guest.log" | grep -i -E "timeout|duplicate|fail|error|warn|abort" || true)
[ -z "$warnings" ] && host_ok "no NVMe warnings in the guest kernel log" || host_fail "NVMe warnings in the guest kernel log: $warnings"

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
kill -INT "$serve_pid"
wait "$serve_pid" || true
serve_pid=''
echo "---- e2e [hotplug]: nvmekit-serve log"
cat "$work/serve.log"
echo "e2e [hotplug]: $failures failed"
[ "$failures" -eq 0 ]
