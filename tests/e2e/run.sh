#!/usr/bin/env bash
# End-to-end test: a Debian 6.1 guest (TCG) boots against nvmekit-serve over vfio-user and checks
# from inside, with the stock nvme driver, nvme-cli and fio, the values and data the device
# returns (tests/e2e/guest.sh): Identify fields against the namespaces the server was given, the
# number of I/O queues, features read back after Set Features and after a reset, SMART counters
# against what fio moved, data written before a controller reset read back after it, an LBA
# format with metadata (nvme format --lbaf=1, metadata at MPTR) used and formatted back. On the
# host it then checks that the server stops cleanly on SIGINT, that the file namespace's backing
# file holds what the guest wrote, that the guest shut the controller down (CC.SHN, CSTS.SHST),
# and that the guest kernel logged no NVMe warning.
#
# It runs once per configuration named in NVMEKIT_E2E_CONFIGS (default "512 4k intx groups pair ovmf"):
#   512   a 256 MiB RAM namespace and a 64 MiB file namespace, 512-byte LBAs, 8 I/O queues offered,
#         1 GiB of NVM capacity (--capacity): nvme create-ns, attach-ns, list-ctrl, list-ns --all,
#         format, detach-ns, delete-ns, write-uncor, Get LBA Status and lba-status-log
#   4k    RAM namespaces of 256 MiB and 32 MiB and a 64 MiB file namespace, 4 KiB LBAs, 1 I/O queue,
#         the server built with its tracer (--trace --log debug: host mistakes printed, if any)
#   intx  as 512, the guest booted with pci=nomsi: INTx through the IO-APIC, one I/O queue
#   groups as 512, the server's I/O queues on 2 poll-group threads (--groups 2 --group-threads)
#         and BAR0's doorbells offered as shared memory (--mapped-doorbells), which QEMU maps
#   pair  two nvmekit-serve instances with default identities attached to one guest
#         (tests/e2e/guest-pair.sh): both controllers and namespaces present, with the identities
#         their servers derived; a server restarted on the same socket keeps its identity
#   ovmf  no kernel: OVMF (UEFI) boots with the vfio-user drive holding a GPT disk with a FAT EFI
#         system partition; its NVMe driver finds the namespace and the UEFI shell runs
#         startup.nsh from it, which prints a marker on the serial console and powers off
#
#   tests/e2e/run.sh NVMEKIT_SERVE_BINARY
#
# Needs what tests/e2e/provision.sh provides (it sources $NVMEKIT_E2E_DIR/env.sh); cmake/test.sh
# provisions before it runs this. Exit status 0 on success, 1 on a failed check or when the
# provisioned files are missing.
set -euo pipefail

serve=${1:?usage: run.sh NVMEKIT_SERVE_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
configs=${NVMEKIT_E2E_CONFIGS:-512 4k intx groups pair ovmf}
# shellcheck source=tests/e2e/host-common.sh
source "$here/host-common.sh"
require_provisioned e2e
[ -x "$serve" ] || { echo "e2e: FAILED: no $serve"; exit 1; }

work=$(mktemp -d /tmp/nvmekit-e2e.XXXXXX)
serve_pid=
serve_pids=()
cleanup() {
    # shellcheck disable=SC2086 # an empty serve_pid is no argument
    stop_processes $serve_pid "${serve_pids[@]}"
    rm -rf "$work"
}
trap cleanup EXIT
start=$SECONDS
failed_configs=()
# wait_for_socket PATH: up to 5 s for a server's socket
wait_for_socket() {
    for _ in $(seq 1 50); do [ -S "$1" ] && return 0; sleep 0.1; done
    return 1
}
# server_identity LOG: "NQN SERIAL CNTLID" as the server logged them. The server binds its
# socket before it logs, so the log is waited on (up to 5 s) for the identity line, which
# follows the "serving" line.
server_identity() {
    for _ in $(seq 1 50); do grep -q '\] identity: serial ' "$1" && break; sleep 0.1; done
    echo "$(sed -n 's/.*\] serving \([^ ]*\) on .*/\1/p' "$1" | head -n 1)" \
        "$(sed -n 's/.*\] identity: serial \([^,]*\), CNTLID \([0-9]*\),.*/\1 \2/p' "$1" | head -n 1)"
}
# QEMU's common arguments without the kernel (for a firmware boot), one a line
qemu_args_without_kernel() {
    local skip=0 arg
    for arg in "${NVMEKIT_E2E_QEMU_ARGS[@]}"; do
        if [ "$skip" -eq 1 ]; then skip=0; continue; fi
        if [ "$arg" = -kernel ]; then skip=1; continue; fi
        printf '%s\n' "$arg"
    done
}

# run_config NAME LBA_BYTES QUEUES NAMESPACES...: one guest boot against one server. Each
# namespace is ram:SIZE or file:SIZE (SIZE in MiB); one file namespace at most.
run_config() {
    local name=$1 lba_bytes=$2 queues=$3
    shift 3
    local dir=$work/$name config_start=$SECONDS
    mkdir -p "$dir/overlay/e2e"
    failures=0
    local args=(--vfio-user "$dir/nvme.sock" --queues "$queues" --queue-depth 1024 --log "${log_level:-info}")
    [ -n "${trace:-}" ] && args+=(--trace)
    # shellcheck disable=SC2206 # words on purpose: options added by the configuration
    [ -n "${serve_extra:-}" ] && args+=($serve_extra)
    local lba_format=0 max_namespaces=$# nvm_capacity=''
    [ "$lba_bytes" -eq 4096 ] && args+=(--4k) && lba_format=2
    if [ -n "${capacity_mib:-}" ]; then
        # Namespace Management: the server's default of 16 NSIDs with --capacity
        args+=(--capacity "${capacity_mib}M")
        nvm_capacity=$((capacity_mib << 20))
        max_namespaces=16
    fi
    local ns_bytes=() file_nsid='' nsid=1 spec mib
    for spec in "$@"; do
        mib=${spec#*:}
        ns_bytes+=($((mib << 20)))
        case $spec in
            ram:*) args+=(--ram "${mib}M") ;;
            file:*)
                truncate -s "${mib}M" "$dir/disk.img"
                args+=(--file "$dir/disk.img")
                file_nsid=$nsid
                ;;
        esac
        nsid=$((nsid + 1))
    done
    local pattern_offset=$((40 << 20)) pattern_bytes=$((64 << 10))

    # The guest's checks, what they expect, and a pattern only the host and the guest know.
    cp "$here/guest.sh" "$dir/overlay/e2e/run"
    cp "$here/guest-checks.sh" "$dir/overlay/e2e/checks.sh"
    head -c "$pattern_bytes" /dev/urandom >"$dir/overlay/e2e/pattern.bin"
    cat >"$dir/overlay/e2e/expected" <<EOF
NS_BYTES="${ns_bytes[*]}"
LBA_BYTES=$lba_bytes
SERVER_QUEUES=$queues
FILE_NSID=$file_nsid
PATTERN_OFFSET=$pattern_offset
PATTERN_BYTES=$pattern_bytes
INTERRUPTS=${interrupts:-msix}
LBA_FORMAT=$lba_format
MAX_NAMESPACES=$max_namespaces
NVM_CAPACITY=$nvm_capacity
EOF
    bash "$here/provision.sh" pack "$dir/overlay" "$dir/initramfs.cpio.gz" >/dev/null

    echo "=== e2e [$name]: nvmekit-serve ${args[*]}"
    "$serve" "${args[@]}" >"$dir/serve.log" 2>&1 &
    serve_pid=$!
    wait_for_socket "$dir/nvme.sock" || host_fail "nvmekit-serve: expected its socket $dir/nvme.sock within 5 s"

    local qemu_status=0 serve_status=0 signalled=yes
    timeout 900 "$NVMEKIT_E2E_QEMU" "${NVMEKIT_E2E_QEMU_ARGS[@]}" -initrd "$dir/initramfs.cpio.gz" \
        -append "console=ttyS0 loglevel=6${kernel_args:+ $kernel_args}" \
        -device "{\"driver\":\"vfio-user-pci\",\"socket\":{\"path\":\"$dir/nvme.sock\",\"type\":\"unix\"}}" \
        >"$dir/guest.log" 2>&1 || qemu_status=$?
    kill -INT "$serve_pid" 2>/dev/null || signalled=no
    wait "$serve_pid" || serve_status=$?
    serve_pid=

    sed -n '/nvmekit-e2e: init reached/,$p' "$dir/guest.log"
    echo "---- e2e [$name]: nvmekit-serve log"
    cat "$dir/serve.log"
    echo "---- e2e [$name]: host checks"
    [ "$qemu_status" -eq 0 ] && host_ok "QEMU exited with 0" || host_fail "QEMU: expected exit status 0, got $qemu_status"
    local guest_result
    guest_result=$(sed -n 's/^E2E: result \([0-9]*\).*/\1/p' "$dir/guest.log" | tail -n 1)
    [ "$guest_result" = 0 ] && host_ok "guest checks: 0 failed" \
        || host_fail "guest checks: expected 0 failed, got ${guest_result:-no result line} ($(grep -c '^E2E FAIL' "$dir/guest.log") FAIL lines)"
    # The guest kernel's NVMe messages (QEMU's own console warnings are not the guest's).
    local warnings
    warnings=$(matching -E "^\[ *[0-9.]+\] nvme" "$dir/guest.log" | matching -i -E "timeout|duplicate|missing|fail|error|warn|abort")
    [ -z "$warnings" ] && host_ok "no NVMe warnings in the guest kernel log" \
        || host_fail "NVMe warnings in the guest kernel log: expected none, got: $warnings"
    if [ -n "${trace:-}" ]; then
        # The guest's deliberate Invalid Command Opcode, as the tracer printed it
        grep -q "err_invalid_opcode qid=0 .*opcode=0xc8" "$dir/serve.log" \
            && host_ok "nvmekit-serve --trace logged err_invalid_opcode for admin opcode C8h" \
            || host_fail "nvmekit-serve --trace: expected an err_invalid_opcode line for opcode 0xc8 in serve.log"
    fi
    # An interrupt the kernel gave up on (spurious interrupts: a level left asserted)
    local irq_problems
    irq_problems=$(matching -E "^\[ *[0-9.]+\] .*(nobody cared|Disabling IRQ)" "$dir/guest.log")
    [ -z "$irq_problems" ] && host_ok "no disabled interrupt in the guest kernel log" \
        || host_fail "the guest kernel disabled an interrupt: expected no 'nobody cared', got: $irq_problems"
    grep -q "CC.SHN = normal shutdown; CSTS.SHST = complete" "$dir/serve.log" \
        && host_ok "clean shutdown (CC.SHN normal, CSTS.SHST complete) in the server log" \
        || host_fail "no 'CC.SHN = normal shutdown; CSTS.SHST = complete' in the server log"
    [ "$signalled" = yes ] && [ "$serve_status" -eq 0 ] && grep -q '\] stopped$' "$dir/serve.log" \
        && host_ok "nvmekit-serve stopped on SIGINT with status 0" \
        || host_fail "nvmekit-serve on SIGINT: expected exit status 0 and 'stopped', got status $serve_status$(
            [ "$signalled" = yes ] || echo ' (it had exited before the signal)')"
    if [[ "${serve_extra:-}" == *--mapped-doorbells* ]]; then
        grep -Eq ', [1-9][0-9]* doorbells from the mapped page' "$dir/serve.log" \
            && host_ok "the guest rang doorbells in the mapped page" \
            || host_fail "no doorbell came from the mapped page (QEMU did not map it?)"
    fi
    # The file namespace, read on the host after the server stopped: the pattern the guest wrote
    # at PATTERN_OFFSET, and nothing but zeroes right after it (the guest wrote nothing there).
    if [ -n "$file_nsid" ]; then
        local lba=$((pattern_offset / lba_bytes))
        dd if="$dir/disk.img" of="$dir/back.bin" bs=4096 skip=$((pattern_offset / 4096)) \
            count=$((pattern_bytes / 4096)) status=none
        if cmp "$dir/overlay/e2e/pattern.bin" "$dir/back.bin" >"$dir/cmp" 2>&1; then
            host_ok "disk.img (namespace $file_nsid) holds the guest's $pattern_bytes-byte pattern at LBA $lba (byte $pattern_offset)"
        else
            host_fail "disk.img (namespace $file_nsid) at LBA $lba (byte $pattern_offset): expected the guest's pattern, got: $(cat "$dir/cmp")"
        fi
        local after
        after=$(dd if="$dir/disk.img" bs=4096 skip=$(((pattern_offset + pattern_bytes) / 4096)) count=16 status=none \
            | tr -d '\0' | wc -c)
        [ "$after" -eq 0 ] && host_ok "disk.img: the 64 KiB after the pattern are zero" \
            || host_fail "disk.img: expected the 64 KiB after the pattern to be zero, got $after non-zero bytes"
        local size
        size=$(stat -c %s "$dir/disk.img")
        [ "$size" -eq "${ns_bytes[$((file_nsid - 1))]}" ] && host_ok "disk.img size unchanged ($size)" \
            || host_fail "disk.img size: expected ${ns_bytes[$((file_nsid - 1))]}, got $size"
    fi
    echo "=== e2e [$name]: $([ $failures -eq 0 ] && echo passed || echo "FAILED ($failures host checks)") in $((SECONDS - config_start)) s"
    [ "$failures" -eq 0 ] || failed_configs+=("$name")
}

# run_pair: two servers with default identities (a 64 MiB and a 32 MiB RAM namespace) attached to
# one guest, which finds both (guest-pair.sh); then server A restarted on its socket must derive
# the same identity again.
run_pair() {
    local dir=$work/pair config_start=$SECONDS
    mkdir -p "$dir/overlay/e2e"
    failures=0
    echo "=== e2e [pair]: nvmekit-serve --vfio-user $dir/a.sock --ram 64M and --vfio-user $dir/b.sock --ram 32M"
    "$serve" --vfio-user "$dir/a.sock" --ram 64M --queues 2 --log info >"$dir/serve-a.log" 2>&1 &
    serve_pids=($!)
    "$serve" --vfio-user "$dir/b.sock" --ram 32M --queues 2 --log info >"$dir/serve-b.log" 2>&1 &
    serve_pids+=($!)
    wait_for_socket "$dir/a.sock" && wait_for_socket "$dir/b.sock" || host_fail "the servers' sockets did not appear"
    local a b
    read -r -a a <<<"$(server_identity "$dir/serve-a.log")"
    read -r -a b <<<"$(server_identity "$dir/serve-b.log")"
    echo "e2e [pair]: server A: NQN ${a[0]:-?}, serial ${a[1]:-?}, CNTLID ${a[2]:-?}"
    echo "e2e [pair]: server B: NQN ${b[0]:-?}, serial ${b[1]:-?}, CNTLID ${b[2]:-?}"
    cp "$here/guest-pair.sh" "$dir/overlay/e2e/run"
    cp "$here/guest-checks.sh" "$dir/overlay/e2e/checks.sh"
    cat >"$dir/overlay/e2e/expected" <<EOF
A_BYTES=$((64 << 20))
B_BYTES=$((32 << 20))
A_NQN=${a[0]:-}
A_SERIAL=${a[1]:-}
A_CNTLID=${a[2]:-}
B_NQN=${b[0]:-}
B_SERIAL=${b[1]:-}
B_CNTLID=${b[2]:-}
EOF
    bash "$here/provision.sh" pack "$dir/overlay" "$dir/initramfs.cpio.gz" >/dev/null
    local qemu_status=0
    timeout 600 "$NVMEKIT_E2E_QEMU" "${NVMEKIT_E2E_QEMU_ARGS[@]}" -initrd "$dir/initramfs.cpio.gz" \
        -append "console=ttyS0 loglevel=6" \
        -device "{\"driver\":\"vfio-user-pci\",\"socket\":{\"path\":\"$dir/a.sock\",\"type\":\"unix\"}}" \
        -device "{\"driver\":\"vfio-user-pci\",\"socket\":{\"path\":\"$dir/b.sock\",\"type\":\"unix\"}}" \
        >"$dir/guest.log" 2>&1 || qemu_status=$?
    sed -n '/nvmekit-e2e: init reached/,$p' "$dir/guest.log"
    echo "---- e2e [pair]: host checks"
    stop_server "${serve_pids[0]}" "$dir/serve-a.log" "nvmekit-serve A"
    stop_server "${serve_pids[1]}" "$dir/serve-b.log" "nvmekit-serve B"
    serve_pids=()
    [ "$qemu_status" -eq 0 ] && host_ok "QEMU exited with 0" || host_fail "QEMU: expected exit status 0, got $qemu_status"
    local guest_result
    guest_result=$(sed -n 's/^E2E: result \([0-9]*\).*/\1/p' "$dir/guest.log" | tail -n 1)
    [ "$guest_result" = 0 ] && host_ok "guest checks: 0 failed" \
        || host_fail "guest checks: expected 0 failed, got ${guest_result:-no result line} ($(grep -c '^E2E FAIL' "$dir/guest.log") FAIL lines)"
    local warnings
    warnings=$(matching -E "^\[ *[0-9.]+\] nvme" "$dir/guest.log" | matching -i -E "timeout|duplicate|missing|fail|error|warn|abort")
    [ -z "$warnings" ] && host_ok "no NVMe warnings in the guest kernel log" \
        || host_fail "NVMe warnings in the guest kernel log: expected none, got: $warnings"
    local log
    for log in serve-a serve-b; do
        grep -q "CC.SHN = normal shutdown; CSTS.SHST = complete" "$dir/$log.log" \
            && host_ok "clean shutdown (CC.SHN normal, CSTS.SHST complete) in the $log log" \
            || host_fail "no 'CC.SHN = normal shutdown; CSTS.SHST = complete' in the $log log"
    done
    [ "${#a[@]}" -eq 3 ] && [ "${#b[@]}" -eq 3 ] && [ "${a[0]}" != "${b[0]}" ] && [ "${a[1]}" != "${b[1]}" ] \
        && [ "${a[2]}" != "${b[2]}" ] \
        && host_ok "servers A and B derived different NQNs, serials and CNTLIDs" \
        || host_fail "servers A and B: expected different NQNs, serials and CNTLIDs, got A: ${a[*]}; B: ${b[*]}"
    # Server A again on the same socket: the same identity.
    "$serve" --vfio-user "$dir/a.sock" --ram 64M --log info >"$dir/serve-a2.log" 2>&1 &
    serve_pids=($!)
    wait_for_socket "$dir/a.sock" || host_fail "server A restarted: expected its socket $dir/a.sock within 5 s"
    local again
    again=$(server_identity "$dir/serve-a2.log")
    stop_server "${serve_pids[0]}" "$dir/serve-a2.log" "nvmekit-serve A (restarted)"
    serve_pids=()
    [ "$again" = "${a[*]}" ] && host_ok "server A restarted on its socket: the same identity ($again)" \
        || host_fail "server A restarted on its socket: expected the identity ${a[*]}, got $again"
    echo "=== e2e [pair]: $([ $failures -eq 0 ] && echo passed || echo "FAILED ($failures host checks)") in $((SECONDS - config_start)) s"
    [ "$failures" -eq 0 ] || failed_configs+=(pair)
}

# run_ovmf: a UEFI boot. The drive is a file namespace holding a GPT disk whose one partition is
# a FAT EFI system partition (built with sfdisk and mtools, no mount) with startup.nsh; OVMF's
# NVMe driver finds the namespace, the UEFI shell runs startup.nsh, which prints a marker with a
# token of this run and powers off (reset -s).
run_ovmf() {
    local dir=$work/ovmf config_start=$SECONDS
    mkdir -p "$dir"
    failures=0
    local token
    token=$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
    local marker="nvmekit-ovmf-marker $token"
    truncate -s 64M "$dir/esp.img"
    printf 'label: gpt\nstart=2048, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name="EFI system partition"\n' \
        | sfdisk -q "$dir/esp.img"
    local start sectors
    read -r start sectors <<<"$(sfdisk -d "$dir/esp.img" | sed -n 's/.*start= *\([0-9]*\), *size= *\([0-9]*\).*/\1 \2/p')"
    # The shell echoes script lines unless told not to: with echo off, the marker line appears
    # only as the script's output.
    printf '@echo -off\r\necho %s\r\nreset -s\r\n' "$marker" >"$dir/startup.nsh"
    mformat -i "$dir/esp.img@@$((start * 512))" -T "$sectors" -h 64 -s 32 -v NVMEKIT ::
    mcopy -i "$dir/esp.img@@$((start * 512))" "$dir/startup.nsh" ::/startup.nsh
    cp "$NVMEKIT_E2E_OVMF_VARS" "$dir/vars.fd"
    echo "=== e2e [ovmf]: nvmekit-serve --vfio-user $dir/nvme.sock --file $dir/esp.img (GPT, FAT ESP at LBA $start, $sectors sectors)"
    "$serve" --vfio-user "$dir/nvme.sock" --file "$dir/esp.img" --log info >"$dir/serve.log" 2>&1 &
    serve_pid=$!
    wait_for_socket "$dir/nvme.sock" || host_fail "nvmekit-serve: expected its socket $dir/nvme.sock within 5 s"
    local qemu_args=() qemu_status=0
    mapfile -t qemu_args < <(qemu_args_without_kernel)
    timeout 300 "$NVMEKIT_E2E_QEMU" "${qemu_args[@]}" \
        -drive "if=pflash,format=raw,unit=0,readonly=on,file=$NVMEKIT_E2E_OVMF_CODE" \
        -drive "if=pflash,format=raw,unit=1,file=$dir/vars.fd" \
        -device "{\"driver\":\"vfio-user-pci\",\"socket\":{\"path\":\"$dir/nvme.sock\",\"type\":\"unix\"}}" \
        </dev/null >"$dir/guest.log" 2>&1 || qemu_status=$?
    # The console without the terminal's escape sequences and carriage returns.
    sed -e 's/\x1b\[[0-9;]*[A-Za-z]//g' -e 's/\r$//' -e 's/\r/\n/g' "$dir/guest.log" >"$dir/console.txt"
    matching -a -E "NVMe|FS0:|BLK|Shell|marker|Reset" "$dir/console.txt" | matching -v "Press ESC" | sed -n '1,20p'
    echo "---- e2e [ovmf]: nvmekit-serve log"
    cat "$dir/serve.log"
    echo "---- e2e [ovmf]: host checks"
    stop_server "$serve_pid" "$dir/serve.log" "nvmekit-serve"
    serve_pid=
    [ "$qemu_status" -eq 0 ] && host_ok "QEMU exited with 0 (the UEFI shell's reset -s)" \
        || host_fail "QEMU: expected exit status 0, got $qemu_status"
    local mapping
    mapping=$(matching -a -A1 -E '^ *FS0:' "$dir/console.txt" | matching -a -o 'PciRoot[^ ]*' | sed -n 1p)
    case $mapping in
        */NVMe\(0x1,*/HD\(1,GPT,*) host_ok "the UEFI shell mapped FS0 to partition 1 of NVMe namespace 1: $mapping" ;;
        *) host_fail "UEFI shell mapping of FS0: expected .../NVMe(0x1,...)/HD(1,GPT,...), got '${mapping:-no FS0}'" ;;
    esac
    grep -a -qx "$marker" "$dir/console.txt" \
        && host_ok "startup.nsh ran from the NVMe namespace: '$marker' on the serial console" \
        || host_fail "serial console: expected a line '$marker', got: $(grep -a marker "$dir/console.txt" | head -n 3 || echo none)"
    grep -q "CC.SHN = normal shutdown; CSTS.SHST = complete" "$dir/serve.log" \
        && host_ok "OVMF shut the controller down at reset (CC.SHN normal, CSTS.SHST complete)" \
        || host_fail "no 'CC.SHN = normal shutdown; CSTS.SHST = complete' in the server log"
    echo "=== e2e [ovmf]: $([ $failures -eq 0 ] && echo passed || echo "FAILED ($failures host checks)") in $((SECONDS - config_start)) s"
    [ "$failures" -eq 0 ] || failed_configs+=(ovmf)
}

for config in $configs; do
    case $config in
        512) capacity_mib=1024 run_config 512 512 8 ram:256 file:64 ;;
        4k) trace=1 log_level=debug run_config 4k 4096 1 ram:256 ram:32 file:64 ;;
        intx) interrupts=intx kernel_args=pci=nomsi run_config intx 512 8 ram:256 file:64 ;;
        groups) serve_extra="--groups 2 --group-threads --mapped-doorbells" run_config groups 512 8 ram:256 file:64 ;;
        pair) run_pair ;;
        ovmf) run_ovmf ;;
        *) echo "e2e: unknown configuration $config (512, 4k, intx, groups, pair, ovmf)"; exit 1 ;;
    esac
done
if [ ${#failed_configs[@]} -eq 0 ]; then
    echo "e2e: passed ($configs) in $((SECONDS - start)) s"
else
    echo "e2e: FAILED (${failed_configs[*]}) in $((SECONDS - start)) s"
    exit 1
fi
