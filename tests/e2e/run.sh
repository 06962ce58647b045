#!/usr/bin/env bash
# End-to-end test: a Debian 6.1 guest (TCG) boots against nvmekit-serve over vfio-user and checks
# from inside that the stock nvme driver binds and that nvme-cli and fio work: id-ctrl, id-ns,
# smart-log, error-log, get-feature for every supported feature, a multi-job verified fio random
# read/write on several queues, nvme reset, and a clean power-off (the server logs CC.SHN and
# CSTS.SHST complete). Fails on any NVMe warning in the guest's kernel log.
#
#   tests/e2e/run.sh NVMEKIT_SERVE_BINARY
#
# Needs what tests/e2e/provision.sh provides (it sources $NVMEKIT_E2E_DIR/env.sh); cmake/test.sh
# provisions before it runs this. Exit status 0 on success, 1 on a failed check or when the
# provisioned files are missing.
set -euo pipefail

serve=${1:?usage: run.sh NVMEKIT_SERVE_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
e2e_dir=${NVMEKIT_E2E_DIR:-/var/tmp/nvmekit-e2e}
missing=$(bash "$here/provision.sh" check 2>&1) || {
    echo "e2e: FAILED: not provisioned (run: bash tests/e2e/provision.sh, as root); missing:"
    echo "$missing" | sed 's/^/  /'
    exit 1
}
# shellcheck disable=SC1091
source "$e2e_dir/env.sh"

work=$(mktemp -d /tmp/nvmekit-e2e.XXXXXX)
serve_pid=
cleanup() {
    if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
start=$SECONDS

# The guest's test script, packed into the initramfs as /e2e/run.
mkdir -p "$work/overlay/e2e"
cat >"$work/overlay/e2e/run" <<'GUEST'
#!/bin/sh
fail=0
check() { # check NAME COMMAND...: runs it, records a failure
    name=$1; shift
    if "$@" >/tmp/out 2>&1; then echo "E2E ok: $name"; else echo "E2E FAIL: $name"; cat /tmp/out; fail=1; fi
}
for i in $(seq 1 20); do [ -e /dev/nvme0n2 ] && break; sleep 1; done
echo "E2E: nvme list"
nvme list
check id-ctrl nvme id-ctrl /dev/nvme0
check id-ns-1 nvme id-ns /dev/nvme0n1
check id-ns-2 nvme id-ns /dev/nvme0n2
check ns-descs nvme ns-descs /dev/nvme0n1
check smart-log nvme smart-log /dev/nvme0
check error-log nvme error-log /dev/nvme0 -e 8
check fw-log nvme fw-log /dev/nvme0
check effects-log nvme effects-log /dev/nvme0
for f in 1 2 4 5 6 7 8 10 11 14 15 22; do
    for sel in 0 1 2 3; do check "get-feature $f sel $sel" nvme get-feature /dev/nvme0 -f $f -s $sel; done
done
check "get-feature 9 (vector 1)" nvme get-feature /dev/nvme0 -f 9 --cdw11=1
echo "E2E: I/O queues: $(grep -c nvme /proc/interrupts) interrupt lines"
echo "E2E: fio"
fio --name=verify --ioengine=libaio --direct=1 --rw=randrw --bs=4k --iodepth=16 --numjobs=2 \
    --filename=/dev/nvme0n1 --size=32M --offset_increment=64M --verify=crc32c --verify_fatal=1 \
    --cpus_allowed_policy=split --group_reporting >/tmp/fio.out 2>&1 && echo "E2E ok: fio ram" || { echo "E2E FAIL: fio ram"; fail=1; }
cat /tmp/fio.out
fio --name=file --ioengine=libaio --direct=1 --rw=randwrite --bs=16k --iodepth=8 --filename=/dev/nvme0n2 \
    --size=16M --verify=md5 --verify_fatal=1 >/tmp/fio2.out 2>&1 && echo "E2E ok: fio file" || { echo "E2E FAIL: fio file"; cat /tmp/fio2.out; fail=1; }
check reset nvme reset /dev/nvme0
for i in $(seq 1 20); do [ -e /dev/nvme0n1 ] && break; sleep 1; done
check "read after reset" dd if=/dev/nvme0n1 of=/dev/null bs=1M count=8 iflag=direct
check "id-ctrl after reset" nvme id-ctrl /dev/nvme0
echo "E2E: kernel log"
dmesg | grep -i nvme
echo "E2E: result $fail"
exit $fail
GUEST
bash "$here/provision.sh" pack "$work/overlay" "$work/initramfs.cpio.gz" >/dev/null

# The device: a RAM namespace and a file namespace.
truncate -s 64M "$work/disk.img"
"$serve" --vfio-user "$work/nvme.sock" --ram 256M --file "$work/disk.img" --queues 8 --queue-depth 1024 --log info >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 50); do [ -S "$work/nvme.sock" ] && break; sleep 0.1; done

set +e
timeout 600 "$NVMEKIT_E2E_QEMU" "${NVMEKIT_E2E_QEMU_ARGS[@]}" -initrd "$work/initramfs.cpio.gz" \
    -append "console=ttyS0 loglevel=6" \
    -device "{\"driver\":\"vfio-user-pci\",\"socket\":{\"path\":\"$work/nvme.sock\",\"type\":\"unix\"}}" \
    >"$work/guest.log" 2>&1
qemu_status=$?
set -e
kill -INT "$serve_pid"
wait "$serve_pid" || true
serve_pid=

status=0
cat "$work/guest.log" | sed -n '/nvmekit-e2e: init reached/,$p'
echo "---- nvmekit-serve"
cat "$work/serve.log"
echo "----"
[ "$qemu_status" -eq 0 ] || { echo "e2e: QEMU exited with $qemu_status"; status=1; }
grep -q "E2E: result 0" "$work/guest.log" || { echo "e2e: a check failed in the guest"; status=1; }
# The guest kernel's NVMe messages (QEMU's own console warnings are not the guest's).
if grep -E "^\[ *[0-9.]+\] nvme" "$work/guest.log" | grep -i -E "timeout|duplicate|missing|fail|error|warn|abort"; then
    echo "e2e: NVMe warnings in the guest kernel log"
    status=1
fi
grep -q "CC.SHN = normal shutdown; CSTS.SHST = complete" "$work/serve.log" ||
    { echo "e2e: no clean shutdown (CC.SHN normal, SHST complete) in the server log"; status=1; }
echo "e2e: $([ $status -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
exit $status
