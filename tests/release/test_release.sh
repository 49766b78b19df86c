#!/bin/bash
# release.bundle: the portable tarball (packaging/release.sh) runs where
# nothing of profd's is installed.  In minimal Debian 11 (glibc 2.31) and
# Debian 13 (glibc 2.41) chroots, made with debootstrap --variant=minbase
# and python3 only (no compiler, no libbpf, libelf or libcurl), the
# unpacked bundle's profd samples a Python workload, profctl dumps its
# <module> -> outer -> inner stack with lines, stats answers, and profd
# stops cleanly on SIGTERM.
#
#   PROFD_RELEASE_TARBALL   use this tarball instead of building one
#   PROFD_CHROOT_CACHE      where the chroots are kept as tarballs
#                           (default /var/cache/profd/chroots); the first
#                           run fetches them, later runs only unpack them
#   PROFD_RELEASE_SUITES    default "bullseye trixie"
#
# The bundle and the chroots are this machine's architecture's (uname
# -m): an arm64 guest runs it with an aarch64 tarball and arm64 chroots
# made on its host (tests/release/arm64_release.sh).
#
# The Debian mirror is the host's own (its apt sources).  Exits 77 (CTest
# skip) with the reason where it cannot run: not root, no debootstrap, no
# mirror, a fetch that fails, or a machine that refuses BPF.
set -u

SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
CACHE=${PROFD_CHROOT_CACHE:-/var/cache/profd/chroots}
SUITES=${PROFD_RELEASE_SUITES:-bullseye trixie}
T=$(mktemp -d /tmp/profd-release.XXXXXX)
MOUNTS=()
PIDS=()

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

cleanup() {
	local i p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null
	done
	# Only after every mount is gone: rm must never reach the host's /dev.
	if ! grep -q " $T/" /proc/self/mounts; then
		rm -rf "$T"
	else
		echo "release: mounts left under $T, not removed" >&2
	fi
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || skip "needs root (chroot, mounts, BPF); running as uid $(id -u)"
ARCH=$(uname -m) # the bundle's name for it, and the multiarch directory's

# The host's Debian mirror, from its apt sources (deb822 first).
mirror() {
	local f=/etc/apt/sources.list.d/debian.sources u
	if [ -f "$f" ]; then
		u=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f")
		[ -n "$u" ] && { echo "$u"; return; }
	fi
	[ -f /etc/apt/sources.list ] &&
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\//) { if ($i !~ /security/) { print $i; exit } break } }' /etc/apt/sources.list
}

# chroot_tarball SUITE: the cached minimal chroot of SUITE, made once.
chroot_tarball() {
	local suite=$1 cached="$CACHE/$1-minbase-python3.tar.gz" m dir
	if [ -s "$cached" ]; then
		echo "$cached"
		return 0
	fi
	command -v debootstrap >/dev/null ||
		{ echo "debootstrap is not installed (packaging/setup.sh installs it)" >"$T/why"; return 1; }
	m=$(mirror)
	[ -n "$m" ] || { echo "no Debian mirror in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list" >"$T/why"; return 1; }
	dir="$T/boot-$suite"
	echo "release: debootstrap --variant=minbase --include=python3 $suite from $m (once; cached in $CACHE)" >&2
	if ! debootstrap --variant=minbase --include=python3 "$suite" "$dir" "$m" >"$T/debootstrap-$suite.log" 2>&1; then
		{ echo "debootstrap of $suite from $m failed:"; tail -n 5 "$T/debootstrap-$suite.log"; } >"$T/why"
		rm -rf "$dir"
		return 1
	fi
	mkdir -p "$CACHE" || { echo "cannot create $CACHE" >"$T/why"; return 1; }
	# Without the downloaded .debs and package lists: half the size.
	tar -C "$dir" --numeric-owner --exclude='./var/cache/apt/archives/*.deb' \
		--exclude='./var/lib/apt/lists/*_*' -czf "$cached.tmp.$$" . && mv "$cached.tmp.$$" "$cached" ||
		{ rm -f "$cached.tmp.$$"; echo "cannot write $cached" >"$T/why"; return 1; }
	rm -rf "$dir"
	echo "$cached"
}

# The tarball under test.
if [ -n "${PROFD_RELEASE_TARBALL:-}" ]; then
	TARBALL=$PROFD_RELEASE_TARBALL
	[ -f "$TARBALL" ] || fail "PROFD_RELEASE_TARBALL=$TARBALL does not exist"
else
	start=$SECONDS
	"$SRC/packaging/release.sh" "$T/dist" "$ARCH" >"$T/release.log" 2>&1 ||
		{ tail -n 30 "$T/release.log" >&2; fail "packaging/release.sh failed"; }
	TARBALL=$(ls "$T"/dist/profd-*-"$ARCH".tar.gz)
	ok "packaging/release.sh built $(basename "$TARBALL") in $((SECONDS - start)) s"
fi
NAME=$(tar tzf "$TARBALL" | head -n 1 | cut -d/ -f1)
[[ $NAME == profd-* ]] || fail "$TARBALL does not hold a profd-VERSION/ folder"
ok "$(basename "$TARBALL"): $(du -k "$TARBALL" | cut -f1) KiB"

bind() { # bind HOST_PATH ROOT: bind-mount it at the same place inside ROOT
	[ -d "$1" ] || return 0
	mkdir -p "$2$1"
	mount --bind "$1" "$2$1" || fail "mount --bind $1 $2$1"
	MOUNTS+=("$2$1")
}

run_suite() {
	local suite=$1 cached root B start pf py i out log rc
	start=$SECONDS
	cached=$(chroot_tarball "$suite") || skip "$(cat "$T/why")"
	root="$T/$suite"
	mkdir -p "$root"
	tar -C "$root" --numeric-owner -xzf "$cached" || fail "$suite: cannot unpack $cached"
	# The loader's cache, as installing the C library makes it (a chroot
	# unpacked from packages has none yet).
	chroot "$root" ldconfig || fail "$suite: ldconfig in the chroot failed"
	for d in /proc /sys /sys/fs/bpf /sys/kernel/debug /sys/kernel/tracing /dev; do
		bind "$d" "$root"
	done
	# The bundle, unpacked by the chroot's own tar.
	cp "$TARBALL" "$root/tmp/bundle.tar.gz"
	chroot "$root" tar -C /opt -xzf /tmp/bundle.tar.gz || fail "$suite: the chroot's tar cannot unpack the bundle"
	B=/opt/$NAME/bin
	echo "== $suite: $(chroot "$root" sh -c '. /etc/os-release; echo "$PRETTY_NAME"'), $(chroot "$root" ldd --version | head -n 1)"

	# Nothing profd links against is in the chroot: no libbpf, libelf,
	# libdw, libcurl, no compiler.
	out=$(chroot "$root" sh -c "ls /usr/lib/$ARCH-linux-gnu/libbpf.so* /lib/$ARCH-linux-gnu/libbpf.so* /usr/lib/$ARCH-linux-gnu/libelf* /usr/lib/$ARCH-linux-gnu/libcurl* 2>&1; ldconfig -p | grep -E 'libbpf|libelf|libdw|libcurl'; command -v cc gcc clang")
	echo "$out" | grep -q '^/' && fail "$suite: the chroot has profd's libraries or a compiler: $out"
	echo "$out" | sed 's/^/   /'
	ok "$suite: no libbpf, libelf, libdw, libcurl nor compiler in the chroot"

	chroot "$root" "$B/profd" --help >"$T/help" 2>&1 || fail "$suite: profd --help: $(head -c 500 "$T/help")"
	grep -q '^usage: profd' "$T/help" || fail "$suite: profd --help printed: $(head -c 300 "$T/help")"
	ok "$suite: profd --help: $(head -n 1 "$T/help")"

	log="$T/$suite-profd.err"
	chroot "$root" "$B/profd" --all-processes --config /dev/null --state-dir /tmp/st \
		--socket /tmp/profd.sock 2>"$log" &
	pf=$!
	PIDS+=("$pf")
	for i in $(seq 1 150); do
		chroot "$root" "$B/profctl" --socket /tmp/profd.sock stats >/dev/null 2>&1 && break
		if ! kill -0 "$pf" 2>/dev/null; then
			wait "$pf"
			if grep -E 'failed to start|must run as root' "$log" | grep -qE 'Operation not permitted|Permission denied|must run as root|not supported|Function not implemented'; then
				skip "this machine refuses BPF or perf events: $(head -c 300 "$log")"
			fi
			fail "$suite: profd exited during start-up: $(head -c 2000 "$log")"
		fi
		sleep 0.2
	done
	chroot "$root" "$B/profctl" --socket /tmp/profd.sock stats >/dev/null 2>&1 ||
		fail "$suite: profd did not answer within 30 s: $(head -c 2000 "$log")"
	ok "$suite: profd answers on /tmp/profd.sock ($((SECONDS - start)) s since the chroot was taken)"
	# Named profd by the kernel (comm: ps, top, and profctl list's COMM
	# and SERVICE, which come from it), not after the loader that runs it.
	[ "$(cat "/proc/$pf/comm")" = profd ] || fail "$suite: the daemon's comm is '$(cat "/proc/$pf/comm")'"
	ok "$suite: the daemon is 'profd' in /proc/$pf/comm, not the loader's name"

	cat >"$root/tmp/work.py" <<'EOF'
import sys
import time


def inner():
    x = 0
    for i in range(20000):
        x += i * i
    return x


def outer(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        inner()


outer(float(sys.argv[1]))
EOF
	chroot "$root" python3 /tmp/work.py 60 &
	py=$!
	PIDS+=("$py")
	# inner's line is its loop's or its sum's; outer's the call of inner.
	local lm lo li1 li2 want
	lm=$(grep -n '^outer(' "$root/tmp/work.py" | cut -d: -f1)
	lo=$(grep -n '^        inner()' "$root/tmp/work.py" | cut -d: -f1)
	li1=$(grep -n 'for i in range' "$root/tmp/work.py" | cut -d: -f1)
	li2=$(grep -n 'x += i' "$root/tmp/work.py" | cut -d: -f1)
	want="<module> \\(/tmp/work\\.py:$lm\\);outer \\(/tmp/work\\.py:$lo\\);inner \\(/tmp/work\\.py:($li1|$li2)\\)"
	for i in $(seq 1 60); do
		sleep 0.5
		chroot "$root" "$B/profctl" --socket /tmp/profd.sock dump --pid "$py" --python-only \
			-o /tmp/work.folded 2>/dev/null || continue
		grep -Eq "$want" "$root/tmp/work.folded" && break
	done
	if ! grep -Eq "$want" "$root/tmp/work.folded" 2>/dev/null; then
		chroot "$root" "$B/profctl" --socket /tmp/profd.sock stats 2>&1 | grep -E '^py' >&2
		tail -n 20 "$log" >&2
		fail "$suite: no <module>;outer;inner stack for pid $py: $(head -c 2000 "$root/tmp/work.folded" 2>/dev/null)"
	fi
	# The full dump too (native frames around the Python ones).
	chroot "$root" "$B/profctl" --socket /tmp/profd.sock dump --pid "$py" -o /tmp/full.folded ||
		fail "$suite: profctl dump --pid $py"
	# (with native frames, which on 3.9 sit between two Python frames)
	grep -Eq "outer \\(/tmp/work\\.py:$lo\\);(.*;)?inner \\(/tmp/work\\.py:" "$root/tmp/full.folded" ||
		fail "$suite: the full dump lacks outer;inner: $(head -c 1000 "$root/tmp/full.folded")"
	kill "$py"
	wait "$py" 2>/dev/null
	echo "   python stacks of pid $py (folded, samples):"
	awk '{ n = $NF; $NF = ""; print n, $0 }' "$root/tmp/work.folded" | sort -rn | head -n 3 |
		sed 's/^/     /'
	ok "$suite: profctl dump --pid has <module> -> outer -> inner with lines"

	chroot "$root" "$B/profctl" --socket /tmp/profd.sock stats >"$T/stats" 2>&1 ||
		fail "$suite: profctl stats: $(head -c 500 "$T/stats")"
	echo "   stats: $(grep -E '^(samples_seen|samples_received|procs_tracked|samples) ' "$T/stats" | tr '\n' ' ')"
	ok "$suite: profctl stats ($(wc -l <"$T/stats") lines)"

	# A command profctl starts runs with the chroot's own loader and
	# libraries: --library-path is not inherited.
	chroot "$root" "$B/profctl" --socket /tmp/profd.sock record -f folded -o /tmp/rec.folded -- \
		python3 -c 'import sys; m = open("/proc/self/maps").read(); sys.exit(3 if "/opt/profd-" in m else 0)' \
		>"$T/rec.out" 2>&1
	rc=$?
	[ "$rc" = 3 ] && fail "$suite: a command profctl record started mapped the bundle's libraries"
	[ "$rc" = 0 ] || fail "$suite: profctl record -- python3 exited $rc: $(head -c 500 "$T/rec.out")"
	ok "$suite: profctl record -- CMD runs CMD on the chroot's own libraries"

	kill -TERM "$pf"
	wait "$pf"
	rc=$?
	[ "$rc" = 0 ] || fail "$suite: profd exited with $rc on SIGTERM: $(tail -c 1000 "$log")"
	ok "$suite: profd stopped on SIGTERM, exit 0 ($((SECONDS - start)) s for $suite)"
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${MOUNTS[i]}" || fail "umount ${MOUNTS[i]}"
	done
	MOUNTS=()
	PIDS=()
	rm -rf "$root"
}

for s in $SUITES; do
	run_suite "$s"
done
echo "PASS: release bundle on $SUITES"
