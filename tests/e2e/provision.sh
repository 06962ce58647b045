#!/usr/bin/env bash
# Provisions what the end-to-end test needs, outside the repository: a QEMU with the vfio-user
# client built from Debian's source package, a Debian 12 guest kernel with a busybox initramfs
# holding nvme-cli and fio, and the firmware directory for -L. Idempotent: a step whose result is
# already there is skipped. Debian 12, as root. Packages and sources come from the Debian mirror
# this machine's apt already uses (read from its apt sources). See tests/e2e/README.md.
#
#   provision.sh [all]                 everything below, then writes $NVMEKIT_E2E_DIR/env.sh
#   provision.sh packages|qemu|guest|firmware
#   provision.sh pack OVERLAY OUT      initramfs = base guest tree + OVERLAY directory, to OUT
#   provision.sh boot-test             boots the base initramfs once under TCG and checks /init ran
#   provision.sh qemu-args             prints the common QEMU arguments, one a line
#   provision.sh mirror                prints the Debian mirror read from the apt sources
#   provision.sh check                 prints what is missing or out of date, one a line; fails
#                                      if anything is (changes nothing, needs no root)
set -euo pipefail

e2e_dir=${NVMEKIT_E2E_DIR:-/var/tmp/nvmekit-e2e}
# The Debian version of the source package qemu to build: NVMEKIT_QEMU_VERSION, or else the
# highest version the suite below lists whose files the mirror serves (fetch_qemu_source), which
# must be $qemu_min_upstream or later: the first QEMU with the vfio-user client.
qemu_version_override=${NVMEKIT_QEMU_VERSION:-}
qemu_min_upstream=10.1
qemu_suite=${NVMEKIT_QEMU_SUITE:-unstable}
jobs=${NVMEKIT_E2E_JOBS:-2}
# The Debian mirror: NVMEKIT_DEBIAN_MIRROR, or else read from this machine's apt sources when
# first needed (debian_mirror); `check` never needs it.
mirror=${NVMEKIT_DEBIAN_MIRROR:-}
# The apt sources file this script writes (apt_sources); never read as the machine's own.
own_sources=/etc/apt/sources.list.d/nvmekit-e2e.sources

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

# apt_source_entries: "TYPE URI SUITE" for every suite of every enabled entry of this machine's
# apt sources, in the order apt reads them: /etc/apt/sources.list, then the files of
# /etc/apt/sources.list.d in name order, one-line .list files and deb822 .sources files alike
# (the file this script writes left out).
apt_source_entries() {
    local file
    local files=()
    [ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
    while IFS= read -r file; do
        [ "$file" = "$own_sources" ] || files+=("$file")
    done < <(find /etc/apt/sources.list.d -maxdepth 1 -type f \( -name '*.list' -o -name '*.sources' \) \
        2>/dev/null | LC_ALL=C sort)
    for file in "${files[@]}"; do
        case $file in
            *.sources)
                # deb822 stanzas, separated by blank lines; field names in any case; comment
                # lines skipped; the first URI of a stanza's URIs
                awk '
                    function flush() {
                        if (types != "" && uri != "" && tolower(enabled) != "no") {
                            nt = split(types, t, " "); ns = split(suites, s, " ")
                            for (i = 1; i <= nt; i++) for (j = 1; j <= ns; j++) print t[i], uri, s[j]
                        }
                        types = uri = suites = enabled = ""
                    }
                    /^[ \t]*$/ { flush(); next }
                    /^#/ { next }
                    /^[A-Za-z-]+:/ {
                        key = tolower(substr($0, 1, index($0, ":") - 1))
                        value = substr($0, index($0, ":") + 1)
                        if (key == "types") types = value
                        else if (key == "uris") { split(value, u, " "); uri = u[1] }
                        else if (key == "suites") suites = value
                        else if (key == "enabled") { gsub(/[ \t]/, "", value); enabled = value }
                    }
                    END { flush() }
                ' "$file"
                ;;
            *)
                # one-line entries: TYPE [OPTIONS] URI SUITE COMPONENT...
                awk '
                    { sub(/#.*/, "") }
                    $1 == "deb" || $1 == "deb-src" {
                        i = 2
                        if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                        if (i + 1 <= NF) print $1, $(i), $(i + 1)
                    }
                ' "$file"
                ;;
        esac
    done
}

# apt_archive_mirrors: the URIs (no trailing slash), first one first, of the Debian archive
# entries of this machine's apt sources: deb or deb-src entries of this release's own suites
# (its codename from /etc/os-release, with -updates or -backports) or of Debian's suite names;
# security entries (a -security suite, or a URI ending in -security) are not the archive.
apt_archive_mirrors() {
    local codename=''
    codename=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null | tr -d '"')
    apt_source_entries | awk -v codename="$codename" '
        $1 != "deb" && $1 != "deb-src" { next }
        $3 ~ /-security$/ || $2 ~ /-security\/*$/ || $2 ~ /^cdrom:/ { next }
        {
            suite = $3; sub(/-(updates|backports)$/, "", suite)
            if ((codename != "" && suite == codename) || suite ~ /^(oldoldstable|oldstable|stable|testing|unstable|sid)$/) {
                uri = $2; sub(/\/+$/, "", uri)
                if (!(uri in seen)) { seen[uri] = 1; print uri }
            }
        }
    '
}

# debian_mirror: sets mirror, unless NVMEKIT_DEBIAN_MIRROR did, to the first Debian archive URI of
# this machine's apt sources; fails when there is none.
debian_mirror() {
    [ -z "$mirror" ] || return 0
    mirror=$(apt_archive_mirrors | awk 'NR == 1')
    [ -n "$mirror" ] || die "no Debian archive entry (deb URI SUITE for this release, not -security) in" \
        "/etc/apt/sources.list or /etc/apt/sources.list.d/*.{list,sources} (${own_sources##*/} not counted);" \
        "add one, or set NVMEKIT_DEBIAN_MIRROR to a Debian mirror's URI"
}

# bookworm-backports (binary, for meson >= 1.5; NotAutomatic, so nothing else is taken from it)
# and the source index of $qemu_suite, from the machine's mirror, in a file of their own.
apt_sources() {
    debian_mirror
    local file=$own_sources
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
    for file in $(dsc_files "$dsc.part"); do
        curl -fsSL -o "$file" "$base/$file" || return 1
    done
    mv "$dsc.part" "$dsc"
}

# qemu_version_ok VERSION: whether the Debian version VERSION of qemu is upstream
# $qemu_min_upstream or later (its release candidates included)
qemu_version_ok() {
    local upstream=${1#*:}
    upstream=${upstream%-*}
    dpkg --compare-versions "$upstream" ge "$qemu_min_upstream~"
}

# built_qemu: the Debian version of the QEMU in $qemu_dir when it can be used as it is (the
# binary there, built with this configuration, of the version NVMEKIT_QEMU_VERSION names, or
# else of any version with the vfio-user client), nothing otherwise. Reads only what the build
# recorded in $qemu_dir/.built: no network, no root; a newer version in the mirror does not make
# a finished build out of date.
built_qemu() {
    local version='' args=''
    [ -x "$qemu_bin" ] && [ -r "$qemu_dir/.built" ] || return 0
    read -r version args <"$qemu_dir/.built" || true
    [ -n "$version" ] && [ "$args" = "${qemu_configure_args[*]}" ] || return 0
    if [ -n "$qemu_version_override" ]; then
        [ "$version" = "$qemu_version_override" ] || return 0
    else
        qemu_version_ok "$version" || return 0
    fi
    echo "$version"
}

# qemu_source_versions: NVMEKIT_QEMU_VERSION, or else every version of the source package qemu
# in the source indexes (apt-cache showsrc, after apt_sources added $qemu_suite's) that has the
# vfio-user client, highest first; fails if there is none.
qemu_source_versions() {
    if [ -n "$qemu_version_override" ]; then
        echo "$qemu_version_override"
        return 0
    fi
    local version listed=() versions=()
    mapfile -t listed < <(apt-cache showsrc qemu 2>/dev/null \
        | awk '/^Package: / { source = ($2 == "qemu") } source && /^Version: / { print $2 }')
    for version in "${listed[@]}"; do
        qemu_version_ok "$version" && versions+=("$version")
    done
    [ ${#versions[@]} -ne 0 ] || die "no qemu source version $qemu_min_upstream or later (vfio-user client) in the" \
        "source indexes (the $qemu_suite one of $mirror lists: ${listed[*]:-none}); set NVMEKIT_QEMU_VERSION or NVMEKIT_QEMU_SUITE"
    printf '%s\n' "${versions[@]}" | awk '!seen[$0]++' | sort_versions
}

# sort_versions: the Debian versions on standard input, highest first (insertion, in dpkg's order)
sort_versions() {
    local sorted=() version i
    while read -r version; do
        i=${#sorted[@]}
        while [ "$i" -gt 0 ] && dpkg --compare-versions "$version" gt "${sorted[$((i - 1))]}"; do
            sorted[i]=${sorted[$((i - 1))]}
            i=$((i - 1))
        done
        sorted[i]=$version
    done
    [ ${#sorted[@]} -eq 0 ] || printf '%s\n' "${sorted[@]}"
}

# dsc_files DSC: the files the source package description DSC lists (its Files: field)
dsc_files() {
    awk '/^Files:/ { f = 1; next } /^[^ ]/ { f = 0 } f { print $3 }' "$1"
}

# dsc_complete DSC: whether DSC and every file it lists are in the current directory
dsc_complete() {
    local file
    [ -e "$1" ] || return 1
    for file in $(dsc_files "$1"); do
        [ -e "$file" ] || return 1
    done
}

# download_qemu_source VERSION: the .dsc of source version VERSION of qemu and the files it
# lists, into the current directory: apt-get source, or else from the mirror's pool. Fails when
# the mirror serves neither.
download_qemu_source() {
    local version=$1
    local dsc=qemu_${version#*:}.dsc
    dsc_complete "$dsc" && return 0
    apt-get source --download-only -q -o APT::Sandbox::User=root "qemu=$version" \
        || { log "apt-get source qemu=$version failed; trying the pool" \
            && fetch_from_pool "$dsc" "$mirror/pool/main/q/qemu"; } \
        || return 1
    dsc_complete "$dsc"
}

# Fetches and unpacks the source package into $qemu_dir/src, its version in
# $qemu_dir/src/.nvmekit-version: NVMEKIT_QEMU_VERSION, or else the highest version in the
# source index with the vfio-user client whose files the mirror serves (an index may still list
# versions whose files are gone); a source of that version already unpacked is kept.
# dpkg-source checks every file against the .dsc's checksums.
fetch_qemu_source() {
    apt_sources
    local work=$qemu_dir/fetch version chosen='' versions=()
    mapfile -t versions < <(qemu_source_versions)
    [ ${#versions[@]} -ne 0 ] || die "no qemu source version to fetch"
    mkdir -p "$work"
    for version in "${versions[@]}"; do
        if [ "$(cat "$qemu_dir/src/.nvmekit-version" 2>/dev/null)" = "$version" ]; then
            log "qemu $version source already unpacked"
            return 0
        fi
        if (cd "$work" && download_qemu_source "$version"); then
            chosen=$version
            break
        fi
        log "the mirror does not serve qemu $version; trying the next version"
    done
    [ -n "$chosen" ] || die "could not fetch any of the qemu source versions ${versions[*]}" \
        "(suite $qemu_suite, then the pool of $mirror)"
    log "qemu source version: $chosen"
    (
        cd "$work"
        rm -rf src.tmp
        dpkg-source -x "qemu_${chosen#*:}.dsc" src.tmp
    )
    rm -rf "$qemu_dir/src"
    mv "$work/src.tmp" "$qemu_dir/src"
    echo "$chosen" >"$qemu_dir/src/.nvmekit-version"
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
    local built
    built=$(built_qemu)
    if [ -n "$built" ]; then
        log "QEMU $built already built: $qemu_bin"
        return 0
    fi
    timed "fetch qemu source" fetch_qemu_source
    local qemu_package_version
    qemu_package_version=$(cat "$qemu_dir/src/.nvmekit-version")
    local config="$qemu_package_version ${qemu_configure_args[*]}"
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

# What the guest tree is built from: the guest programs' versions, the kernel package and the
# functions of this script that build the tree (one writes /init); other changes to the script
# leave the guest as it is.
guest_stamp() {
    echo "$(dpkg-query -W -f='${Version}' busybox-static nvme-cli fio 2>/dev/null | tr '\n' ' ')" \
        "$1 $(declare -f step_guest write_init copy_with_libs copy_modules | sha256sum | cut -c1-16)"
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
    local missing=() packages kernel_deb
    packages=$(missing_packages "${qemu_build_packages[@]}" "${firmware_packages[@]}" "${uefi_packages[@]}" \
        "${guest_packages[@]}")
    [ -z "$packages" ] || missing+=("host packages: ${packages//$'\n'/ }")
    meson_ok || missing+=("meson >= 1.5 (bookworm-backports)")
    if [ -z "$(built_qemu)" ]; then
        missing+=("QEMU ${qemu_version_override:-$qemu_min_upstream or later} with the vfio-user client, built with ${qemu_configure_args[*]}: $qemu_bin")
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
    mirror)
        debian_mirror
        echo "$mirror"
        ;;
    *) die "unknown command: $1 (all, packages, qemu, firmware, guest, pack, boot-test, qemu-args, check, mirror)" ;;
esac
