#!/bin/bash
# deb_fetch.sh SUITE ARCH PKG...: download Debian packages of another
# architecture (or suite) and unpack them, without installing anything on
# the host, into a cached tree; print its directory.  The guests' foreign
# userland (busybox, libraries for arm64 guests) comes from here.  The
# packages and what they depend on (Depends, Pre-Depends, recursively)
# are fetched through a private apt setup (private_apt.sh) and unpacked
# with dpkg-deb -x: no maintainer script runs.  The tree is cached by
# suite, architecture and the package list asked for.  Exits 77
# (a skip) with the reason printed when the packages cannot be had.
set -euo pipefail

CACHE=${PROFD_KERNEL_CACHE:-/var/cache/profd/kernels}

log() { echo "deb_fetch: $*" >&2; }
skip() { log "SKIP: $*"; exit 77; }

. "$(dirname "$0")/private_apt.sh"

# closure APTDIR PKG...: the packages and everything they need, one a
# line (virtual packages, shown <so>, are satisfied by a real one listed).
closure() {
	local apt=$1; shift
	private_apt "$apt" apt-cache depends --recurse --no-recommends --no-suggests \
		--no-conflicts --no-breaks --no-replaces --no-enhances "$@" |
		grep '^[a-z0-9]' | sort -u
}

# fetch OUT PKG...: download and unpack the packages into OUT/root.
fetch() {
	local out=$1 apt=$CACHE/apt-$SUITE-$APT_ARCH mirror deb; shift
	mirror=$(host_mirror)
	[ -n "$mirror" ] || skip "no Debian mirror found in the host's apt sources"
	command -v dpkg-deb >/dev/null || skip "dpkg-deb missing"
	mkdir -p "$apt/state/lists/partial" "$apt/cache/archives/partial"
	: >"$apt/status"
	echo "deb $mirror $SUITE main" >"$apt/sources.list"
	# Lists younger than a day are reused: a test run fetches nothing.
	if [ -z "$(find "$apt/state/lists" -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null)" ]; then
		private_apt "$apt" apt-get update >&2 || skip "apt-get update for $SUITE/$APT_ARCH failed (offline?)"
	fi
	TMP=$(mktemp -d "$CACHE/.tmp-debs.XXXXXX")
	trap 'rm -rf "$TMP"' EXIT
	closure "$apt" "$@" >"$TMP/all" || skip "apt-cache depends $* failed"
	# shellcheck disable=SC2046
	(cd "$TMP" && private_apt "$apt" apt-get download $(cat all) >&2) ||
		skip "apt-get download $(tr '\n' ' ' <"$TMP/all") failed"
	mkdir -p "$TMP/out/root"
	for deb in "$TMP"/*.deb; do dpkg-deb -x "$deb" "$TMP/out/root"; done
	printf '%s\n' "$@" >"$TMP/out/packages"
	rm -rf "$out"
	mv "$TMP/out" "$out"
}

main() {
	[ $# -ge 3 ] || { echo "usage: $0 SUITE ARCH PKG..." >&2; exit 2; }
	SUITE=$1 APT_ARCH=$2
	shift 2
	local key out
	key=$(printf '%s\n' "$@" | sort | md5sum | cut -c1-12)
	out=$CACHE/debs-$SUITE-$APT_ARCH-$key
	# Cached: the package list is written last, inside the moved directory.
	if [ -f "$out/packages" ]; then echo "$out"; return; fi
	mkdir -p "$CACHE" 2>/dev/null || skip "cannot create the cache $CACHE"
	fetch "$out" "$@"
	log "$SUITE/$APT_ARCH: $* in $out"
	echo "$out"
}

main "$@"
