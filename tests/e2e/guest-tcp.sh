#!/bin/sh
# The NVMe/TCP end-to-end test's checks inside the guest: packed into the initramfs as /e2e/run
# by tcp.sh and run by the guest's /init with busybox sh. /e2e/expected (written by tcp.sh):
#
#   PORT       the port nvmekit-serve listens on, on the host's loopback (10.0.2.2 here)
#   NQN        the subsystem NQN it serves
#   HOST_NQN, HOST_ID  the host identity it admits (--host)
#   NS_BYTES   the size in bytes of its one namespace (512-byte LBAs)
#   PORT2, NQN2, NS2_BYTES  a second subsystem (any host), where it listens, its namespace
#
# /e2e/modules holds the kernel modules the base initramfs lacks (NVMe/TCP, CRC32C, e1000), in
# load order in /e2e/modules/order. Each check prints "E2E ok: NAME ..." or "E2E FAIL: NAME:
# expected ..., got ..."; the last line is "E2E: result N", N the number of failed checks.
. /e2e/expected
. /e2e/checks.sh
# field KEY: the value of "KEY : value" in /tmp/out (nvme-cli's plain output), spaces trimmed
field() { sed -n "s/^$1 *: *//p" /tmp/out | head -n 1 | sed 's/ *$//'; }

while read -r module; do
    insmod "/e2e/modules/$module" || fail "insmod $module"
done </e2e/modules/order
ip link set lo up
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 \
    && ok "eth0 up (10.0.2.15)" || fail "eth0: could not configure it"
mkdir -p /etc/nvme
blocks=$((NS_BYTES / 512))
ctrl=
ns=

# connected [SUBNQN]: sets ctrl (nvmeN) and ns (/dev/nvmeXn1) to the live TCP controller of
# SUBNQN (default NQN), waiting for its namespace's block device; fails if none appears in 30 s
connected() {
    want=${1:-$NQN}
    ctrl=
    ns=
    for _ in $(seq 1 60); do
        for dir in /sys/class/nvme/nvme*; do
            [ -e "$dir/subsysnqn" ] || continue
            if [ "$(cat "$dir/subsysnqn")" = "$want" ] && [ "$(cat "$dir/transport")" = tcp ] \
                && [ "$(cat "$dir/state")" = live ]; then
                ctrl=${dir##*/}
            fi
        done
        if [ -n "$ctrl" ]; then
            for block in /sys/block/nvme*n1; do
                [ -e "$block" ] || continue
                case ${block##*/} in *c*) continue ;; esac
                [ "$(cat "$block/device/subsysnqn" 2>/dev/null || cat "$block/device/device/subsysnqn" 2>/dev/null)" = "$want" ] \
                    && ns=/dev/${block##*/}
            done
            [ -n "$ns" ] && [ -b "$ns" ] && return 0
        fi
        sleep 0.5
    done
    return 1
}

# session LABEL CONNECT_OPTIONS...: connect, the checks, disconnect
session() {
    label=$1
    shift
    echo "E2E: session $label"
    run "$label: nvme connect" nvme connect -t tcp -a 10.0.2.2 -s "$PORT" -n "$NQN" --hostnqn="$HOST_NQN" \
        --hostid="$HOST_ID" "$@"
    if ! connected; then
        fail "$label: no live NVMe/TCP controller of $NQN with a namespace after nvme connect"
        dmesg | tail -n 20
        return
    fi
    ok "$label: $ctrl live, namespace $ns"
    dev=/dev/$ctrl
    expect "$label: transport address" "traddr=10.0.2.2,trsvcid=$PORT" \
        "$(cut -d, -f1-2 "/sys/class/nvme/$ctrl/address")"

    run "$label: id-ctrl" nvme id-ctrl "$dev"
    expect "$label: id-ctrl subnqn" "$NQN" "$(field subnqn)"
    expect "$label: id-ctrl cntlid (as Connect returned it)" "$(dec "$(cat "/sys/class/nvme/$ctrl/cntlid")")" \
        "$(dec "$(field cntlid)")"
    expect "$label: id-ctrl cntrltype (I/O controller)" 1 "$(dec "$(field cntrltype)")"
    expect "$label: id-ctrl icdoff" 0 "$(dec "$(field icdoff)")"
    expect "$label: id-ctrl iorcsz" 1 "$(dec "$(field iorcsz)")"
    [ "$(dec "$(field ioccsz)")" -ge 4 ] && ok "$label: id-ctrl ioccsz $(field ioccsz) (>= 4)" \
        || fail "$label: id-ctrl ioccsz: expected at least 4, got $(field ioccsz)"
    [ "$(dec "$(field kas)")" -gt 0 ] && ok "$label: id-ctrl kas $(field kas)" \
        || fail "$label: id-ctrl kas: expected non-zero, got $(field kas)"
    [ $(($(dec "$(field sgls)") & 3)) -ne 0 ] && ok "$label: id-ctrl sgls $(field sgls) (SGLs supported)" \
        || fail "$label: id-ctrl sgls: expected bits 1:0 non-zero, got $(field sgls)"
    run "$label: id-ns" nvme id-ns "$ns"
    expect "$label: id-ns nsze" "$blocks" "$(dec "$(field nsze)")"
    run "$label: smart-log" nvme smart-log "$dev"
    # Keep Alive Timer (FID 0Fh): the KATO the host gave in Connect (nvme connect's default 5 s)
    run "$label: get-feature keep alive timer" nvme get-feature "$dev" -f 0x0f
    value=$(sed -n 's/.*value: *\(0x[0-9a-fA-F]*\|[0-9]*\).*/\1/p' /tmp/out | head -n 1)
    expect "$label: Keep Alive Timer (ms)" 5000 "$(dec "${value:-0}")"
    run "$label: get-feature number of queues" nvme get-feature "$dev" -f 0x07

    fio --name=verify --ioengine=libaio --direct=1 --rw=randrw --bs=4k --bsrange=512-64k --iodepth=16 \
        --filename="$ns" --size=16M --verify=crc32c --verify_fatal=1 >/tmp/fio.out 2>&1 \
        && ok "$label: fio randrw 512 B-64 KiB, verify crc32c" \
        || { fail "$label: fio randrw with verify"; cat /tmp/fio.out; }

    # Write Zeroes over written blocks: they read back as zeroes
    zero_lba=$((64 << 11)) # 64 MiB, beyond fio's region
    dd if=/dev/urandom of=/tmp/noise bs=4096 count=4 2>/dev/null
    run "$label: write noise" dd if=/tmp/noise of="$ns" bs=4096 seek=$((zero_lba / 8)) count=4 oflag=direct
    run "$label: write-zeroes" nvme write-zeroes "$ns" -s $zero_lba -c 31
    # A failed read must not pass for zeroes: the read must succeed and return every byte.
    rm -f /tmp/zeroes
    if dd if="$ns" of=/tmp/zeroes bs=4096 skip=$((zero_lba / 8)) count=4 iflag=direct 2>/tmp/out; then
        expect "$label: bytes read after write-zeroes" 16384 "$(wc -c </tmp/zeroes)"
        expect "$label: non-zero bytes after write-zeroes" 0 "$(tr -d '\0' </tmp/zeroes | wc -c)"
    else
        fail "$label: read after write-zeroes: $(cat /tmp/out)"
    fi
    run "$label: dsm deallocate" nvme dsm "$ns" -d -s $((zero_lba + 64)) -b 64
    run "$label: flush" nvme flush "$ns"

    # What a previous session left for this one, then this session's own mark at the same place
    mark_lba=$((96 << 11))
    # (/tmp/mark.back removed first: a read that fails must not leave an earlier read to compare)
    if [ -f /tmp/mark ]; then
        rm -f /tmp/mark.back
        dd if="$ns" of=/tmp/mark.back bs=4096 skip=$((mark_lba / 8)) count=16 iflag=direct 2>/dev/null \
            && cmp /tmp/mark /tmp/mark.back >/dev/null 2>&1 && ok "$label: the previous session's data read back" \
            || fail "$label: expected the previous session's 64 KiB at LBA $mark_lba, got other data or a failed read"
    fi
    dd if=/dev/urandom of=/tmp/mark bs=4096 count=16 2>/dev/null
    run "$label: write mark" dd if=/tmp/mark of="$ns" bs=4096 seek=$((mark_lba / 8)) count=16 oflag=direct

    run "$label: nvme reset" nvme reset "$dev"
    if connected; then
        ok "$label: $ctrl live again after reset"
        rm -f /tmp/mark.back
        dd if="$ns" of=/tmp/mark.back bs=4096 skip=$((mark_lba / 8)) count=16 iflag=direct 2>/dev/null \
            && cmp /tmp/mark /tmp/mark.back >/dev/null 2>&1 && ok "$label: data written before the reset read back" \
            || fail "$label: expected the 64 KiB written before the reset at LBA $mark_lba, got other data or a failed read"
        fio --name=after-reset --ioengine=libaio --direct=1 --rw=randrw --bs=4k --iodepth=8 \
            --filename="$ns" --size=4M --offset=32M --verify=crc32c --verify_fatal=1 >/tmp/fio.out 2>&1 \
            && ok "$label: fio after reset" || { fail "$label: fio after reset"; cat /tmp/fio.out; }
    else
        fail "$label: $ctrl not live within 30 s of nvme reset"
    fi
    run "$label: nvme disconnect" nvme disconnect -n "$NQN"
    sleep 1
    [ ! -e "/sys/class/nvme/$ctrl" ] && ok "$label: $ctrl gone after disconnect" \
        || fail "$label: $ctrl still present after nvme disconnect"
}

# json_string KEY FILE [N]: the Nth (default first) string value of "KEY" in nvme-cli's JSON
json_string() { sed -n "s/.*\"$1\" *: *\"\([^\"]*\)\".*/\1/p" "$2" | sed -n "${3:-1}p"; }

# The discovery controller: first the discovery subsystem's own entry (SUBTYPE 3, "current
# discovery subsystem", as Linux's nvmet lists it), then one entry per subsystem at the listener
# (which the server names by the address it listens on, the host's 127.0.0.1), the first
# subsystem's first
echo "E2E: discovery"
run "nvme discover" nvme discover -t tcp -a 10.0.2.2 -s "$PORT" --hostnqn="$HOST_NQN" --hostid="$HOST_ID" -o json
cp /tmp/out /tmp/discover.json
cat /tmp/discover.json
listed=2
[ "$PORT2" = "$PORT" ] || listed=1
expect "discover: entries" $((listed + 1)) "$(grep -c '"subnqn"' /tmp/discover.json)"
expect "discover: the discovery subsystem's subnqn" nqn.2014-08.org.nvmexpress.discovery \
    "$(json_string subnqn /tmp/discover.json)"
expect "discover: subnqn" "$NQN" "$(json_string subnqn /tmp/discover.json 2)"
expect "discover: trtype" tcp "$(json_string trtype /tmp/discover.json)"
expect "discover: adrfam" ipv4 "$(json_string adrfam /tmp/discover.json)"
expect "discover: trsvcid" "$PORT" "$(json_string trsvcid /tmp/discover.json)"
expect "discover: traddr" 127.0.0.1 "$(json_string traddr /tmp/discover.json)"
expect "controllers after nvme discover (it disconnects)" 0 "$(ls /sys/class/nvme 2>/dev/null | wc -l)"

session plain
session digests --hdr-digest --data-digest
# The digests were granted: the kernel reports them per queue only in debugfs, so the
# digest session's Identify and data checks passing over a connection it asked them for is
# the check; a target that refused them fails nvme connect.
session again

# LBA formats with metadata over NVMe/TCP: a capsule has no metadata pointer, so Identify
# Namespace reports metadata in an extended LBA only (MC 01b), nvme format --lbaf=1 with
# nvme-cli's default --ms=0 (a separate metadata buffer) is Invalid Format, and --ms=1 (the 8
# bytes at the end of each 512-byte block) formats the namespace. The Linux host gives a namespace
# with metadata it cannot carry a capacity of 0; the format back to LBAF0 restores it, and the
# checks after this run on that namespace (its size checked again below).
echo "E2E: LBA formats with metadata"
run "formats: nvme connect" nvme connect -t tcp -a 10.0.2.2 -s "$PORT" -n "$NQN" --hostnqn="$HOST_NQN" \
    --hostid="$HOST_ID"
if connected; then
    run "formats: id-ns" nvme id-ns "$ns"
    expect "formats: id-ns mc (extended LBA only)" 1 "$(dec "$(field mc)")"
    if nvme format "$ns" --lbaf=1 --ms=0 --force >/tmp/out 2>&1; then
        fail "formats: format --lbaf=1 --ms=0: expected Invalid Format, got success"
    elif grep -q -i -E "invalid format|0x4?10a" /tmp/out; then
        ok "formats: format --lbaf=1 --ms=0 refused: $(grep -i -m1 -E "invalid format|0x4?10a" /tmp/out)"
    else
        fail "formats: format --lbaf=1 --ms=0: expected Invalid Format, got: $(tr '\n' ' ' </tmp/out)"
    fi
    run "formats: id-ns after the refused format" nvme id-ns "$ns"
    expect "formats: flbas after the refused format" 0 "$(dec "$(field flbas)")"
    run "formats: format --lbaf=1 --ms=1" nvme format "$ns" --lbaf=1 --ms=1 --force
    run "formats: id-ns after format --lbaf=1 --ms=1" nvme id-ns "$ns"
    expect "formats: flbas after format --lbaf=1 --ms=1 (LBAF1, extended LBA)" 17 "$(dec "$(field flbas)")"
    expect "formats: nsze after format --lbaf=1 --ms=1 (520-byte blocks)" "$((NS_BYTES / 520))" \
        "$(dec "$(field nsze)")"
    run "formats: format back to --lbaf=0" nvme format "$ns" --lbaf=0 --force
    run "formats: id-ns after format back" nvme id-ns "$ns"
    expect "formats: flbas after format back" 0 "$(dec "$(field flbas)")"
    expect "formats: nsze after format back" "$blocks" "$(dec "$(field nsze)")"
    for _ in $(seq 1 20); do [ "$(blockdev --getsize64 "$ns")" = "$NS_BYTES" ] && break; sleep 0.5; done
    expect "formats: $ns size after format back" "$NS_BYTES" "$(blockdev --getsize64 "$ns")"
    dd if=/dev/urandom of=/tmp/formats bs=4096 count=16 2>/dev/null
    run "formats: write after format back" dd if=/tmp/formats of="$ns" bs=4096 seek=256 count=16 oflag=direct
    rm -f /tmp/formats.back
    dd if="$ns" of=/tmp/formats.back bs=4096 skip=256 count=16 iflag=direct 2>/dev/null \
        && cmp /tmp/formats /tmp/formats.back >/dev/null 2>&1 && ok "formats: data read back after format back" \
        || fail "formats: expected the 64 KiB written after the format back, got other data or a failed read"
else
    fail "formats: no live NVMe/TCP controller of $NQN with a namespace after nvme connect"
fi
run "formats: nvme disconnect" nvme disconnect -n "$NQN"
sleep 1

# Two subsystems at once: each controller with its own namespace, fio verified
# on both together, then both disconnected
echo "E2E: two subsystems"
run "two: nvme connect $NQN" nvme connect -t tcp -a 10.0.2.2 -s "$PORT" -n "$NQN" --hostnqn="$HOST_NQN" \
    --hostid="$HOST_ID"
run "two: nvme connect $NQN2" nvme connect -t tcp -a 10.0.2.2 -s "$PORT2" -n "$NQN2" --hostnqn="$HOST_NQN" \
    --hostid="$HOST_ID"
if connected "$NQN" && first_ns=$ns && connected "$NQN2" && second_ns=$ns; then
    ok "two: $first_ns ($NQN) and $second_ns ($NQN2) live"
    expect "two: $second_ns size" "$NS2_BYTES" "$(blockdev --getsize64 "$second_ns")"
    expect "two: $first_ns size" "$NS_BYTES" "$(blockdev --getsize64 "$first_ns")"
    # Idle for longer than the 5 s KATO: only the host's Keep Alive commands keep the
    # associations (an expiry would end them and the host would start error recovery)
    sleep 8
    expect "two: live controllers after 8 s idle" 2 "$(grep -l live /sys/class/nvme/nvme*/state | wc -l)"
    fio --ioengine=libaio --direct=1 --rw=randrw --bs=4k --iodepth=8 --size=8M --verify=crc32c \
        --verify_fatal=1 --name=first --filename="$first_ns" --name=second --filename="$second_ns" \
        >/tmp/fio.out 2>&1 && ok "two: fio randrw with verify on both at once" \
        || { fail "two: fio on both"; cat /tmp/fio.out; }
else
    fail "two: expected live controllers with namespaces of $NQN and $NQN2"
fi
run "two: nvme disconnect-all" nvme disconnect-all
sleep 1
expect "two: controllers after disconnect-all" 0 "$(ls /sys/class/nvme 2>/dev/null | wc -l)"

# A host NQN the server does not admit: Connect Invalid Host, nvme connect fails, no controller
echo "E2E: refused host begins"
if nvme connect -t tcp -a 10.0.2.2 -s "$PORT" -n "$NQN" \
    --hostnqn=nqn.2014-08.org.nvmexpress:uuid:6e766d65-6b69-7400-0000-0000000000ff \
    --hostid=6e766d65-6b69-7400-0000-0000000000ff >/tmp/out 2>&1; then
    fail "refused host: nvme connect succeeded"
    nvme disconnect -n "$NQN" >/dev/null 2>&1
else
    ok "refused host: nvme connect failed ($(tr '\n' ' ' </tmp/out))"
fi
remaining=$(ls /sys/class/nvme 2>/dev/null | wc -l)
expect "controllers after the refused connect" 0 "$remaining"
nvme discover -t tcp -a 10.0.2.2 -s "$PORT" \
    --hostnqn=nqn.2014-08.org.nvmexpress:uuid:6e766d65-6b69-7400-0000-0000000000ff \
    --hostid=6e766d65-6b69-7400-0000-0000000000ff -o json >/tmp/out 2>&1
cat /tmp/out
# It may still reach the discovery controller, whose log then lists only the subsystem for any host
# (after the discovery subsystem's own entry)
if grep -q -E "genctr|No discovery log entries" /tmp/out; then
    expect "refused host: discovery log entries" "$listed" "$(grep -c '"subnqn"' /tmp/out)"
    [ "$listed" = 1 ] || expect "refused host: discovered subnqn" "$NQN2" "$(json_string subnqn /tmp/out 2)"
else
    fail "refused host: nvme discover: expected a discovery log, got: $(tr '\n' ' ' </tmp/out)"
fi

echo "E2E: kernel log"
dmesg | grep -i -E "nvme|warn|bug|call trace"
echo "E2E: result $failures"
[ "$failures" -eq 0 ]
