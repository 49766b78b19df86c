#!/bin/bash
# arm64_suite.sh SUITE BUILD [TEST... | -- CMD...]: the kernel matrix's guest tests
# (guest_suite.sh: the end-to-end scripts themselves) inside Debian's
# arm64 kernel of SUITE under qemu-system-aarch64 (TCG), run by the
# cross build in BUILD (cmake/aarch64-linux-gnu.cmake, its workloads
# included).  The host's programs cannot run in the guest, so its root is
# an arm64 userland unpacked from Debian 12's packages (deb_fetch.sh: a
# shell, coreutils, python3.11, bpftool, gcc for the tests that build
# their programs, and the C library's and python3.11's debug symbols, as
# packaging/setup.sh installs them on the host) with this checkout and
# BUILD shown inside at their own paths (kernel_boot.sh's
# KERNEL_BOOT_ROOT and KERNEL_BOOT_BIND).  TESTs default to GUEST_TESTS,
# then to guest_suite.sh's list; "-- CMD..." runs CMD there instead
# (tests/release/arm64_release.sh).
#
# Exits as kernel_boot.sh does: the suite's status, 77 (a skip) only where
# the kernel or the packages cannot be had (offline).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
# What the end-to-end scripts call (tests/e2e/lib.sh and the tests in the
# guest list), as Debian 12 packages them for arm64.
PACKAGES="bash dash coreutils mawk grep sed findutils diffutils procps util-linux mount tar gzip libc-bin
python3 python3.11 python3.11-dbg libc6-dbg bpftool gcc libc6-dev binutils libbpf1 libelf1 libdw1 zlib1g libsqlite3-0 libcurl4"

fail() { echo "arm64_suite: FAIL: $*" >&2; exit 1; }

main() {
	local suite=${1:-} build=${2:-} userland f
	[ -n "$suite" ] && [ -n "$build" ] || { echo "usage: $0 SUITE BUILD [TEST... | -- CMD...]" >&2; exit 2; }
	shift 2
	build=$(cd "$build" && pwd)
	for f in profd profctl tests/workloads/c_sleep; do
		readelf -h "$build/$f" 2>/dev/null | grep -q AArch64 || fail "$build/$f is not an arm64 build"
	done
	# shellcheck disable=SC2086
	userland=$("$HERE/deb_fetch.sh" bookworm arm64 $PACKAGES) || exit $?
	# What the packages' maintainer scripts would have made (the update-
	# alternatives links): the tests call awk and cc.
	ln -sfn mawk "$userland/root/usr/bin/awk"
	ln -sfn gcc "$userland/root/usr/bin/cc"
	# Debian's other arm64 CPythons, one per frame layout with 3.11
	# (pythons.sh): unpacked here, where apt and patchelf are; the
	# guest finds them in BUILD.  Offline: said, and left out there.
	PROFD_TEST_DEBIAN_PYTHONS="9@bullseye 13@trixie 14 15"
	# shellcheck disable=SC2086
	PYTHONS_ARCH=arm64 "$SRC/tests/e2e/get_debian_pythons.sh" "$build/debian-pythons" \
		$PROFD_TEST_DEBIAN_PYTHONS >/dev/null || true
	export PROFD_TEST_DEBIAN_PYTHONS
	# The C programs the tests build, built here by the cross compiler
	# (e2e/programs.sh): gcc under TCG takes about 10 s a file.
	CC=aarch64-linux-gnu-gcc bash "$SRC/tests/e2e/programs.sh" "$build/guest-programs" ||
		fail "cross-building the tests' programs"
	export PROFD_TEST_PROGRAMS=$build/guest-programs
	local cmd=(bash "$SRC/tests/kernels/guest_suite.sh")
	if [ "${1:-}" = -- ]; then
		shift
		cmd=("$@")
	elif [ $# -gt 0 ]; then
		GUEST_TESTS="$*"
	fi
	export GUEST_TESTS
	KERNEL_ARCH=arm64 KERNEL_BOOT_ROOT=$userland/root KERNEL_BOOT_BIND="$SRC $build" \
		BUILD=$build SRC=$SRC CC=cc \
		exec "$HERE/kernel_boot.sh" "$suite" "${cmd[@]}"
}

main "$@"
