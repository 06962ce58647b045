#!/usr/bin/env bash
# Provisions what the end-to-end test needs, outside the repository: a QEMU with the vfio-user
# client built from Debian's source package, a Debian 12 guest kernel with a busybox initramfs
# holding nvme-cli and fio, and the firmware directory for -L. Idempotent: a step whose result is
# already there is skipped. Debian 12, as root. See tests/e2e/README.md.
#
#   provision.sh [all]                 everything below, then writes $NVMEKIT_E2E_DIR/env.sh
#   provision.sh packages|qemu|guest|firmware
#   provision.sh pack OVERLAY OUT      initramfs = base guest tree + OVERLAY directory, to OUT
#   provision.sh boot-test             boots the base initramfs once under TCG and checks /init ran
#   provision.sh qemu-args             prints the common QEMU arguments, one a line
#   provision.sh check                 prints what is missing or out of date, one a line; fails
#                                      if anything is (changes nothing, needs no root)
set -euo pipefail

e2e_dir=${NVMEKIT_E2E_DIR:-/var/tmp/nvmekit-e2e}
qemu_package_version=${NVMEKIT_QEMU_VERSION:-1:10.2.2+ds-1}
qemu_suite=${NVMEKIT_QEMU_SUITE:-unstable}
jobs=${NVMEKIT_E2E_JOBS:-2}
mirror=${NVMEKIT_DEBIAN_MIRROR:-http://deb.debian.org/debian}

qemu_dir=$e2e_dir/qemu
qemu_bin=$qemu_dir/build/qemu-system-x86_64
guest_dir=$e2e_dir/guest
firmware_dir=$e2e_dir/firmware
log_dir=$e2e_dir/logs
qemu_configure_args=(
    --target-list=x86_64-softmmu --without-default-features --enable-slirp --enable-fdt=system
    --disable-docs --disable-tools --disable-install-blobs --python=/usr/bin/python3
)
# --disable-install-blobs: the +ds repack has no firmware blobs (they come from -L instead).
# --python: Debian's python3, which bookworm-backports' meson is installed for, not whatever
# python3 comes first in PATH. No switch is needed for the vfio-user client (vfio-user-pci): it
# is the Kconfig symbol VFIO_USER, default y wherever VFIO_PCI is built (Linux hosts); meson's
# vfio_user_server option is QEMU's own server side and stays off.

# Host packages: building QEMU (meson comes from bookworm-backports, see apt_sources), the
# firmware, and the programs copied into the guest.
qemu_build_packages=(
    build-essential dpkg-dev pkg-config python3 python3-venv python3-distlib ninja-build
    libglib2.0-dev libpixman-1-dev zlib1g-dev libslirp-dev libfdt-dev xz-utils curl
)
firmware_packages=(seabios qemu-system-data ipxe-qemu)
# The UEFI boot: Debian's OVMF (its firmware has NvmExpressDxe and the UEFI shell), and what
# builds the EFI system partition image on the host without mounting it (sfdisk, mtools).
uefi_packages=(ovmf fdisk mtools)
# The OVMF build the UEFI boot uses: code (read-only) and the variable store template it copies.
ovmf_code=/usr/share/OVMF/OVMF_CODE_4M.fd
ovmf_vars=/usr/share/OVMF/OVMF_VARS_4M.fd
guest_packages=(busybox-static nvme-cli fio cpio kmod)

log() { echo "provision: $*"; }
die() { echo "provision: error: $*" >&2; exit 1; }

# timed NAME COMMAND...: runs the step in a subshell with errexit in force, so that its first
# failing command ends it (with "COMMAND || status=$?" bash would ignore errexit inside it).
timed() {
    local name=$1
    shift
    local start=$SECONDS
    log "== $name"
    local status=0
    set +e
    (
        set -e
        "$@"
    )
    status=$?
    set -e
    [ "$status" -eq 0 ] || { log "== $name: failed ($status) after $((SECONDS - start)) s"; return "$status"; }
    log "== $name: $((SECONDS - start)) s"
}

apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

missing_packages() {
    local package
    for package in "$@"; do
        if [ "$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null)" != "install ok installed" ]; then
            echo "$package"
        fi
    done
}

# bookworm-backports (binary, for meson >= 1.5; NotAutomatic, so nothing else is taken from it)
# and the source index of $qemu_suite, in a file of their own.
apt_sources() {
    local file=/etc/apt/sources.list.d/nvmekit-e2e.sources
    local want
    want="Types: deb
URIs: $mirror
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: $mirror
Suites: $qemu_suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
    if [ "$(cat "$file" 2>/dev/null)" != "$want" ]; then
        printf '%s\n' "$want" >"$file"
        rm -f /var/lib/apt/nvmekit-e2e.updated
    fi
    if [ ! -e /var/lib/apt/nvmekit-e2e.updated ] \
        || [ -n "$(find /var/lib/apt/nvmekit-e2e.updated -mmin +1440)" ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -q
        touch /var/lib/apt/nvmekit-e2e.updated
    fi
}

meson_ok() {
    command -v meson >/dev/null 2>&1 || return 1
    dpkg --compare-versions "$(meson --version)" ge 1.5
}

step_packages() {
    [ "$(id -u)" -eq 0 ] || die "run as root (apt-get, and the guest tree keeps root ownership)"
    local missing
    missing=$(missing_packages "${qemu_build_packages[@]}" "${firmware_packages[@]}" \
        "${uefi_packages[@]}" "${guest_packages[@]}")
    if [ -z "$missing" ] && meson_ok; then
        log "host packages already installed"
        return 0
    fi
    apt_sources
    # shellcheck disable=SC2086
    [ -z "$missing" ] || apt_install $missing
    meson_ok || apt_install -t bookworm-backports meson
    meson_ok || die "meson >= 1.5 is needed, found $(meson --version 2>/dev/null || echo none)"
}

# Downloads the .dsc named $1 and the files it lists from the pool directory URL $2.
fetch_from_pool() {
    local dsc=$1 base=$2 file
    curl -fsSL -o "$dsc.part" "$base/$dsc" || return 1
    for file in $(awk '/^Files:/ { f = 1; next } /^[^ ]/ { f = 0 } f { print $3 }' "$dsc.part"); do
        curl -fsSL -o "$file" "$base/$file" || return 1
    done
    mv "$dsc.part" "$dsc"
}

# Downloads the files of source version $1 of qemu from snapshot.debian.org, by their hashes.
fetch_from_snapshot() {
    local version=${1//+/%2B} hash name
    curl -fsSL -o srcfiles.json \
        "https://snapshot.debian.org/mr/package/qemu/$version/srcfiles?fileinfo=1" || return 1
    python3 -c '
import json, sys
d = json.load(open("srcfiles.json"))
for r in d["result"]:
    print(r["hash"], d["fileinfo"][r["hash"]][0]["name"])' >srcfiles.txt || return 1
    while read -r hash name; do
        curl -fsSL -o "$name" "https://snapshot.debian.org/file/$hash" || return 1
    done <srcfiles.txt
}

# Fetches and unpacks the source package into $qemu_dir/src: apt-get source while the suite
# still carries the version, otherwise the .dsc and its files from the pool, then from
# snapshot.debian.org. dpkg-source checks every file against the .dsc's checksums.
fetch_qemu_source() {
    local upstream=${qemu_package_version#*:}
    local dsc=qemu_${upstream}.dsc
    local work=$qemu_dir/fetch
    mkdir -p "$work"
    (
        cd "$work"
        if [ ! -e "$dsc" ]; then
            apt_sources
            apt-get source --download-only -q -o APT::Sandbox::User=root \
                "qemu=$qemu_package_version" \
                || { log "apt-get source failed; trying the pool" && fetch_from_pool "$dsc" "$mirror/pool/main/q/qemu"; } \
                || { log "not in the pool; trying snapshot.debian.org" && fetch_from_snapshot "$upstream"; } \
                || die "could not fetch $dsc (suite $qemu_suite, pool, snapshot.debian.org)"
            [ -e "$dsc" ] || die "no $dsc after the download"
        fi
        rm -rf src.tmp
        dpkg-source -x "$dsc" src.tmp
    )
    rm -rf "$qemu_dir/src"
    mv "$work/src.tmp" "$qemu_dir/src"
    echo "$qemu_package_version" >"$qemu_dir/src/.nvmekit-version"
}

configure_qemu() {
    rm -rf "$qemu_dir/build"
    mkdir -p "$qemu_dir/build"
    (cd "$qemu_dir/build" && ../src/configure "${qemu_configure_args[@]}") \
        >"$log_dir/qemu-configure.log" 2>&1
}

build_qemu() {
    ninja -C "$qemu_dir/build" -j "$jobs" qemu-system-x86_64 >"$log_dir/qemu-build.log" 2>&1
}

step_qemu() {
    mkdir -p "$qemu_dir" "$log_dir"
    local config="$qemu_package_version ${qemu_configure_args[*]}"
    if [ -x "$qemu_bin" ] && [ "$(cat "$qemu_dir/.built" 2>/dev/null)" = "$config" ]; then
        log "QEMU already built: $qemu_bin"
        return 0
    fi
    if [ "$(cat "$qemu_dir/src/.nvmekit-version" 2>/dev/null)" != "$qemu_package_version" ]; then
        timed "fetch qemu $qemu_package_version source" fetch_qemu_source
    else
        log "QEMU source already unpacked"
    fi
    grep -q "default y" "$qemu_dir/src/hw/vfio-user/Kconfig" 2>/dev/null \
        || die "this QEMU source has no vfio-user client (hw/vfio-user/Kconfig)"
    if [ "$(cat "$qemu_dir/.configured" 2>/dev/null)" != "$config" ]; then
        timed "configure qemu" configure_qemu \
            || { tail -n 40 "$log_dir/qemu-configure.log"; die "QEMU configure failed"; }
        echo "$config" >"$qemu_dir/.configured"
    fi
    timed "build qemu (-j$jobs)" build_qemu \
        || { tail -n 40 "$log_dir/qemu-build.log"; die "QEMU build failed"; }
    "$qemu_bin" -device help 2>/dev/null | grep -q '"vfio-user-pci"' \
        || die "$qemu_bin has no vfio-user-pci device"
    echo "$config" >"$qemu_dir/.built"
}

# One directory for -L: Debian's SeaBIOS, the qemu-system-data option ROMs and iPXE ROMs.
step_firmware() {
    mkdir -p "$firmware_dir"
    local dir file
    for dir in /usr/share/qemu /usr/share/seabios /usr/lib/ipxe/qemu; do
        [ -d "$dir" ] || continue
        for file in "$dir"/*; do
            [ -f "$file" ] || continue
            [ -e "$firmware_dir/${file##*/}" ] || ln -s "$(readlink -f "$file")" "$firmware_dir/${file##*/}"
        done
    done
    [ -e "$firmware_dir/bios-256k.bin" ] || die "no bios-256k.bin in $firmware_dir"
}

# Copies a program and the shared libraries it loads (ldd) into the tree $1.
copy_with_libs() {
    local root=$1 program=$2 lib
    install -D -m 0755 "$program" "$root$program"
    for lib in $(ldd "$program" 2>/dev/null | awk '/=> \//{print $3} /^\t\/[^ ]+ \(/{print $1}'); do
        [ -e "$root$lib" ] || install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
    done
}

# The modules named in $@ and everything they depend on, from the extracted kernel tree, into
# $root/lib/modules/nvmekit (decompressed), in load order in $root/lib/modules/nvmekit/order.
copy_modules() {
    local root=$1 moddir=$2
    shift 2
    local out=$root/lib/modules/nvmekit
    mkdir -p "$out"
    : >"$out/order"
    add_module() {
        local name=$1 path dep
        grep -qx "$name.ko" "$out/order" && return 0
        path=$(find "$moddir" -name "$name.ko*" -o -name "${name//-/_}.ko*" | head -n 1)
        [ -n "$path" ] || die "module $name not found under $moddir"
        for dep in $(modinfo -F depends "$path" | tr ',' ' '); do
            add_module "$dep"
        done
        case $path in
            *.xz) xz -dc "$path" >"$out/$name.ko" ;;
            *.zst) zstd -dcq "$path" >"$out/$name.ko" ;;
            *.gz) gzip -dc "$path" >"$out/$name.ko" ;;
            *) cp "$path" "$out/$name.ko" ;;
        esac
        echo "$name.ko" >>"$out/order"
    }
    local module
    for module in "$@"; do
        add_module "$module"
    done
}

write_init() {
    cat >"$1/init" <<'EOF'
#!/bin/sh
# nvmekit e2e guest init: mounts the pseudo file systems, loads the NVMe modules, runs the test
# script (/e2e/run in the initramfs, or the path given by nvmekit.run= on the kernel command
# line), then powers off. The e2e test extends the initramfs with an overlay holding /e2e/run.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /tmp /run
mount -t devpts devpts /dev/pts
echo "nvmekit-e2e: init reached ($(uname -r))"
if [ -f /lib/modules/nvmekit/order ]; then
    while read -r module; do
        insmod "/lib/modules/nvmekit/$module" || echo "nvmekit-e2e: insmod $module failed"
    done </lib/modules/nvmekit/order
fi
run=/e2e/run
for arg in $(cat /proc/cmdline); do
    case $arg in nvmekit.run=*) run=${arg#nvmekit.run=} ;; esac
done
status=0
if [ -f "$run" ]; then
    sh "$run"
    status=$?
else
    echo "nvmekit-e2e: no $run; nothing to do"
fi
echo "nvmekit-e2e: exit status $status"
sync
poweroff -f
EOF
    chmod 0755 "$1/init"
}

# The kernel package linux-image-amd64 points at.
kernel_package() {
    apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}'
}

# What the guest tree is built from: the guest programs' versions, the kernel package and this
# script (it writes /init).
guest_stamp() {
    echo "$(dpkg-query -W -f='${Version}' busybox-static nvme-cli fio 2>/dev/null | tr '\n' ' ')" \
        "$1 $(sha256sum "$0" | cut -c1-16)"
}

step_guest() {
    mkdir -p "$guest_dir"
    local kernel_deb stamp
    kernel_deb=$(kernel_package)
    [ -n "$kernel_deb" ] || die "cannot resolve linux-image-amd64"
    stamp=$(guest_stamp "$kernel_deb")
    if [ -e "$guest_dir/initramfs.cpio.gz" ] && [ "$(cat "$guest_dir/.built" 2>/dev/null)" = "$stamp" ]; then
        log "guest already provisioned: $guest_dir"
        return 0
    fi

    local kernel_root=$guest_dir/kernel
    if [ ! -e "$kernel_root/.extracted" ] || [ "$(cat "$kernel_root/.extracted")" != "$kernel_deb" ]; then
        rm -rf "$kernel_root" "$guest_dir/deb"
        mkdir -p "$guest_dir/deb" "$kernel_root"
        (cd "$guest_dir/deb" && apt-get download -q -o APT::Sandbox::User=root "$kernel_deb")
        dpkg-deb -x "$guest_dir"/deb/*.deb "$kernel_root"
        echo "$kernel_deb" >"$kernel_root/.extracted"
    fi
    local vmlinuz config moddir
    vmlinuz=$(find "$kernel_root/boot" -name 'vmlinuz-*' | head -n 1)
    config=$(find "$kernel_root/boot" -name 'config-*' | head -n 1)
    moddir=$(find "$kernel_root/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -n 1)
    if [ -z "$vmlinuz" ] || [ -z "$config" ] || [ -z "$moddir" ]; then
        die "unexpected layout of $kernel_deb"
    fi
    cp "$vmlinuz" "$guest_dir/vmlinuz"

    local root=$guest_dir/rootfs
    rm -rf "$root"
    mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,etc,e2e,lib/modules}
    install -m 0755 /bin/busybox "$root/bin/busybox"
    local applet
    for applet in $("$root/bin/busybox" --list); do
        [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
    done
    copy_with_libs "$root" "$(command -v nvme)"
    copy_with_libs "$root" "$(command -v fio)"
    local modules=()
    grep -q '^CONFIG_BLK_DEV_NVME=m' "$config" && modules+=(nvme)
    grep -q '^CONFIG_NVME_CORE=m' "$config" && modules+=(nvme-core)
    [ ${#modules[@]} -eq 0 ] || copy_modules "$root" "$moddir" "${modules[@]}"
    write_init "$root"
    grep -E '^CONFIG_(BLK_DEV_NVME|NVME_CORE)=' "$config" >"$guest_dir/kernel-config-nvme"
    pack_initramfs "$guest_dir/initramfs.cpio.gz"
    echo "$stamp" >"$guest_dir/.built"
}

# pack_initramfs OUT [OVERLAY]: the base guest tree, plus the files of OVERLAY (which win), as a
# gzip'd newc cpio archive.
pack_initramfs() {
    local out=$1 overlay=${2:-}
    local tmp
    tmp=$(mktemp -d)
    cp -a "$guest_dir/rootfs/." "$tmp/"
    [ -z "$overlay" ] || cp -a "$overlay/." "$tmp/"
    (cd "$tmp" && find . -print0 | cpio --null -o -H newc --quiet --owner 0:0) | gzip -1 >"$out.part"
    mv "$out.part" "$out"
    rm -rf "$tmp"
}

write_env() {
    cat >"$e2e_dir/env.sh" <<EOF
# Written by tests/e2e/provision.sh; source it.
NVMEKIT_E2E_QEMU=$qemu_bin
NVMEKIT_E2E_FIRMWARE=$firmware_dir
NVMEKIT_E2E_KERNEL=$guest_dir/vmlinuz
NVMEKIT_E2E_INITRAMFS=$guest_dir/initramfs.cpio.gz
NVMEKIT_E2E_ROOTFS=$guest_dir/rootfs
NVMEKIT_E2E_OVMF_CODE=$ovmf_code
NVMEKIT_E2E_OVMF_VARS=$ovmf_vars
EOF
    local args=()
    mapfile -t args < <(qemu_base_args)
    printf 'NVMEKIT_E2E_QEMU_ARGS=(%s)\n' "$(printf '%q ' "${args[@]}")" >>"$e2e_dir/env.sh"
}

# QEMU arguments shared by the boot test and the e2e test: TCG, q35, guest RAM in a shareable
# memfd (a vfio-user server maps it), exit instead of reboot, and no default devices (VGA, NIC,
# the empty CD-ROM...): with them SeaBIOS spends about 30 s under TCG before it boots the
# kernel. The serial port is the console, on stdio.
qemu_base_args() {
    printf '%s\n' -machine q35,memory-backend=mem -accel tcg -cpu max -smp 2 -m 1G \
        -object memory-backend-memfd,id=mem,size=1G,share=on \
        -L "$firmware_dir" -nodefaults -display none -serial stdio -no-reboot \
        -kernel "$guest_dir/vmlinuz"
}

boot_test() {
    local initrd=$guest_dir/initramfs.cpio.gz out=$log_dir/boot-test.log
    if [ ! -x "$qemu_bin" ] || [ ! -e "$initrd" ]; then
        die "run provision.sh first"
    fi
    local args=()
    mapfile -t args < <(qemu_base_args)
    local start=$SECONDS
    timeout 120 "$qemu_bin" "${args[@]}" -initrd "$initrd" \
        -append 'console=ttyS0 panic=-1 quiet' </dev/null >"$out" 2>&1 \
        || { tail -n 30 "$out"; die "guest did not power off cleanly (see $out)"; }
    grep -q 'nvmekit-e2e: init reached' "$out" || { tail -n 30 "$out"; die "init did not run"; }
    grep -q 'nvmekit-e2e: exit status 0' "$out" || die "init did not finish"
    log "guest booted to init and powered off in $((SECONDS - start)) s (log: $out)"
}

# Prints, one a line, what provision_all would still have to make (nothing when everything is
# there and current) and fails if anything is missing. Changes nothing and needs no root.
check_all() {
    local missing=() packages config kernel_deb
    packages=$(missing_packages "${qemu_build_packages[@]}" "${firmware_packages[@]}" "${uefi_packages[@]}" \
        "${guest_packages[@]}")
    [ -z "$packages" ] || missing+=("host packages: ${packages//$'\n'/ }")
    meson_ok || missing+=("meson >= 1.5 (bookworm-backports)")
    config="$qemu_package_version ${qemu_configure_args[*]}"
    if [ ! -x "$qemu_bin" ] || [ "$(cat "$qemu_dir/.built" 2>/dev/null)" != "$config" ]; then
        missing+=("QEMU $qemu_package_version with the vfio-user client: $qemu_bin")
    fi
    [ -e "$firmware_dir/bios-256k.bin" ] || missing+=("firmware for -L: $firmware_dir/bios-256k.bin")
    [ -e "$ovmf_code" ] && [ -e "$ovmf_vars" ] || missing+=("OVMF (package ovmf): $ovmf_code, $ovmf_vars")
    kernel_deb=$(kernel_package)
    if [ -z "$kernel_deb" ]; then
        missing+=("the guest kernel package (apt-cache cannot resolve linux-image-amd64)")
    elif [ ! -e "$guest_dir/initramfs.cpio.gz" ] || [ ! -e "$guest_dir/vmlinuz" ] \
        || [ "$(cat "$guest_dir/.built" 2>/dev/null)" != "$(guest_stamp "$kernel_deb")" ]; then
        missing+=("guest kernel and initramfs ($kernel_deb, nvme-cli, fio): $guest_dir")
    fi
    [ -e "$e2e_dir/env.sh" ] || missing+=("$e2e_dir/env.sh")
    grep -q '^NVMEKIT_E2E_OVMF_CODE=' "$e2e_dir/env.sh" 2>/dev/null || missing+=("$e2e_dir/env.sh with OVMF")
    [ ${#missing[@]} -eq 0 ] || { printf '%s\n' "${missing[@]}"; return 1; }
}

provision_all() {
    local start=$SECONDS
    mkdir -p "$e2e_dir" "$log_dir"
    timed "host packages" step_packages
    timed "qemu" step_qemu
    timed "firmware" step_firmware
    timed "guest" step_guest
    write_env
    log "QEMU: $qemu_bin ($("$qemu_bin" --version | head -n 1))"
    log "firmware: $firmware_dir; kernel: $guest_dir/vmlinuz; initramfs: $guest_dir/initramfs.cpio.gz"
    log "environment for the e2e test: $e2e_dir/env.sh"
    log "done in $((SECONDS - start)) s"
}

case ${1:-all} in
    all) provision_all ;;
    packages) step_packages ;;
    qemu) step_qemu ;;
    firmware) step_firmware ;;
    guest) step_guest ;;
    pack)
        [ $# -eq 3 ] || die "usage: provision.sh pack OVERLAY OUT"
        pack_initramfs "$3" "$2"
        ;;
    boot-test) timed "boot test" boot_test ;;
    check) check_all ;;
    qemu-args) qemu_base_args ;;
    *) die "unknown command: $1 (all, packages, qemu, firmware, guest, pack, boot-test, qemu-args, check)" ;;
esac
