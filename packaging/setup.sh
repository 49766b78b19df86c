#!/bin/sh
# Install profd's build and test dependencies from Debian 12's own packages,
# then configure and build into build/.  Idempotent: apt runs only when a
# package is missing.  Run as root on a fresh Debian 12 machine.
set -eu

cd "$(dirname "$0")/.."

PACKAGES="build-essential cmake pkg-config clang llvm libbpf-dev libelf-dev zlib1g-dev
bpftool libdw-dev libcmocka-dev libsqlite3-dev libcurl4-openssl-dev python3 python3-jsonschema chromium
golang-go protobuf-compiler binutils adduser libclang-rt-14-dev patchelf python3-torch
qemu-system-x86 busybox-static cpio xz-utils zstd debootstrap debuginfod python3.11-dbg
kmod curl git man-db systemd libc6-dbg openmpi-bin python3-mpi4py"
# Node.js and npm (the viewers' own code for test_gecko and test_trace):
# Debian's, unless the machine already has an npm of its own.
command -v npm >/dev/null 2>&1 || PACKAGES="$PACKAGES nodejs npm"
# arm64: the cross build (cmake/aarch64-linux-gnu.cmake) with Debian's arm64
# -dev packages beside the amd64 ones (multiarch), and the arm64 guest.
PACKAGES="$PACKAGES crossbuild-essential-arm64 qemu-system-arm libbpf-dev:arm64 libelf-dev:arm64
libdw-dev:arm64 zlib1g-dev:arm64 libsqlite3-dev:arm64 libcurl4-openssl-dev:arm64 libcmocka-dev:arm64"
if [ "$(id -u)" = 0 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
	dpkg --add-architecture arm64 # apt-get update below: the :arm64 packages are missing
fi

# installed PKG: the native (or Architecture: all) package, or the one of
# the architecture named (PKG:arm64).  Not dpkg -s: it refuses a name
# installed for two architectures (the multiarch -dev packages).
installed() {
	case $1 in
	*:*) q=$1 ;;
	*) q="$1:$(dpkg --print-architecture)" ;;
	esac
	dpkg-query -W -f='${db:Status-Status}\n' "$q" 2>/dev/null | grep -qx installed ||
		dpkg-query -W -f='${Architecture} ${db:Status-Status}\n' "$1" 2>/dev/null | grep -qx 'all installed'
}

missing=""
for p in $PACKAGES; do
	installed "$p" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "setup: missing packages:$missing (run as root to install them)" >&2
		exit 1
	fi
	echo "setup: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# The Firefox Profiler's own import code, which e2e.test_gecko loads its
# files into: fetched once here, where the tests may later run offline.
PQ_DIR=/var/cache/profd-tests/profiler-cli
if [ "$(id -u)" = 0 ] &&
	[ ! -f "$PQ_DIR/node_modules/@firefox-devtools/profiler-cli/dist/profiler-cli.js" ]; then
	mkdir -p "$PQ_DIR"
	npm install --silent --prefix "$PQ_DIR" @firefox-devtools/profiler-cli >/dev/null ||
		echo "setup: could not install @firefox-devtools/profiler-cli (test_gecko will try)" >&2
fi

# speedscope, which e2e.test_trace opens its Trace Event Format files in
# (headless chromium, offline): installed here for the same reason.
SS_DIR=/var/cache/profd-tests/speedscope
if [ "$(id -u)" = 0 ] &&
	[ ! -f "$SS_DIR/node_modules/speedscope/dist/release/index.html" ]; then
	mkdir -p "$SS_DIR"
	npm install --silent --prefix "$SS_DIR" speedscope >/dev/null ||
		echo "setup: could not install speedscope (test_trace will try)" >&2
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
