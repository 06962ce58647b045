#!/usr/bin/env bash
# End-to-end test over NVMe/TCP: a Debian 6.1 guest (TCG) with the kernel's own nvme-tcp host
# reaches nvmekit-serve --tcp on the host's loopback through QEMU's user networking (the host's
# 127.0.0.1 is 10.0.2.2 to the guest) and checks from inside, with nvme-cli and fio
# (tests/e2e/guest-tcp.sh): nvme connect, the Identify fields a fabrics host reads, SMART,
# features (the Keep Alive Timer the host asked for), fio randrw with verify, Write Zeroes,
# Dataset Management, Flush, nvme reset, disconnect and reconnect, each without and with header
# and data digests, data written before a disconnect read back after the reconnect, LBA formats
# with metadata (MC 1: nvme format --lbaf=1 --ms=0 refused, --ms=1 taken, then back to --lbaf=0),
# and a host NQN the server does not admit (--host) refused. On the host it then checks that the guest
# kernel logged no warning, BUG or call trace, and that the server stops cleanly on SIGINT.
#
# One guest boot, one server with two subsystems at one listener: the command line's (for the
# host NQN --host names) and a second one added through the server's JSON-RPC socket (a malloc
# bdev, a subsystem for any host, its namespace and the same TCP listener), which the guest
# connects to at the same time as the first; the discovery log lists each host what it may reach.
#
#   tests/e2e/tcp.sh NVMEKIT_SERVE_BINARY
#
# Needs what tests/e2e/provision.sh provides (it sources $NVMEKIT_E2E_DIR/env.sh) and the guest
# kernel's modules (nvme-fabrics, nvme-tcp, crc32c_generic for the digests, e1000 for the NIC),
# which it takes from the kernel package provision.sh extracted (Debian 12 ships them
# uncompressed). Exit status 0 on success.
set -euo pipefail

serve=${1:?usage: tcp.sh NVMEKIT_SERVE_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/host-common.sh
source "$here/host-common.sh"
require_provisioned e2e-tcp
[ -x "$serve" ] || { echo "e2e-tcp: FAILED: no $serve"; exit 1; }

work=$(mktemp -d /tmp/nvmekit-e2e-tcp.XXXXXX)
serve_pid=
cleanup() {
    # shellcheck disable=SC2086 # an empty PID is no argument
    stop_processes $serve_pid
    rm -rf "$work"
}
trap cleanup EXIT
start=$SECONDS

port=$(free_port)
rpc_sock=$work/rpc.sock

nqn=nqn.2026-01.org.nvmekit:e2e-tcp
host_nqn=nqn.2014-08.org.nvmexpress:uuid:6e766d65-6b69-7400-0000-000000000001
host_id=6e766d65-6b69-7400-0000-000000000001
ns_mib=128
nqn2=nqn.2026-01.org.nvmekit:e2e-tcp-second
ns2_mib=64
mkdir -p "$work/overlay/e2e"
cp "$here/guest-tcp.sh" "$work/overlay/e2e/run"
cp "$here/guest-checks.sh" "$work/overlay/e2e/checks.sh"
copy_modules "$work/overlay/e2e/modules" crc32c_generic nvme-fabrics nvme-tcp e1000
cat >"$work/overlay/e2e/expected" <<EOF
PORT=$port
NQN=$nqn
HOST_NQN=$host_nqn
HOST_ID=$host_id
NS_BYTES=$((ns_mib << 20))
PORT2=$port
NQN2=$nqn2
NS2_BYTES=$((ns2_mib << 20))
EOF
bash "$here/provision.sh" pack "$work/overlay" "$work/initramfs.cpio.gz" >/dev/null

args=(--tcp "127.0.0.1:$port" --host "$host_nqn" --nqn "$nqn" --ram "${ns_mib}M" --queues 2 --log info
    -r "$rpc_sock")
echo "=== e2e-tcp: nvmekit-serve ${args[*]}"
"$serve" "${args[@]}" >"$work/serve.log" 2>&1 &
serve_pid=$!
ready=no
for _ in $(seq 1 50); do
    grep -q "over NVMe/TCP on" "$work/serve.log" && [ -S "$rpc_sock" ] && ready=yes && break
    sleep 0.1
done
[ "$ready" = yes ] || {
    echo "e2e-tcp: FAILED: nvmekit-serve did not log 'over NVMe/TCP on' and create $rpc_sock within 5 s"
    cat "$work/serve.log"
    exit 1
}
rpc bdev_malloc_create "{\"name\": \"Second\", \"num_blocks\": $((ns2_mib << 11)), \"block_size\": 512}" >/dev/null
rpc nvmf_create_subsystem "{\"nqn\": \"$nqn2\", \"allow_any_host\": true}" >/dev/null
rpc nvmf_subsystem_add_ns "{\"nqn\": \"$nqn2\", \"namespace\": {\"bdev_name\": \"Second\"}}" >/dev/null
rpc nvmf_subsystem_add_listener "{\"nqn\": \"$nqn2\", \"listen_address\": {\"trtype\": \"TCP\", \"adrfam\": \"IPv4\", \"traddr\": \"127.0.0.1\", \"trsvcid\": \"$port\"}}" >/dev/null

qemu_status=0
timeout 900 "$NVMEKIT_E2E_QEMU" "${NVMEKIT_E2E_QEMU_ARGS[@]}" -initrd "$work/initramfs.cpio.gz" \
    -append "console=ttyS0 loglevel=6" \
    -netdev user,id=net0 -device e1000,netdev=net0,romfile= \
    >"$work/guest.log" 2>&1 || qemu_status=$?
serve_status=0 signalled=yes
kill -INT "$serve_pid" 2>/dev/null || signalled=no
wait "$serve_pid" || serve_status=$?
serve_pid=

sed -n '/nvmekit-e2e: init reached/,$p' "$work/guest.log"
echo "---- e2e-tcp: nvmekit-serve log"
cat "$work/serve.log"
echo "---- e2e-tcp: host checks"
[ "$qemu_status" -eq 0 ] && host_ok "QEMU exited with 0" || host_fail "QEMU: expected exit status 0, got $qemu_status"
guest_result=$(sed -n 's/^E2E: result \([0-9]*\).*/\1/p' "$work/guest.log" | tail -n 1)
[ "$guest_result" = 0 ] && host_ok "guest checks: 0 failed" \
    || host_fail "guest checks: expected 0 failed, got ${guest_result:-no result line} ($(grep -c '^E2E FAIL' "$work/guest.log") FAIL lines)"
# The guest kernel's log: no warning, BUG or call trace anywhere, no NVMe complaint.
problems=$(matching -E "^\[ *[0-9.]+\] " "$work/guest.log" | matching -E "WARNING|BUG|Call Trace|RIP:")
[ -z "$problems" ] && host_ok "no WARNING, BUG or call trace in the guest kernel log" \
    || host_fail "the guest kernel logged: $problems"
# Until the guest tries the host NQN the server refuses, no NVMe complaint at all; from then
# on the refusal itself ("Connect for subsystem ... is not allowed" and the failed queue).
sed '/^E2E: refused host begins/,$d' "$work/guest.log" >"$work/before-refusal.log"
sed -n '/^E2E: refused host begins/,$p' "$work/guest.log" >"$work/refusal.log"
warnings=$(matching -E "^\[ *[0-9.]+\] nvme" "$work/before-refusal.log" \
    | matching -i -E "timeout|duplicate|missing|fail|error|warn|abort|clamping|not supported")
[ -z "$warnings" ] && host_ok "no NVMe warnings in the guest kernel log" \
    || host_fail "NVMe warnings in the guest kernel log: expected none, got: $warnings"
grep -q -E "^\[ *[0-9.]+\] nvme.*is not allowed" "$work/refusal.log" \
    && host_ok "the guest kernel logged the refused host's Connect as not allowed" \
    || host_fail "the guest kernel log: expected 'Connect for subsystem $nqn is not allowed' for the refused host"
[ "$signalled" = yes ] && [ "$serve_status" -eq 0 ] && grep -q '\] stopped$' "$work/serve.log" \
    && host_ok "nvmekit-serve stopped on SIGINT with status 0" \
    || host_fail "nvmekit-serve on SIGINT: expected exit status 0 and 'stopped', got status $serve_status$(
        [ "$signalled" = yes ] || echo ' (it had exited before the signal)')"
echo "=== e2e-tcp: $([ $failures -eq 0 ] && echo passed || echo "FAILED ($failures host checks)") in $((SECONDS - start)) s"
[ "$failures" -eq 0 ]
