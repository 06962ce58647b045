#!/bin/sh
# The end-to-end test's checks inside the guest: packed into the initramfs as /e2e/run by run.sh
# and run by the guest's /init with busybox sh. /e2e/expected (written by run.sh) describes the
# device nvmekit-serve was started with:
#
#   NS_BYTES      the size in bytes of each namespace, in NSID order ("268435456 67108864")
#   LBA_BYTES     the data size of the LBA format every namespace uses (512 or 4096)
#   SERVER_QUEUES the I/O queue pairs the server offers (--queues)
#   FILE_NSID     the namespace backed by a file, whose contents run.sh checks on the host
#   PATTERN_OFFSET, PATTERN_BYTES  where /e2e/pattern.bin goes on FILE_NSID (bytes)
#   INTERRUPTS    msix (the default), or intx when the guest was booted with pci=nomsi: one
#                 interrupt line shared by the admin queue and the single I/O queue the driver
#                 then creates, routed through the IO-APIC
#   LBA_FORMAT    the index of that LBA format (FLBAS)
#   MAX_NAMESPACES  the NSIDs the subsystem has (Identify Controller NN)
#   NVM_CAPACITY  the subsystem's NVM capacity in bytes when namespaces can be created from it
#                 (nvmekit-serve --capacity; empty otherwise): the Namespace Management checks run
#
# Each check prints "E2E ok: NAME ..." or "E2E FAIL: NAME: expected ..., got ...". The last line
# is "E2E: result N" with N the number of failed checks; the exit status is 0 only if none failed.
. /e2e/expected
. /e2e/checks.sh
# field KEY: the value of "KEY : value" in /tmp/out (nvme-cli's plain output), spaces trimmed
field() { sed -n "s/^$1 *: *//p" /tmp/out | head -n 1 | sed 's/ *$//'; }
# json_number KEY FILE: the first number given to "KEY" in nvme-cli's or fio's JSON
json_number() { sed -n "s/.*\"$1\" *: *\"\{0,1\}\([0-9][0-9]*\).*/\1/p" "$2" | head -n 1; }
# feature_value FID [CDW11 [SEL]]: the value get-feature reports (SEL 0 current, 1 default, 2
# saved), as 0x%08x
feature_value() {
    if ! nvme get-feature /dev/nvme0 -f "$1" --cdw11="${2:-0}" -s "${3:-0}" >/tmp/feature 2>&1; then
        echo "error($(tr '\n' ' ' </tmp/feature))"
        return
    fi
    # nvme-cli prints the value with %#x: "0x1f", but "0" for zero.
    value=$(sed -n 's/.*value: *\(0x\)\{0,1\}\([0-9a-fA-F][0-9a-fA-F]*\).*/\2/p' /tmp/feature | head -n 1)
    if [ -n "$value" ]; then printf '0x%08x' "0x$value"; else echo "unparsed($(tr '\n' ' ' </tmp/feature))"; fi
}
# smart_counters: "DUR DUW HRC HWC" from the SMART / Health log (controller-wide)
smart_counters() {
    nvme smart-log /dev/nvme0 -o json >/tmp/smart.json 2>&1 || { echo "error error error error"; return; }
    echo "$(json_number data_units_read /tmp/smart.json) $(json_number data_units_written /tmp/smart.json)" \
        "$(json_number host_read_commands /tmp/smart.json) $(json_number host_write_commands /tmp/smart.json)"
}
# fio_amount DIRECTION FILE: "BYTES IOS" fio reports it moved in DIRECTION (read or write) in its
# JSON output FILE (one job, or --group_reporting)
fio_amount() {
    awk -v dir="\"$2\"" '
        $1 == dir && $2 == ":" { inside = 1 }
        inside && $1 == "\"io_bytes\"" { gsub(/,/, "", $3); bytes = $3 }
        inside && $1 == "\"total_ios\"" { gsub(/,/, "", $3); ios = $3; print bytes, ios; exit }
    ' "$1"
}
# ceil_div A B
ceil_div() { echo $((($1 + $2 - 1) / $2)); }
# check_smart_delta NAME BEFORE AFTER READ_BYTES READ_IOS WRITE_BYTES WRITE_IOS: the SMART
# counters moved by exactly what fio moved. Data units are thousands of 512-byte units, the
# reported total rounded up (Base 2.0 5.16.1.3): without the 512-byte unit count behind the
# reading before, a move of U units shows as floor(U/1000) or ceil(U/1000), exactly U/1000 when
# U is a multiple of 1000.
check_smart_delta() {
    name=$1
    set -- $2 $3 "$4" "$5" "$6" "$7"
    # $1-$4 before, $5-$8 after, $9 read bytes, ${10} read ios, ${11} write bytes, ${12} write ios
    read_units=$(($9 / 512))
    write_units=$((${11} / 512))
    units_delta "$name: Data Units Read" "$1" "$5" "$read_units"
    units_delta "$name: Data Units Written" "$2" "$6" "$write_units"
    expect "$name: Host Read Commands moved by" "${10}" "$(($7 - $3))"
    expect "$name: Host Write Commands moved by" "${12}" "$(($8 - $4))"
}
units_delta() { # NAME BEFORE AFTER UNITS_512
    low=$(($4 / 1000))
    high=$(ceil_div "$4" 1000)
    moved=$(($3 - $2))
    if [ "$moved" -ge "$low" ] && [ "$moved" -le "$high" ]; then
        ok "$1 moved by $moved ($4 units of 512 bytes: $low to $high)"
    else
        fail "$1: expected a move of $low to $high ($4 units of 512 bytes), got $moved ($2 -> $3)"
    fi
}

set -- $NS_BYTES
ns_count=$#
# LBADS, and the LBA format as `nvme list` shows it
case $LBA_BYTES in 512) lbads=9 list_format="512 B + 0 B" ;; 4096) lbads=12 list_format="4 KiB + 0 B" ;; *) lbads=unknown ;; esac
for _ in $(seq 1 30); do [ -e "/dev/nvme0n$ns_count" ] && break; sleep 1; done
echo "E2E: expecting $ns_count namespaces ($NS_BYTES bytes), $LBA_BYTES-byte LBAs, $SERVER_QUEUES I/O queues offered"

# --- nvme list: the expected namespaces, with their sizes and LBA format
nvme list | tee /tmp/list
nvme list -o json >/tmp/list.json 2>&1
expect "nvme list: namespaces" "$ns_count" "$(grep -c '^/dev/nvme0n' /tmp/list)"
# nvme_list_fields DEV: "KEY VALUE" lines of DEV's entry in `nvme list -o json` (/tmp/list.json)
nvme_list_fields() {
    awk -v dev="/dev/$1" '
        index($0, "{") { split("", f) }
        /"[A-Za-z]+" *:/ { line = $0; gsub(/[",:]/, " ", line); split(line, w, " "); f[w[1]] = w[2] }
        index($0, "}") { if (f["DevicePath"] == dev) for (k in f) print k, f[k]; split("", f) }
    ' /tmp/list.json
}
nsid=1
for bytes in $NS_BYTES; do
    dev=nvme0n$nsid
    line=$(grep "^/dev/$dev " /tmp/list)
    expect "nvme list: $dev format" "$list_format" \
        "$(echo "$line" | sed -n 's/.* \([0-9][0-9]* *[KMG]*i*B *+ *[0-9][0-9]* *B\) .*/\1/p' | tr -s ' ')"
    # Usage "used / size", in powers of 1000 with SI prefixes
    expect "nvme list: $dev size" "$(awk -v b="$bytes" 'BEGIN {
        split("B kB MB GB TB", unit, " "); i = 1
        while (b >= 1000 && i < 5) { b /= 1000; i++ }
        printf "%.2f %s", b, unit[i] }')" \
        "$(echo "$line" | sed -n 's|.* / *\([0-9.][0-9.]* *[kMGT]*B\) .*|\1|p' | tr -s ' ')"
    nvme_list_fields $dev >/tmp/list.ns
    list_field() { awk -v k="$1" '$1 == k { print $2 }' /tmp/list.ns; }
    expect "nvme list -o json: $dev NameSpace" "$nsid" "$(list_field NameSpace)"
    expect "nvme list -o json: $dev PhysicalSize" "$bytes" "$(list_field PhysicalSize)"
    expect "nvme list -o json: $dev SectorSize" "$LBA_BYTES" "$(list_field SectorSize)"
    expect "nvme list -o json: $dev MaximumLBA" "$((bytes / LBA_BYTES))" "$(list_field MaximumLBA)"
    nsid=$((nsid + 1))
done

# --- Identify Controller and Identify Namespace
run id-ctrl nvme id-ctrl /dev/nvme0
expect "id-ctrl NN" "$MAX_NAMESPACES" "$(field nn)"
# nsid_list: the NSIDs a list-ns or list-ctrl printed to /tmp/out ("[   0]:0x1" lines), in decimal
nsid_list() { sed -n 's/^\[ *[0-9]*\]: *//p' /tmp/out | while read -r id; do printf '%d ' "$id"; done; }
run "list-ns (active NSIDs)" nvme list-ns /dev/nvme0
expect "active namespace list" "$(seq 1 "$ns_count" | tr '\n' ' ')" "$(nsid_list)"
nsid=1
for bytes in $NS_BYTES; do
    blocks=$((bytes / LBA_BYTES))
    run "id-ns $nsid" nvme id-ns /dev/nvme0n$nsid
    expect "id-ns $nsid NSZE" "$blocks" "$(dec "$(field nsze)")"
    expect "id-ns $nsid NCAP" "$blocks" "$(dec "$(field ncap)")"
    in_use=$(grep '(in use)' /tmp/out)
    expect "id-ns $nsid LBA format in use: LBADS" "$lbads" "$(echo "$in_use" | sed -n 's/.*lbads:\([0-9]*\).*/\1/p')"
    expect "id-ns $nsid LBA format in use: MS" "0" "$(echo "$in_use" | sed -n 's/.*ms:\([0-9]*\).*/\1/p')"
    expect "nvme0n$nsid logical_block_size" "$LBA_BYTES" "$(cat /sys/block/nvme0n$nsid/queue/logical_block_size)"
    expect "nvme0n$nsid size (512-byte sectors)" "$((bytes / 512))" "$(cat /sys/block/nvme0n$nsid/size)"
    nsid=$((nsid + 1))
done
run ns-descs nvme ns-descs /dev/nvme0n1
# A host mistake on purpose: admin opcode C8h (vendor specific, none defined) is Invalid Command
# Opcode; with --trace the server logs it as err_invalid_opcode (run.sh checks).
if nvme admin-passthru /dev/nvme0 --opcode=0xc8 >/tmp/out 2>&1; then
    fail "admin opcode C8h: expected Invalid Command Opcode, got success"
elif grep -q -i "opcode" /tmp/out; then
    ok "admin opcode C8h: $(grep -i -m1 opcode /tmp/out)"
else
    fail "admin opcode C8h: expected Invalid Command Opcode, got: $(cat /tmp/out)"
fi
run smart-log nvme smart-log /dev/nvme0
run error-log nvme error-log /dev/nvme0 -e 8
run fw-log nvme fw-log /dev/nvme0
run effects-log nvme effects-log /dev/nvme0

# --- I/O queues: the driver asks for one per possible CPU; the controller grants at most what
# the server offers.
cpus=$(awk -F- '{print ($2 == "" ? 1 : $2 - $1 + 1)}' /sys/devices/system/cpu/possible)
queues=$((cpus < SERVER_QUEUES ? cpus : SERVER_QUEUES))
# What Set Features Number of Queues grants: the driver asks for one queue per possible CPU
# before it allocates interrupt vectors.
granted=$queues
# Without MSI or MSI-X the driver then gets one interrupt vector (INTx), shares it between the
# admin queue and one I/O queue, and creates no more.
[ "${INTERRUPTS:-msix}" = intx ] && queues=1
echo "E2E: $cpus possible CPUs, $SERVER_QUEUES queues offered, ${INTERRUPTS:-msix}: expecting $queues I/O queues"
# nvme0n1 is the multipath node; nvme0c0n1 is the controller's path to the namespace, the
# blk-mq device with one hardware context per I/O queue.
expect "blk-mq hardware queues of nvme0c0n1" "$queues" "$(ls /sys/block/nvme0c0n1/mq | wc -l)"
expect "controller queue_count (admin + I/O)" "$((queues + 1))" "$(cat /sys/class/nvme/nvme0/queue_count)"
expect "I/O queue interrupt handlers (nvme0q1...)" "$queues" \
    "$(grep -o 'nvme0q[1-9][0-9]*' /proc/interrupts | sort -u | wc -l)"
# The interrupt controller of every nvme0 line in /proc/interrupts (the column after the per-CPU
# counts): PCI-MSI for MSI-X, IO-APIC for INTx.
case ${INTERRUPTS:-msix} in intx) irq_chip=IO-APIC ;; *) irq_chip=PCI-MSI ;; esac
# nvme_irq_lines: the /proc/interrupts lines of nvme0's queues
nvme_irq_lines() { grep -E 'nvme0q[0-9]+' /proc/interrupts; }
nvme_irq_lines
expect "interrupt controller of nvme0's interrupts" "$irq_chip" \
    "$(nvme_irq_lines | awk -v cpus="$cpus" '{ print $(cpus + 2) }' | sort -u | tr '\n' ' ' | sed 's/ $//')"
# nvme_irq_count: the interrupts counted for nvme0's queues, all CPUs and lines together
nvme_irq_count() { nvme_irq_lines | awk -v cpus="$cpus" '{ for (i = 2; i <= cpus + 1; i++) n += $i } END { print n + 0 }'; }
expect "Number of Queues granted (feature 07h)" "$(printf '0x%08x' $(((granted - 1) << 16 | (granted - 1))))" \
    "$(feature_value 7)"

# --- Get Features for every supported feature and select
for f in 1 2 4 5 6 7 8 10 11 14 15 22; do
    for sel in 0 1 2 3; do run "get-feature $f sel $sel" nvme get-feature /dev/nvme0 -f $f -s $sel; done
done
run "get-feature 9 (vector 1)" nvme get-feature /dev/nvme0 -f 9 --cdw11=1

# --- Set Features, then Get Features reads the value back
aec_before=$(feature_value 11)
# set_get NAME FID VALUE [GET_CDW11]
set_get() {
    if nvme set-feature /dev/nvme0 -f "$2" -v "$3" >/tmp/out 2>&1; then
        expect "$1 (feature $2) read back after set-feature $3" "$(printf '0x%08x' "$3")" "$(feature_value "$2" "$4")"
    else
        fail "$1 (feature $2): set-feature -v $3 failed"
        cat /tmp/out
    fi
}
set_get Arbitration 1 0x30201003
set_get "Power Management" 2 0x00000040
set_get "Temperature Threshold (composite, over)" 4 0x0000015e
set_get "Temperature Threshold (composite, under)" 4 0x00100102 0x00100000
set_get "Volatile Write Cache" 6 0x00000000
set_get "Volatile Write Cache" 6 0x00000001
set_get "Interrupt Coalescing" 8 0x00000105
set_get "Interrupt Coalescing" 8 0x00000000
set_get "Asynchronous Event Configuration" 11 0x00000003
set_get "Asynchronous Event Configuration" 11 "$aec_before"

# --- SMART counters move by what fio moved. Merges off, so that each I/O fio issues is one
# command (with fewer queues than CPUs the block layer otherwise merges adjacent requests).
for queue in /sys/block/nvme0c0n*/queue/nomerges; do echo 2 >"$queue"; done
expect "nvme0c0n1 nomerges" 2 "$(cat /sys/block/nvme0c0n1/queue/nomerges)"
# A job of known size first: 1250 writes of 4 KiB
# (5,120,000 bytes, exactly 10,000 units of 512 bytes), then the same 1250 reads. psync, one I/O
# at a time, so the block layer cannot merge them into fewer commands.
smart_job() { # NAME RW OUTPUT
    fio --name="$1" --ioengine=psync --direct=1 --rw="$2" --bs=4k --size=5120000 --offset=128M \
        --filename=/dev/nvme0n1 --output-format=json --output="$3" >/tmp/fio.err 2>&1 \
        || { fail "fio $1"; cat /tmp/fio.err "$3"; }
}
before=$(smart_counters)
irqs_before=$(nvme_irq_count)
smart_job smart-write write /tmp/fio-smart-write.json
smart_job smart-read read /tmp/fio-smart-read.json
irqs_after=$(nvme_irq_count)
after=$(smart_counters)
# 2500 commands, one at a time, each completed with an interrupt (coalescing is off): at least
# about 2500 interrupts; far fewer means completions found some other way (a line the kernel
# disabled and polls). More is possible: with INTx, QEMU asserts the guest's line for each signal
# and holds it until the guest's next BAR access, so an entry the guest's handler consumed before
# QEMU took its signal is followed by interrupts with nothing to handle until the next
# submission. A line left asserted for good is caught on the host ("nobody cared").
irqs_moved=$((irqs_after - irqs_before))
if [ "$irqs_moved" -ge 2000 ]; then
    ok "nvme0 interrupts ($irq_chip) moved by $irqs_moved over 2500 commands ($irqs_before -> $irqs_after)"
else
    fail "nvme0 interrupts ($irq_chip): expected a move of at least 2000 over 2500 commands, got $irqs_moved ($irqs_before -> $irqs_after)"
fi
echo "E2E: SMART (DUR DUW HRC HWC) before $before, after $after"
set -- $(fio_amount /tmp/fio-smart-read.json read) $(fio_amount /tmp/fio-smart-write.json write)
expect "fio smart-write: bytes written, commands" "5120000 1250" "$3 $4"
expect "fio smart-read: bytes read, commands" "5120000 1250" "$1 $2"
check_smart_delta "SMART (known job)" "$before" "$after" "$1" "$2" "$3" "$4"

# Then the verified multi-job random read/write on the RAM namespace (two jobs, each in its own
# region), the SMART counters checked against fio's own totals.
echo "E2E: fio"
before=$(smart_counters)
fio --name=verify --ioengine=libaio --direct=1 --rw=randrw --bs=4k --iodepth=16 --numjobs=2 \
    --filename=/dev/nvme0n1 --size=32M --offset_increment=64M --verify=crc32c --verify_fatal=1 \
    --cpus_allowed_policy=split --group_reporting --output-format=normal,json --output=/tmp/fio.out >/tmp/fio.err 2>&1 \
    && ok "fio ram (randrw, verify crc32c)" || { fail "fio ram (randrw, verify crc32c)"; cat /tmp/fio.err; }
after=$(smart_counters)
sed -n '/^verify: (groupid/,$p' /tmp/fio.out
echo "E2E: SMART (DUR DUW HRC HWC) before $before, after $after"
sed -n '/^{/,/^}/p' /tmp/fio.out >/tmp/fio.json
set -- $(fio_amount /tmp/fio.json read) $(fio_amount /tmp/fio.json write)
check_smart_delta "SMART (fio randrw)" "$before" "$after" "$1" "$2" "$3" "$4"
fio --name=file --ioengine=libaio --direct=1 --rw=randwrite --bs=16k --iodepth=8 --filename=/dev/nvme0n$FILE_NSID \
    --size=16M --verify=md5 --verify_fatal=1 >/tmp/fio2.out 2>&1 && ok "fio file (randwrite, verify md5)" \
    || { fail "fio file (randwrite, verify md5)"; cat /tmp/fio2.out; }

# --- Known data, then a controller reset, then the same data read back. /e2e/pattern.bin goes
# to the file namespace (run.sh checks it on the host afterwards) and to the RAM namespace.
pattern_blocks=$((PATTERN_BYTES / 4096))
pattern_seek=$((PATTERN_OFFSET / 4096))
ram_seek=$((200 * 256)) # 200 MiB, beyond the fio regions
run "write pattern to nvme0n$FILE_NSID" dd if=/e2e/pattern.bin of=/dev/nvme0n$FILE_NSID bs=4096 \
    seek=$pattern_seek count=$pattern_blocks oflag=direct conv=fsync
run "write pattern to nvme0n1" dd if=/e2e/pattern.bin of=/dev/nvme0n1 bs=4096 seek=$ram_seek \
    count=$pattern_blocks oflag=direct conv=fsync
# read_back NAME DEV SEEK: the pattern read back from DEV at 4 KiB block SEEK
read_back() {
    rm -f /tmp/back.bin
    if dd if="$2" of=/tmp/back.bin bs=4096 skip="$3" count=$pattern_blocks iflag=direct 2>/tmp/out \
        && cmp /e2e/pattern.bin /tmp/back.bin >/tmp/cmp 2>&1; then
        ok "$1: $PATTERN_BYTES bytes at $2 block $3 equal the pattern"
    else
        fail "$1: $2 at 4 KiB block $3: expected the $PATTERN_BYTES bytes of /e2e/pattern.bin, got: $(cat /tmp/cmp /tmp/out)"
    fi
}
read_back "pattern before reset" /dev/nvme0n$FILE_NSID $pattern_seek
run reset nvme reset /dev/nvme0
for _ in $(seq 1 20); do [ -e /dev/nvme0n1 ] && break; sleep 1; done
read_back "pattern after reset (file namespace)" /dev/nvme0n$FILE_NSID $pattern_seek
read_back "pattern after reset (RAM namespace)" /dev/nvme0n1 $ram_seek
run "read after reset" dd if=/dev/nvme0n1 of=/dev/null bs=1M count=8 iflag=direct
run "id-ctrl after reset" nvme id-ctrl /dev/nvme0
expect "id-ctrl NN after reset" "$MAX_NAMESPACES" "$(field nn)"
# A Controller Level Reset returns the features set above to their saved values; none was saved,
# so those are the defaults, which get-feature SEL 1 reports.
expect "Arbitration after reset (the default)" "$(feature_value 1 0 1)" "$(feature_value 1)"
expect "Power Management after reset (the default)" "$(feature_value 2 0 1)" "$(feature_value 2)"
expect "Temperature Threshold (composite, over) after reset (the default)" "$(feature_value 4 0 1)" \
    "$(feature_value 4)"
expect "Temperature Threshold (composite, under) after reset (the default)" "$(feature_value 4 0x00100000 1)" \
    "$(feature_value 4 0x00100000)"
expect "blk-mq hardware queues of nvme0c0n1 after reset" "$queues" "$(ls /sys/block/nvme0c0n1/mq | wc -l)"
expect "controller queue_count after reset" "$((queues + 1))" "$(cat /sys/class/nvme/nvme0/queue_count)"

# --- An LBA format with metadata, as a new user would try it: nvme format --lbaf=1 (512 + 8
# bytes, nvme-cli's default --ms=0: the metadata in a separate buffer, which the driver gives the
# drive through MPTR) on the RAM namespace, data written and read back in it, then the format the
# namespace had, with the data path checked again. (Format erases; nothing later reads what was
# there before.)
format_ns=/dev/nvme0n1
format_bytes=${NS_BYTES%% *}
# wait_for_sectors DEV SECTORS: up to 10 s for DEV's size to become SECTORS (the driver rescans
# the namespace after Format NVM)
wait_for_sectors() {
    for _ in $(seq 1 20); do [ "$(cat "/sys/block/${1#/dev/}/size")" = "$2" ] && return 0; sleep 0.5; done
    return 1
}
run "id-ns 1 before format" nvme id-ns $format_ns
expect "id-ns 1 MC (extended LBA and separate buffer)" 3 "$(dec "$(field mc)")"
run "format nvme0n1 --lbaf=1" nvme format $format_ns --lbaf=1 --force
metadata_blocks=$((format_bytes / 520))
run "id-ns 1 after format --lbaf=1" nvme id-ns $format_ns
expect "id-ns 1 FLBAS after format --lbaf=1 (LBAF1, separate metadata)" 1 "$(dec "$(field flbas)")"
expect "id-ns 1 NSZE after format --lbaf=1 (512 + 8 bytes a block)" "$metadata_blocks" "$(dec "$(field nsze)")"
in_use=$(grep '(in use)' /tmp/out)
expect "id-ns 1 LBA format in use after format --lbaf=1: MS" 8 "$(echo "$in_use" | sed -n 's/.*ms:\([0-9]*\).*/\1/p')"
wait_for_sectors $format_ns "$metadata_blocks"
expect "nvme0n1 size after format --lbaf=1 (512-byte sectors)" "$metadata_blocks" "$(cat /sys/block/nvme0n1/size)"
run "write pattern to nvme0n1 (LBAF1)" dd if=/e2e/pattern.bin of=$format_ns bs=4096 seek=16 count=$pattern_blocks \
    oflag=direct conv=fsync
read_back "pattern on nvme0n1 with LBAF1 (metadata at MPTR)" $format_ns 16
run "format nvme0n1 back to --lbaf=$LBA_FORMAT" nvme format $format_ns --lbaf="$LBA_FORMAT" --force
run "id-ns 1 after format back" nvme id-ns $format_ns
expect "id-ns 1 FLBAS after format back" "$LBA_FORMAT" "$(dec "$(field flbas)")"
expect "id-ns 1 NSZE after format back" "$((format_bytes / LBA_BYTES))" "$(dec "$(field nsze)")"
wait_for_sectors $format_ns "$((format_bytes / 512))"
expect "nvme0n1 size after format back (512-byte sectors)" "$((format_bytes / 512))" "$(cat /sys/block/nvme0n1/size)"
expect "nvme0n1 logical_block_size after format back" "$LBA_BYTES" "$(cat /sys/block/nvme0n1/queue/logical_block_size)"
run "write pattern to nvme0n1 after format back" dd if=/e2e/pattern.bin of=$format_ns bs=4096 seek=$ram_seek \
    count=$pattern_blocks oflag=direct conv=fsync
read_back "pattern on nvme0n1 after format back" $format_ns $ram_seek

# --- Namespace Management as nvme-cli drives it, on a subsystem with NVM capacity to spare:
# create, attach, use, format, detach and delete a namespace, with the capacities, namespace
# lists and controller lists a multi-namespace drive reports at each step.
if [ -n "${NVM_CAPACITY:-}" ]; then
    echo "E2E: Namespace Management ($NVM_CAPACITY bytes of NVM capacity)"
    allocated=0
    for bytes in $NS_BYTES; do allocated=$((allocated + bytes)); done
    # capacities: "TNVMCAP UNVMCAP" of Identify Controller
    capacities() {
        nvme id-ctrl /dev/nvme0 -o json >/tmp/id-ctrl.json 2>&1 || { echo "error error"; return; }
        echo "$(json_number tnvmcap /tmp/id-ctrl.json) $(json_number unvmcap /tmp/id-ctrl.json)"
    }
    run "id-ctrl (CNTLID)" nvme id-ctrl /dev/nvme0
    cntlid=$(dec "$(field cntlid)")
    expect "id-ctrl TNVMCAP UNVMCAP" "$NVM_CAPACITY $((NVM_CAPACITY - allocated))" "$(capacities)"
    new_bytes=$((32 << 20))
    new_blocks=$((new_bytes / LBA_BYTES))
    run create-ns nvme create-ns /dev/nvme0 --nsze=$new_blocks --ncap=$new_blocks --flbas=$LBA_FORMAT
    new_nsid=$(sed -n 's/.*created nsid: *\([0-9]*\).*/\1/p' /tmp/out)
    expect "create-ns: the new namespace takes the lowest free NSID" "$((ns_count + 1))" "$new_nsid"
    new_nsid=${new_nsid:-$((ns_count + 1))}
    expect "id-ctrl TNVMCAP UNVMCAP after create-ns" "$NVM_CAPACITY $((NVM_CAPACITY - allocated - new_bytes))" \
        "$(capacities)"
    run "list-ns --all after create-ns" nvme list-ns /dev/nvme0 --all
    expect "allocated namespace list after create-ns" "$(seq 1 "$new_nsid" | tr '\n' ' ')" "$(nsid_list)"
    run "list-ns after create-ns" nvme list-ns /dev/nvme0
    expect "active namespace list after create-ns (not attached yet)" "$(seq 1 "$ns_count" | tr '\n' ' ')" "$(nsid_list)"
    run "list-ctrl -n $new_nsid before attach-ns" nvme list-ctrl /dev/nvme0 -n "$new_nsid"
    expect "controllers attached to NSID $new_nsid before attach-ns" "" "$(nsid_list)"
    run attach-ns nvme attach-ns /dev/nvme0 -n "$new_nsid" -c "$cntlid"
    # The controller's Namespace Attribute Changed event makes the driver scan again.
    for _ in $(seq 1 20); do [ -e "/dev/nvme0n$new_nsid" ] && break; sleep 1; done
    expect "nvme0n$new_nsid size after attach-ns (512-byte sectors)" "$((new_bytes / 512))" \
        "$(cat "/sys/block/nvme0n$new_nsid/size" 2>&1)"
    run "list-ctrl -n $new_nsid" nvme list-ctrl /dev/nvme0 -n "$new_nsid"
    expect "controllers attached to NSID $new_nsid" "$cntlid " "$(nsid_list)"
    run "list-ns after attach-ns" nvme list-ns /dev/nvme0
    expect "active namespace list after attach-ns" "$(seq 1 "$new_nsid" | tr '\n' ' ')" "$(nsid_list)"
    run "id-ns $new_nsid" nvme id-ns "/dev/nvme0n$new_nsid"
    expect "id-ns $new_nsid NSZE" "$new_blocks" "$(dec "$(field nsze)")"
    expect "id-ns $new_nsid NCAP" "$new_blocks" "$(dec "$(field ncap)")"
    expect "id-ns $new_nsid NVMCAP" "$new_bytes" "$(field nvmcap)"
    # Data on the new namespace, then Format NVM: every block reads as zeroes afterwards.
    run "write pattern to nvme0n$new_nsid" dd if=/e2e/pattern.bin of="/dev/nvme0n$new_nsid" bs=4096 \
        count=$pattern_blocks oflag=direct conv=fsync
    read_back "pattern on the created namespace" "/dev/nvme0n$new_nsid" 0
    run "format nvme0n$new_nsid" nvme format "/dev/nvme0n$new_nsid" --lbaf="$LBA_FORMAT" --force
    # A failed read must not pass for zeroes: the read must succeed and return every byte.
    rm -f /tmp/back.bin
    if dd if="/dev/nvme0n$new_nsid" of=/tmp/back.bin bs=4096 count=$pattern_blocks iflag=direct 2>/tmp/out; then
        expect "bytes read where the pattern was, after format" "$PATTERN_BYTES" "$(wc -c </tmp/back.bin)"
        expect "non-zero bytes where the pattern was, after format" 0 "$(tr -d '\000' </tmp/back.bin | wc -c)"
    else
        fail "read nvme0n$new_nsid after format: $(cat /tmp/out)"
    fi
    run "detach-ns" nvme detach-ns /dev/nvme0 -n "$new_nsid" -c "$cntlid"
    for _ in $(seq 1 20); do [ -e "/dev/nvme0n$new_nsid" ] || break; sleep 1; done
    expect "nvme0n$new_nsid after detach-ns" absent "$([ -e "/dev/nvme0n$new_nsid" ] && echo present || echo absent)"
    run "list-ctrl -n $new_nsid after detach-ns" nvme list-ctrl /dev/nvme0 -n "$new_nsid"
    expect "controllers attached to NSID $new_nsid after detach-ns" "" "$(nsid_list)"
    run delete-ns nvme delete-ns /dev/nvme0 -n "$new_nsid"
    run "list-ns --all after delete-ns" nvme list-ns /dev/nvme0 --all
    expect "allocated namespace list after delete-ns" "$(seq 1 "$ns_count" | tr '\n' ' ')" "$(nsid_list)"
    expect "id-ctrl TNVMCAP UNVMCAP after delete-ns" "$NVM_CAPACITY $((NVM_CAPACITY - allocated))" "$(capacities)"

    # --- Get LBA Status and the LBA Status Information log: 8 blocks made uncorrectable on
    # namespace 1 (240 MiB in, clear of the fio regions and the pattern) are reported, and no
    # longer once they are written again.
    lba_log() { # FIELD: a number of the LBA Status Information log (first occurrence)
        nvme lba-status-log /dev/nvme0 -o json >/tmp/lba-log.json 2>&1 || { echo error; return; }
        json_number "$1" /tmp/lba-log.json
    }
    unc_lba=$((240 * 1048576 / LBA_BYTES))
    lsgc_before=$(lba_log lsgc)
    run write-uncor nvme write-uncor /dev/nvme0n1 -s $unc_lba -c 7
    # Not with nvme-cli 2.3's get-lba-status: its libnvme (1.3) gives the kernel no data length
    # for the command, so the drive is handed no buffer (PRP1 0) and the tool shows an empty
    # list whatever the drive returns. The same command through admin-passthru, with a buffer:
    # "NLSD CMPC DSLBA NLB STATUS" of the first descriptor.
    lba_status() { # SLBA: Get LBA Status of NSID 1, ATYPE 11h, RL 64, MNDW 15 (64 bytes)
        nvme admin-passthru /dev/nvme0 --opcode=0x86 --namespace-id=1 --data-len=64 --read --raw-binary \
            --cdw10="$1" --cdw11=0 --cdw12=15 --cdw13=$(((0x11 << 24) | 64)) >/tmp/lba-status.bin 2>/tmp/out \
            || { echo "error($(cat /tmp/out))"; return; }
        [ "$(wc -c </tmp/lba-status.bin)" -eq 64 ] || { echo "short($(wc -c </tmp/lba-status.bin) bytes)"; return; }
        # dwords: 0 NLSD, 1 CMPC (byte 4), 2-3 DSLBA, 4 NLB, 5 Status (byte 13)
        set -- $(od -An -tu4 -v /tmp/lba-status.bin)
        echo "$1 $(($2 & 255)) $(($3 + ($4 << 32))) $5 $((($6 >> 8) & 255))"
    }
    expect "Get LBA Status: NLSD CMPC DSLBA NLB Status" "1 2 $unc_lba 8 1" "$(lba_status $((unc_lba - 16)))"
    run lba-status-log nvme lba-status-log /dev/nvme0 -o json
    expect "lba-status-log: NLSLNE ESTULB NEID NLRD RSLBA RNLB" "1 8 1 1 $unc_lba 8" \
        "$(lba_log nlslne) $(lba_log estulb) $(lba_log neid) $(lba_log nlrd) $(lba_log rslba) $(lba_log rnlb)"
    lsgc_uncorrectable=$(lba_log lsgc)
    [ "$lsgc_uncorrectable" != "$lsgc_before" ] && ok "lba-status-log: LSGC changed ($lsgc_before -> $lsgc_uncorrectable)" \
        || fail "lba-status-log: LSGC: expected a change from $lsgc_before, got $lsgc_uncorrectable"
    run "write-zeroes over the uncorrectable blocks" nvme write-zeroes /dev/nvme0n1 -s $unc_lba -c 7
    expect "Get LBA Status after write-zeroes: NLSD CMPC" "0 2" "$(lba_status $((unc_lba - 16)) | cut -d' ' -f1-2)"
    expect "lba-status-log after write-zeroes: NLSLNE" 0 "$(lba_log nlslne)"
fi

echo "E2E: kernel log"
dmesg | grep -i nvme
echo "E2E: result $failures"
[ "$failures" -eq 0 ]
