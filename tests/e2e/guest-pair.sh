#!/bin/sh
# The end-to-end test's checks for two nvmekit-serve instances attached to one guest, both
# started with default identities: packed as /e2e/run by run.sh (configuration "pair"), run by
# the guest's /init with busybox sh. /e2e/expected (written by run.sh from the servers' logs):
#
#   A_BYTES, B_BYTES     the size of each server's one RAM namespace (they differ)
#   A_NQN, B_NQN         the subsystem NQN each server derived
#   A_SERIAL, B_SERIAL   the serial number each server derived
#   A_CNTLID, B_CNTLID   the controller ID each server derived (decimal)
#
# The driver probes the two functions asynchronously, so which one is nvme0 is not fixed: each
# controller is matched to its server by its serial number. Each check prints "E2E ok: ..." or
# "E2E FAIL: NAME: expected ..., got ..."; the last line is "E2E: result N" (N failed checks).
. /e2e/expected
. /e2e/checks.sh
# field KEY FILE: the value of "KEY : value" in nvme-cli's plain output, spaces trimmed
field() { sed -n "s/^$1 *: *//p" "$2" | head -n 1 | sed 's/ *$//'; }

for _ in $(seq 1 60); do [ -e /dev/nvme0n1 ] && [ -e /dev/nvme1n1 ] && break; sleep 1; done
nvme list | tee /tmp/list
expect "nvme list: namespaces" 2 "$(grep -c '^/dev/nvme[0-9]n1 ' /tmp/list)"
nvme list-subsys | tee /tmp/subsys
# Two subsystems, one controller each (one subsystem would mean the NQNs collided)
expect "nvme list-subsys: subsystem NQNs" "$(printf '%s\n' "$A_NQN" "$B_NQN" | sort | tr '\n' ' ')" \
    "$(sed -n 's/.*NQN=\([^ ]*\).*/\1/p' /tmp/subsys | sort | tr '\n' ' ')"

seen=''
for c in nvme0 nvme1; do
    if ! nvme id-ctrl /dev/$c >/tmp/id-$c 2>&1; then
        fail "id-ctrl /dev/$c: $(cat /tmp/id-$c)"
        continue
    fi
    serial=$(field sn /tmp/id-$c)
    case $serial in
        "$A_SERIAL") name=A nqn=$A_NQN cntlid=$A_CNTLID bytes=$A_BYTES ;;
        "$B_SERIAL") name=B nqn=$B_NQN cntlid=$B_CNTLID bytes=$B_BYTES ;;
        *)
            fail "$c serial: expected $A_SERIAL or $B_SERIAL, got '$serial'"
            continue
            ;;
    esac
    ok "$c is server $name (serial $serial)"
    seen="$seen$name"
    expect "$c (server $name) subnqn" "$nqn" "$(field subnqn /tmp/id-$c)"
    expect "$c (server $name) cntlid" "$cntlid" "$(printf '%d' "$(field cntlid /tmp/id-$c)")"
    expect "$c (server $name) nvme list size of ${c}n1 (512-byte sectors)" "$((bytes / 512))" \
        "$(cat /sys/block/${c}n1/size)"
    nvme id-ns /dev/${c}n1 >/tmp/ns-$c 2>&1 || fail "id-ns /dev/${c}n1: $(cat /tmp/ns-$c)"
    echo "E2E: ${c}n1 nguid $(field nguid /tmp/ns-$c), eui64 $(field eui64 /tmp/ns-$c)"
    # A different pattern to each namespace; read back once both are written, so that two
    # devices answering from one store would show.
    dd if=/dev/urandom of=/tmp/pattern-$c bs=4096 count=16 2>/dev/null
    dd if=/tmp/pattern-$c of=/dev/${c}n1 bs=4096 seek=100 count=16 oflag=direct conv=fsync 2>/tmp/out \
        || fail "write to /dev/${c}n1: $(cat /tmp/out)"
done
expect "servers found (by serial)" "AB" "$(echo "$seen" | fold -w1 | sort | tr -d '\n')"
expect "NGUIDs of nvme0n1 and nvme1n1 differ" "different" \
    "$([ "$(field nguid /tmp/ns-nvme0)" != "$(field nguid /tmp/ns-nvme1)" ] && echo different || echo "both $(field nguid /tmp/ns-nvme0)")"
expect "EUI-64s of nvme0n1 and nvme1n1 differ" "different" \
    "$([ "$(field eui64 /tmp/ns-nvme0)" != "$(field eui64 /tmp/ns-nvme1)" ] && echo different || echo "both $(field eui64 /tmp/ns-nvme0)")"
for c in nvme0 nvme1; do
    rm -f /tmp/back /tmp/cmp /tmp/out
    if dd if=/dev/${c}n1 of=/tmp/back bs=4096 skip=100 count=16 iflag=direct 2>/tmp/out \
        && cmp /tmp/pattern-$c /tmp/back >/tmp/cmp 2>&1; then
        ok "${c}n1: the 64 KiB written to it read back"
    else
        fail "${c}n1 at 4 KiB block 100: expected the pattern written to it, got: $(cat /tmp/cmp /tmp/out)"
    fi
done
echo "E2E: kernel log"
dmesg | grep -i nvme
echo "E2E: result $failures"
[ "$failures" -eq 0 ]
