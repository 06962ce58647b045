#!/bin/sh
# The end-to-end test's checks of a target built through JSON-RPC (hotplug.sh): packed as /e2e/run,
# run by the guest's /init with busybox sh. The controller starts with one namespace (NSID 1, a
# 64 MiB RAM bdev with the UUID in /e2e/expected); the host adds NSID 2 (a 32 MiB one) when the
# guest says "E2E: waiting for namespace 2 to appear", and removes it when it says "E2E: waiting for
# namespace 2 to go away". Each check prints "E2E ok: ..." or "E2E FAIL: ..."; the last line is
# "E2E: result N" (N failed checks).
#
# With TCP_PORT in /e2e/expected the guest reaches the same subsystem over NVMe/TCP instead:
# it loads the modules in /e2e/modules (in the order of /e2e/modules/order), brings up eth0 and
# connects to the host's loopback (10.0.2.2) on TCP_PORT; the checks are the same.
. /e2e/expected
. /e2e/checks.sh
field() { sed -n "s/^$1 *: *//p" "$2" | head -n 1 | sed 's/ *$//'; }
# wait_for TEST SECONDS: until the shell test holds
wait_for() {
    for _ in $(seq 1 "$2"); do eval "$1" && return 0; sleep 1; done
    return 1
}

if [ -n "${TCP_PORT:-}" ]; then
    while read -r module; do
        insmod "/e2e/modules/$module" || fail "insmod $module"
    done </e2e/modules/order
    ip link set lo up
    ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 \
        || fail "eth0: could not configure it"
    mkdir -p /etc/nvme
    nvme connect -t tcp -a 10.0.2.2 -s "$TCP_PORT" -n "$NQN" >/tmp/out 2>&1 \
        && ok "nvme connect over NVMe/TCP" || fail "nvme connect: $(cat /tmp/out)"
    expected_transport=tcp
    block=1000 # another guest may write to the same namespace meanwhile: not where it does
else
    expected_transport=pcie
    block=10
fi
wait_for '[ -e /dev/nvme0n1 ]' 60 || fail "no /dev/nvme0n1 after 60 s"
expect "transport" "$expected_transport" "$(cat /sys/class/nvme/nvme0/transport 2>/dev/null)"
nvme list | tee /tmp/list
expect "namespaces at boot" 1 "$(grep -c '^/dev/nvme0n[0-9]* ' /tmp/list)"
nvme id-ctrl /dev/nvme0 >/tmp/id 2>&1 || fail "id-ctrl: $(cat /tmp/id)"
expect "subnqn" "$NQN" "$(field subnqn /tmp/id)"
expect "serial" "$SERIAL" "$(field sn /tmp/id)"
nvme id-ns /dev/nvme0n1 >/tmp/ns1 2>&1 || fail "id-ns: $(cat /tmp/ns1)"
expect "nvme0n1 NGUID (the bdev's UUID)" "$NGUID" "$(field nguid /tmp/ns1)"
expect "nvme0n1 size (512-byte sectors)" $((64 << 11)) "$(cat /sys/block/nvme0n1/size)"

echo "E2E: waiting for namespace 2 to appear"
if wait_for '[ -e /dev/nvme0n2 ]' 120; then
    ok "namespace 2 appeared without a reboot"
    nvme list | tee /tmp/list
    expect "namespaces after nvmf_subsystem_add_ns" 2 "$(grep -c '^/dev/nvme0n[0-9]* ' /tmp/list)"
    expect "nvme0n2 size (512-byte sectors)" $((32 << 11)) "$(cat /sys/block/nvme0n2/size)"
    dd if=/dev/urandom of=/tmp/pattern bs=4096 count=16 2>/dev/null
    rm -f /tmp/back
    dd if=/tmp/pattern of=/dev/nvme0n2 bs=4096 seek="$block" count=16 oflag=direct conv=fsync 2>/tmp/out \
        && dd if=/dev/nvme0n2 of=/tmp/back bs=4096 skip="$block" count=16 iflag=direct 2>>/tmp/out \
        && cmp /tmp/pattern /tmp/back >>/tmp/out 2>&1 \
        && ok "nvme0n2: 64 KiB written and read back" || fail "nvme0n2 I/O: $(cat /tmp/out)"
else
    fail "namespace 2: expected /dev/nvme0n2 within 120 s of nvmf_subsystem_add_ns"
fi
echo "E2E: waiting for namespace 2 to go away"
if wait_for '[ ! -e /dev/nvme0n2 ]' 120; then
    ok "namespace 2 went without a reboot"
else
    fail "namespace 2: expected /dev/nvme0n2 gone within 120 s of nvmf_subsystem_remove_ns"
fi
nvme list | tee /tmp/list
expect "namespaces after nvmf_subsystem_remove_ns" 1 "$(grep -c '^/dev/nvme0n[0-9]* ' /tmp/list)"
if [ -n "${TCP_PORT:-}" ]; then
    nvme disconnect -n "$NQN" >/tmp/out 2>&1 && ok "nvme disconnect" || fail "nvme disconnect: $(cat /tmp/out)"
fi
echo "E2E: kernel log"
dmesg | grep -i nvme
echo "E2E: result $failures"
[ "$failures" -eq 0 ]
