#!/bin/bash
# kernel_fetch.sh SUITE: fetch Debian's signed generic kernel (amd64, or
# arm64 with KERNEL_ARCH=arm64; another flavour of that architecture,
# such as arm64-16k, with KERNEL_FLAVOUR) for a Debian suite (bullseye = 5.10,
# bookworm = 6.1, trixie = 6.12) into the kernel cache and print the
# directory that holds it:
#   DIR/vmlinuz  DIR/version  DIR/config  DIR/modules/{modules.dep,kernel/...}
# Only the module directories a guest needs to reach the host's root over
# virtio-9p are kept (a whole module tree is ~400 MB per kernel).
#
# The package comes from Debian's archive through a private apt setup
# (its own sources list, lists and cache under the kernel cache), so the
# host's apt state is neither read nor changed; the mirror is the one the
# host's own sources name.  Exits 77 (a skip) with the reason printed when
# the kernel cannot be had.
set -euo pipefail

CACHE=${PROFD_KERNEL_CACHE:-/var/cache/profd/kernels}
APT_ARCH=${KERNEL_ARCH:-amd64}
FLAVOUR=${KERNEL_FLAVOUR:-$APT_ARCH}
# Module directories kept: 9p and its netfs/fscache, overlayfs, virtio.
KEEP_MODULES="kernel/fs kernel/net/9p kernel/drivers/virtio kernel/lib kernel/crypto"

log() { echo "kernel_fetch: $*" >&2; }
skip() { log "SKIP: $*"; exit 77; }
# A tool that packaging/setup.sh installs is missing: a failure, not a skip.
missing() { log "FAIL: $1 is missing (packaging/setup.sh installs package $2)"; exit 1; }

. "$(dirname "$0")/private_apt.sh"

# fetch SUITE OUT: download and unpack the kernel into OUT.
fetch() {
	local suite=$1 out=$2 apt=$CACHE/apt-$1$APT_SUFFIX mirror pkg ver deb
	mirror=$(host_mirror)
	[ -n "$mirror" ] || skip "no Debian mirror found in the host's apt sources"
	command -v dpkg-deb >/dev/null || missing dpkg-deb dpkg
	mkdir -p "$apt/state/lists/partial" "$apt/cache/archives/partial"
	: >"$apt/status"
	echo "deb $mirror $suite main" >"$apt/sources.list"
	log "apt-get update for $suite from the host's mirror"
	private_apt "$apt" apt-get update >&2 || skip "apt-get update for $suite failed (offline?)"
	# The metapackage names the current ABI: Depends: linux-image-X-amd64 (= ...).
	pkg=$(private_apt "$apt" apt-cache show "linux-image-$FLAVOUR" |
		sed -n "s/^Depends:.*\\(linux-image-[0-9][^ ,]*-$FLAVOUR\\).*/\\1/p" | head -n1)
	[ -n "$pkg" ] || skip "linux-image-$FLAVOUR in $suite names no kernel package"
	ver=${pkg#linux-image-}
	log "$suite: $pkg"
	TMP=$(mktemp -d "$CACHE/.tmp-$suite.XXXXXX")
	trap 'rm -rf "$TMP"' EXIT # also on a skip
	(cd "$TMP" && private_apt "$apt" apt-get download "$pkg" >&2) || skip "apt-get download $pkg failed"
	deb=$(ls "$TMP"/*.deb)
	dpkg-deb -x "$deb" "$TMP/root"
	unpack "$TMP/root" "$ver" "$TMP/kernel"
	rm -rf "$out"
	mv "$TMP/kernel" "$out"
}

# unpack ROOT VER OUT: vmlinuz, config and the kept modules from an
# unpacked package (modules under /lib or, merged-/usr, /usr/lib).  The
# package ships no modules.dep (its postinst makes it): depmod makes it
# here, on the whole tree, before the tree is pared down.
unpack() {
	local root=$1 ver=$2 out=$3 mods=$1/lib/modules/$2 d
	if [ ! -d "$mods" ] && [ -d "$root/usr/lib/modules/$ver" ]; then
		mkdir -p "$root/lib/modules"
		mv "$root/usr/lib/modules/$ver" "$mods"
	fi
	[ -f "$root/boot/vmlinuz-$ver" ] && [ -d "$mods" ] || skip "package for $ver lacks vmlinuz or modules"
	command -v depmod >/dev/null || PATH=$PATH:/sbin:/usr/sbin
	command -v depmod >/dev/null || missing depmod kmod
	depmod -b "$root" "$ver" || { log "FAIL: depmod failed for $ver"; exit 1; }
	mkdir -p "$out/modules"
	cp "$root/boot/vmlinuz-$ver" "$out/vmlinuz"
	cp "$root/boot/config-$ver" "$out/config" 2>/dev/null || true
	cp "$mods"/modules.dep "$mods"/modules.builtin "$out/modules/"
	for d in $KEEP_MODULES; do
		[ -d "$mods/$d" ] || continue
		mkdir -p "$out/modules/$(dirname "$d")"
		cp -a "$mods/$d" "$out/modules/$d"
	done
	echo "$ver" >"$out/version"
}

main() {
	local suite=${1:-} out
	case $suite in
	bullseye | bookworm | trixie) ;;
	*) echo "usage: $0 bullseye|bookworm|trixie" >&2; exit 2 ;;
	esac
	# amd64 keeps the cache's first layout (CACHE/SUITE); others add
	# -ARCH (apt's state) and -FLAVOUR (the kernel).
	[ "$APT_ARCH" = amd64 ] && APT_SUFFIX= || APT_SUFFIX=-$APT_ARCH
	[ "$FLAVOUR" = amd64 ] && ARCH_SUFFIX= || ARCH_SUFFIX=-$FLAVOUR
	out=$CACHE/$suite$ARCH_SUFFIX
	# Cached: the version file is written last, inside the moved directory.
	if [ -f "$out/version" ]; then echo "$out"; return; fi
	mkdir -p "$CACHE" 2>/dev/null || skip "cannot create the kernel cache $CACHE"
	fetch "$suite" "$out"
	log "$suite: $(cat "$out/version") in $out"
	echo "$out"
}

main "$@"
