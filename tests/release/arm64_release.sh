#!/bin/bash
# arm64_release.sh BUILD: the arm64 release tarball's own test
# (test_release.sh) inside an arm64 guest: profd-VERSION-aarch64.tar.gz
# in minimal arm64 Debian 11 and 13 chroots with nothing but python3,
# booted with Debian 13's arm64 kernel (kernels/arm64_suite.sh).  BUILD is
# the arm64 cross build (build/arm64); what the guest needs is put under
# BUILD/release-arm64, which it sees at the same path:
#   dist/profd-VERSION-aarch64.tar.gz   packaging/release.sh DIR aarch64
#                                       (PROFD_RELEASE_TARBALL: that one)
#   chroots/SUITE-minbase-python3.tar.gz  the chroots test_release.sh takes
# The chroots are unpacked from Debian's arm64 packages of python3 and the
# essential tools the test calls (deb_fetch.sh: no maintainer script runs,
# so no debootstrap under emulation); the guest makes their loader cache.
#
# Exits as test_release.sh does in the guest; 77 (a skip) where the kernel
# or packages cannot be had.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
KERNELS=$SRC/tests/kernels
# python3 and what test_release.sh runs inside a chroot: sh, bash (ldd), tar (and
# gzip), ldd and ldconfig, /etc/os-release.
CHROOT_PACKAGES="python3 base-files bash dash coreutils tar gzip libc-bin grep sed"

fail() { echo "arm64_release: FAIL: $*" >&2; exit 1; }

# chroot_tarball SUITE OUT: the arm64 chroot of SUITE as OUT (once).
chroot_tarball() {
	local suite=$1 out=$2 root d
	[ -s "$out" ] && return 0
	# shellcheck disable=SC2086
	root=$("$KERNELS/deb_fetch.sh" "$suite" arm64 $CHROOT_PACKAGES)/root || exit $?
	# Merged /usr, as debootstrap makes it where the packages do not.
	for d in bin sbin lib; do
		[ -e "$root/$d" ] || [ ! -d "$root/usr/$d" ] || ln -s "usr/$d" "$root/$d"
	done
	mkdir -p "$root/tmp" "$root/proc" "$root/sys" "$root/dev" "$root/opt"
	chmod 1777 "$root/tmp"
	tar -C "$root" --numeric-owner -czf "$out.part" . && mv "$out.part" "$out" ||
		fail "cannot write $out"
}

main() {
	local build=${1:-} out tarball suite
	[ -n "$build" ] || { echo "usage: $0 BUILD" >&2; exit 2; }
	build=$(cd "$build" && pwd)
	out=$build/release-arm64
	mkdir -p "$out/dist" "$out/chroots"
	if [ -n "${PROFD_RELEASE_TARBALL:-}" ]; then
		cp "$PROFD_RELEASE_TARBALL" "$out/dist/"
		tarball=$out/dist/$(basename "$PROFD_RELEASE_TARBALL")
	else
		rm -f "$out"/dist/profd-*-aarch64.tar.gz
		"$SRC/packaging/release.sh" "$out/dist" aarch64 >"$out/release.log" 2>&1 ||
			{ tail -n 30 "$out/release.log" >&2; fail "packaging/release.sh failed"; }
		tarball=$(ls "$out"/dist/profd-*-aarch64.tar.gz)
	fi
	for suite in bullseye trixie; do
		chroot_tarball "$suite" "$out/chroots/$suite-minbase-python3.tar.gz"
	done
	PROFD_RELEASE_TARBALL=$tarball PROFD_CHROOT_CACHE=$out/chroots \
		KERNEL_BOOT_ENV="SRC PROFD_RELEASE_TARBALL PROFD_CHROOT_CACHE PROFD_RELEASE_SUITES" \
		exec "$KERNELS/arm64_suite.sh" trixie "$build" -- bash "$HERE/test_release.sh"
}

main "$@"
