#!/bin/bash
# arm64_guest.sh SUITE BUILD [USERLAND]: boot Debian's arm64 kernel of
# SUITE (kernel_fetch.sh with KERNEL_ARCH=arm64) under qemu-system-aarch64
# (TCG) with an arm64 userland made of Debian's own packages of USERLAND
# (default bookworm, whose python3.11 the checks name; deb_fetch.sh:
# busybox and the libraries profd links) and the cross-built profd and
# profctl of BUILD (cmake/aarch64-linux-gnu.cmake) in its initramfs, then
# run profd --all-processes against a frame-pointer C workload
# (workloads/fp_chain.c, cross-built here), a C chain without frame
# pointers through a dlopen'ed library (workloads/nofp, cross-built
# -fomit-frame-pointer with pointer authentication: the .eh_frame walk)
# and Debian's arm64 python3.11 (workloads/py_split.py) at once, and
# check that profctl names their native and Python functions and that
# the native walks are whole.  Nothing of the host is shared with the
# guest.  With ARM64_GUEST_BUNDLE=profd-VERSION-aarch64.tar.gz the
# guest runs that release bundle's launchers instead of BUILD's programs.
#
# Exits 0 on a pass, 77 (a skip) only where the kernel or the packages
# cannot be had (offline); a tool of ours missing is a failure.  The
# guest's console streams to stdout; KERNEL_BOOT_TIMEOUT (default 240 s)
# bounds the guest.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
TIMEOUT=${KERNEL_BOOT_TIMEOUT:-240}
# The guest's userland: a shell, profd's shared libraries (readelf -d) and
# Debian's python3.11 (as small as it comes: the -minimal package).
PACKAGES="python3.11-minimal busybox-static libc6 libgcc-s1 libstdc++6 libbpf1 libelf1 libdw1 zlib1g libsqlite3-0 libcurl4"
MARK=ARM64_GUEST

log() { echo "arm64_guest: $*" >&2; }
fail() { log "FAIL: $*"; exit 1; }

# guest_init: PID 1 (busybox sh): the kernel's filesystems, then the test.
guest_init() {
	cat <<'EOS'
#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /sbin /usr/bin /usr/sbin
/bin/busybox mount -t proc proc /proc
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export LD_LIBRARY_PATH=/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t bpf bpf /sys/fs/bpf
mount -t debugfs debugfs /sys/kernel/debug
grep -q tracefs /proc/filesystems && mount -t tracefs tracefs /sys/kernel/tracing
ifconfig lo 127.0.0.1 up
if [ -f /sys/kernel/btf/vmlinux ]; then btf=yes; else btf=no; fi
echo "ARM64_GUEST_READY kernel=$(uname -r) arch=$(uname -m) btf=$btf uptime=$(cut -d' ' -f1 /proc/uptime)"
sh /profd/guest_test.sh
echo "ARM64_GUEST_EXIT=$?"
poweroff -f
EOS
}

# guest_test: what runs inside, as a script of its own (guest_test.sh).
guest_test() {
	cat <<'EOS'
P=/profd SOCK=/run/profd.sock
fail() { echo "guest: FAIL: $*"; tail -n 20 /tmp/profd.err | sed 's/^/guest: profd: /'; exit 1; }
$P/profd --config /dev/null --check 2>&1 | sed 's/^/guest: check: /'
# 1 s buckets: dump --since then leaves out the workloads' start.
$P/profd --config /dev/null --state-dir /tmp/state --socket $SOCK --all-processes --bucket 1s \
	2>/tmp/profd.err &
i=0
until $P/profctl --socket $SOCK stats >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 600 ] || fail "profd did not answer within 60 s"
	kill -0 $! 2>/dev/null || fail "profd exited during start-up"
	sleep 0.1
done
echo "guest: profd answered after $((i / 10)) s"
# All at once on two vCPUs.
$P/fp_chain 40 &
W=$!
$P/nofp $P/libnofp.so 40 &
NF=$!
/usr/bin/python3.11 $P/py_split.py 40 &
PY=$!
sleep 15
# The last 6 s: python3.11's start-up (its imports take seconds under
# TCG) is not the profile checked.
$P/profctl --socket $SOCK dump --pid $W --since 6s -o /tmp/w.folded || fail "dump failed"
$P/profctl --socket $SOCK dump --pid $PY --since 6s -o /tmp/py.folded || fail "python dump failed"
$P/profctl --socket $SOCK dump --pid $NF --since 6s -o /tmp/nf.folded || fail "nofp dump failed"
kill $W $PY $NF
# heaviest FILE: its five heaviest stacks.
heaviest() { awk '{ print $NF "\t" $0 }' "$1" | sort -rn | head -n 5 | cut -f2- | sed 's/^/guest:   /'; }
# misses FILE REGEX: the five heaviest stacks that do not match.
misses() { awk -v re="$2" '$0 !~ re { print $NF "\t" $0 }' "$1" | sort -rn | head -n 5 | cut -f2- | sed 's/^/guest:   /'; }
# sum FILE REGEX: samples of the stacks that match.
sum() { awk -v re="$2" '$0 ~ re { n += $NF } END { printf "%.0f", n }' "$1"; }
total=$(sum /tmp/w.folded .)
chain=$(sum /tmp/w.folded '(^|;)main;fp_c1;fp_c2;fp_c3;fp_c4;fp_spin( |$)')
echo "guest: heaviest stacks of fp_chain:"
heaviest /tmp/w.folded
echo "guest: $chain of $total samples are main;fp_c1;fp_c2;fp_c3;fp_c4;fp_spin"
pytotal=$(sum /tmp/py.folded .)
pyleaf=$(sum /tmp/py.folded 'main [(][^;]*py_split.py:[0-9]+[)];mid [(][^;]*[)];leaf_(heavy|light) [(][^;]*[)];spin [(]')
# Where the Python frames sit among the interpreter's native ones: above
# Py_RunMain, the native walk whole from _start to the eval loop.
PYWHOLE='^_start;__libc_start_main;[^;]*;(main;)?Py_BytesMain;Py_RunMain;([^;]*;)*<module> [(]'
placed=$(sum /tmp/py.folded "$PYWHOLE")
# The program without frame pointers: whole walks go from the leaf back
# to _start, and most of them through qsort's callback into the dlopen'ed
# library.
nftotal=$(sum /tmp/nf.folded .)
NFWHOLE='^_start;__libc_start_main;[^;]*;main;'
nfwhole=$(sum /tmp/nf.folded "$NFWHOLE")
nfchain=$(sum /tmp/nf.folded "${NFWHOLE}c1;c2;c3;c4;c5;c6;sort_step;(qsort|qsort_r|msort_with_tmp[^;]*)(;[^;]+)*;cmp;lib_entry;lib_spin")
echo "guest: heaviest stacks of nofp:"
heaviest /tmp/nf.folded
echo "guest: heaviest stacks of nofp not whole:"
misses /tmp/nf.folded "$NFWHOLE"
echo "guest: nofp: $nfwhole of $nftotal samples walk whole from _start, $nfchain through cmp;lib_entry;lib_spin"
$P/profctl --socket $SOCK stats | grep -iE 'unwind' | head -n 20 | sed 's/^/guest: stats: /'
echo "guest: heaviest stacks of python3.11:"
heaviest /tmp/py.folded
echo "guest: python3.11: $pyleaf of $pytotal samples are main;mid;leaf_*;spin, $placed with <module> above Py_RunMain"
echo "guest: heaviest stacks of python3.11 without:"
misses /tmp/py.folded "$PYWHOLE"
[ "$total" -ge 20 ] && [ "$pytotal" -ge 20 ] && [ "$nftotal" -ge 100 ] ||
	{ $P/profctl --socket $SOCK stats | sed 's/^/guest: stats: /'; fail "too few samples"; }
[ $((chain * 10)) -ge $((total * 8)) ] || fail "fewer than 80% of fp_chain's samples have its whole chain"
[ $((pyleaf * 10)) -ge $((pytotal * 9)) ] || fail "fewer than 90% of python's samples have main;mid;leaf_*;spin"
[ $((nfwhole * 100)) -ge $((nftotal * 98)) ] || fail "fewer than 98% of nofp's samples walk whole"
[ $((nfchain * 2)) -ge "$nftotal" ] || fail "the qsort callback chain into the dlopen'ed library is missing"
[ $((placed * 100)) -ge $((pytotal * 99)) ] || fail "fewer than 99% of python's samples have <module> above Py_RunMain"
head -n 10 /tmp/profd.err | sed 's/^/guest: profd: /'
echo "guest: PASS"
EOS
}

# userland_cpio DIR: DIR/root as a cpio (documentation left out), once.
userland_cpio() {
	local dir=$1
	if [ ! -f "$dir/userland.cpio" ]; then
		(cd "$dir/root" && find . -path ./usr/share -prune -o -print |
			cpio -o -H newc -R 0:0 --quiet) >"$dir/userland.cpio.part"
		mv "$dir/userland.cpio.part" "$dir/userland.cpio"
	fi
	echo "$dir/userland.cpio"
}

# payload BUILD DIR: profd, profctl, the workloads and the scripts as a cpio.
payload() {
	local build=$1 dir=$2 f
	mkdir -p "$dir/root/profd"
	for f in profd profctl; do
		if [ -n "${ARM64_GUEST_BUNDLE:-}" ]; then
			ln -s "/bundle/bin/$f" "$dir/root/profd/$f"
		else
			cp "$build/$f" "$dir/root/profd/$f"
			aarch64-linux-gnu-strip --strip-debug "$dir/root/profd/$f"
		fi
	done
	# The release tarball's launchers instead, with its own loader and
	# libraries (packaging/release.sh DIR aarch64).
	if [ -n "${ARM64_GUEST_BUNDLE:-}" ]; then
		mkdir -p "$dir/root/bundle"
		tar xzf "$ARM64_GUEST_BUNDLE" -C "$dir/root/bundle" --strip-components=1 ||
			fail "unpacking $ARM64_GUEST_BUNDLE"
	fi
	aarch64-linux-gnu-gcc -O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		-o "$dir/root/profd/fp_chain" "$SRC/tests/workloads/fp_chain.c" ||
		fail "cross-building the workload"
	# No frame pointers, return addresses signed (pointer authentication):
	# the end-to-end tests' recipe (e2e/programs.sh).
	(unset PROFD_TEST_PROGRAMS; . "$SRC/tests/e2e/programs.sh" && CC=aarch64-linux-gnu-gcc build_nofp "$dir/root/profd") ||
		fail "cross-building nofp"
	aarch64-linux-gnu-objdump -d "$dir/root/profd/nofp" | grep -A3 '<c3>:' |
		grep -q 'stp.*x29, x30' && fail "nofp has frame pointers"
	cp "$SRC/tests/workloads/py_split.py" "$dir/root/profd/"
	guest_init >"$dir/root/init"
	guest_test >"$dir/root/profd/guest_test.sh"
	chmod 755 "$dir/root/init"
	(cd "$dir/root" && find . | cpio -o -H newc -R 0:0 --quiet) >"$dir/payload.cpio"
}

boot() {
	local kdir=$1 initrd=$2
	timeout -k 10 "$TIMEOUT" qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on \
		-accel tcg,thread=multi -smp 2 -m 1536 -nographic -no-reboot -nic none \
		-kernel "$kdir/vmlinuz" -initrd "$initrd" \
		-append "console=ttyAMA0 rdinit=/init loglevel=4 panic=-1" </dev/null 2>&1 |
		tr -d '\r' | tee "$WORK/console"
}

main() {
	local suite=${1:-} build=${2:-} uland=${3:-bookworm} kdir userland rc status t0
	[ -n "$suite" ] && [ -n "$build" ] || { echo "usage: $0 SUITE BUILD [USERLAND]" >&2; exit 2; }
	command -v qemu-system-aarch64 >/dev/null || fail "qemu-system-aarch64 missing (package qemu-system-arm, packaging/setup.sh)"
	command -v aarch64-linux-gnu-gcc >/dev/null || fail "aarch64-linux-gnu-gcc missing (crossbuild-essential-arm64, packaging/setup.sh)"
	for f in profd profctl; do
		readelf -h "$build/$f" 2>/dev/null | grep -q 'AArch64' || fail "$build/$f is not an arm64 build"
	done
	kdir=$(KERNEL_ARCH=arm64 "$HERE/kernel_fetch.sh" "$suite") || exit $?
	userland=$("$HERE/deb_fetch.sh" "$uland" arm64 $PACKAGES) || exit $?
	WORK=$(mktemp -d)
	trap 'rm -rf "$WORK"' EXIT
	payload "$build" "$WORK"
	cat "$(userland_cpio "$userland")" "$WORK/payload.cpio" >"$WORK/initrd"
	log "booting $suite arm64 ($(cat "$kdir/version")), $uland userland, with a ${TIMEOUT} s limit"
	t0=$EPOCHREALTIME
	rc=0
	boot "$kdir" "$WORK/initrd" || rc=$?
	log "guest ran $(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.1f", a - b }') s"
	[ "$rc" = 124 ] && fail "timed out after ${TIMEOUT} s"
	status=$(grep -aoE "^${MARK}_EXIT=[0-9]+" "$WORK/console" | tail -n1 | cut -d= -f2 || true)
	[ -n "$status" ] || fail "the guest ended (qemu status $rc) without the test's status"
	exit "$status"
}

main "$@"
