#!/bin/bash
# kernel_boot.sh SUITE CMD...: boot Debian's stock kernel of SUITE
# (bullseye = 5.10, bookworm = 6.1, trixie = 6.12; see kernel_fetch.sh)
# under qemu (TCG) and run CMD inside it as root, in the host's own file
# tree: the host's / is shared read-only over virtio-9p with a tmpfs
# overlay on top, so the guest sees the host's paths (a build directory,
# python3, bpftool) and may write anywhere.  The guest's console streams
# to stdout; the exit status is CMD's, 77 (skip) where qemu, busybox or the
# kernel is missing, 124 on the timeout (KERNEL_BOOT_TIMEOUT, 600 s, for
# each boot).  A guest whose kernel oopses or panics before CMD ends is
# booted once more (guest_crashed); a second crash fails.
#
# The variables named in KERNEL_BOOT_ENV (default: BUILD SRC CC
# GUEST_TESTS PROFD_TEST_PYTHON_SET PROFD_TEST_DEBIAN_PYTHONS
# PROFD_TEST_PROGRAMS) are passed to CMD, which starts in the
# current directory.
#
# KERNEL_ARCH=arm64 boots Debian's arm64 kernel under qemu-system-aarch64
# instead.  The host's binaries cannot run there: KERNEL_BOOT_ROOT names
# a foreign userland tree on the host (deb_fetch.sh) that becomes the
# guest's root, and the host paths in KERNEL_BOOT_BIND (a cross build, the
# sources) appear inside it at the same paths, each writable through an
# overlay of its own.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TIMEOUT=${KERNEL_BOOT_TIMEOUT:-600}
ARCH=${KERNEL_ARCH:-amd64}
GUEST_ROOT=${KERNEL_BOOT_ROOT:-}
GUEST_BIND=${KERNEL_BOOT_BIND:-}
PASS_ENV=${KERNEL_BOOT_ENV:-BUILD SRC CC GUEST_TESTS PROFD_TEST_PYTHON_SET PROFD_TEST_DEBIAN_PYTHONS PROFD_TEST_PROGRAMS}
# What the guest needs to mount the host's root: 9p over virtio and
# overlayfs; netfs/fscache and the virtio PCI transport where the kernel
# builds them as modules (built in, or absent in a version, is fine).
MODULES="virtio virtio_ring virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci
netfs fscache 9pnet 9pnet_virtio 9p overlay"
# Lines the guest's init prints; the host parses them off the console.
MARK=KERNEL_BOOT

log() { echo "kernel_boot: $*" >&2; }
skip() { log "SKIP: $*"; exit 77; }
# A tool that packaging/setup.sh installs is missing: a failure, not a skip.
missing() { log "FAIL: $1 is missing (packaging/setup.sh installs package $2)"; exit 1; }

# guest_init: PID 1 of the guest (busybox sh), in the cached initramfs.
guest_init() {
	cat <<'EOF'
#!/bin/busybox sh
# Mount the host's root read-only with a tmpfs overlay, the kernel's
# virtual filesystems inside it, then run /kernel_boot/cmd.sh there.
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /lower /rw /newroot
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r m; do insmod "/modules/$m" || echo "init: insmod $m failed"; done </modules/order
die() { echo "init: $*"; echo "KERNEL_BOOT_EXIT=1"; poweroff -f; }
# cache=loose: the host's tree does not change under a test, and a lookup
# over 9p costs a round trip through qemu (python's start-up does many).
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000,cache=loose hostroot /lower ||
	die "cannot mount the host's root over 9p"
mount -t tmpfs -o mode=755 tmpfs /rw
# ROOT (a foreign userland on the host, or the host's own /) and BIND
# (host paths shown at the same paths) come with the command.
ROOT= BIND=
. /kernel_boot/guest.env
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower$ROOT,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	die "cannot mount the overlay"
R=/newroot
mkdir -p $R/proc $R/sys $R/dev $R/run $R/tmp
n=0
for p in $BIND; do
	n=$((n + 1))
	mkdir -p /rw/bind$n/upper /rw/bind$n/work $R$p
	mount -t overlay -o lowerdir=/lower$p,upperdir=/rw/bind$n/upper,workdir=/rw/bind$n/work overlay $R$p ||
		die "cannot show the host's $p in the guest"
done
# A foreign tree was unpacked, not installed: its loader's cache is made here.
[ -z "$ROOT" ] || [ ! -x $R/sbin/ldconfig ] || chroot $R /sbin/ldconfig
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev
# What udev would add: bash's <(...) opens /dev/fd/N.
ln -sf /proc/self/fd $R/dev/fd
ln -sf /proc/self/fd/0 $R/dev/stdin
ln -sf /proc/self/fd/1 $R/dev/stdout
ln -sf /proc/self/fd/2 $R/dev/stderr
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o ptmxmode=666 devpts $R/dev/pts
mount -t tmpfs tmpfs $R/dev/shm
# /tmp is the host's, written to the overlay: the build tree may live there.
mount -t tmpfs tmpfs $R/run
mount -t bpf bpf $R/sys/fs/bpf
mount -t debugfs debugfs $R/sys/kernel/debug
grep -q tracefs /proc/filesystems && mount -t tracefs tracefs $R/sys/kernel/tracing
mount -t cgroup2 cgroup2 $R/sys/fs/cgroup
ifconfig lo 127.0.0.1 up
hostname guest
if [ -f /sys/kernel/btf/vmlinux ]; then btf=yes; else btf=no; fi
echo "KERNEL_BOOT_READY kernel=$(uname -r) btf=$btf uptime=$(cut -d' ' -f1 /proc/uptime)"
mkdir -p $R/kernel_boot
cp /kernel_boot/cmd.sh $R/kernel_boot/cmd.sh
chroot $R /bin/bash /kernel_boot/cmd.sh </dev/null
rc=$?
sync
echo "KERNEL_BOOT_EXIT=$rc"
poweroff -f
EOF
}

# module_order KDIR: the MODULES the kernel has as modules, dependencies
# first, as paths relative to KDIR/modules (from modules.dep).
module_order() {
	awk -v want="$MODULES" '
		function name(p) { sub(/.*\//, "", p); sub(/\.ko(\.[a-z]+)?$/, "", p); gsub(/-/, "_", p); return p }
		function visit(p,   i, n, d) {
			if (p in done) return
			done[p] = 1
			n = split(deps[p], d, " ")
			for (i = n; i >= 1; i--) visit(d[i]) # the last one is needed first
			print p
		}
		{ p = $1; sub(/:$/, "", p); $1 = ""; deps[p] = $0; path[name(p)] = p }
		END { n = split(want, w, /[ \n]+/); for (i = 1; i <= n; i++) if (w[i] in path) visit(path[w[i]]) }
	' "$1/modules/modules.dep"
}

# unpack_module SRC DST: a module as the kernel's insmod takes it.
unpack_module() {
	case $1 in
	*.xz) xz -dc "$1" >"$2" ;;
	*.zst) zstd -qdc "$1" >"$2" ;;
	*.gz) gzip -dc "$1" >"$2" ;;
	*) cp "$1" "$2" ;;
	esac
}

# initramfs KDIR: build (once per kernel and init script) the guest's
# initramfs: busybox, init, the modules decompressed; print its path.
initramfs() {
	local kdir=$1 key out tmp m
	key=$( (guest_init; echo "$MODULES"; cat "$kdir/version") | md5sum | cut -c1-12)
	out=$kdir/initramfs-$key.cpio
	[ -f "$out" ] && { echo "$out"; return; }
	tmp=$(mktemp -d)
	mkdir -p "$tmp/bin" "$tmp/modules"
	cp "$BUSYBOX" "$tmp/bin/busybox"
	guest_init >"$tmp/init"
	chmod 755 "$tmp/init"
	for m in $(module_order "$kdir"); do
		unpack_module "$kdir/modules/$m" "$tmp/modules/$(basename "${m%.ko*}").ko"
		echo "$(basename "${m%.ko*}").ko" >>"$tmp/modules/order"
	done
	touch "$tmp/modules/order"
	(cd "$tmp" && find . | cpio -o -H newc -R 0:0 --quiet) >"$out.part"
	mv "$out.part" "$out"
	rm -rf "$tmp"
	echo "$out"
}

# command_cpio DIR CMD...: a cpio with /kernel_boot/cmd.sh, which runs CMD
# in this directory with the passed variables; appended to the cached
# initramfs (the kernel unpacks concatenated archives in turn).
command_cpio() {
	local dir=$1 v; shift
	mkdir -p "$dir/root/kernel_boot"
	{
		echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8"
		for v in $PASS_ENV; do [ -n "${!v+set}" ] && printf 'export %s=%q\n' "$v" "${!v}"; done
		printf 'cd %q || exit 1\n' "$PWD"
		printf '%q ' "$@"; echo
	} >"$dir/root/kernel_boot/cmd.sh"
	printf 'ROOT=%q BIND=%q\n' "$GUEST_ROOT" "$GUEST_BIND" >"$dir/root/kernel_boot/guest.env"
	(cd "$dir/root" && find . | cpio -o -H newc -R 0:0 --quiet) >"$dir/cmd.cpio"
}

# boot KDIR INITRD: run qemu; stream its console to stdout (and to
# WORK/console) and note when the guest was ready to run the command.
# Both run in the background so that a signal here is handled at once
# (bash runs traps only after a foreground pipeline ends).
boot() {
	local kdir=$1 initrd=$2 qpid rpid rc=0
	mkfifo "$WORK/fifo"
	read_console "$EPOCHREALTIME" <"$WORK/fifo" &
	rpid=$!
	# mitigations=off: TCG is slow enough; random.trust_cpu: no wait for
	# entropy on 5.10 before python3 can start; panic=-1: a panic ends qemu.
	timeout -k 10 "$TIMEOUT" "${QEMU[@]}" -smp 2 -m 2G \
		-nographic -no-reboot -nic none -pidfile "$WORK/qemu.pid" \
		-kernel "$kdir/vmlinuz" -initrd "$initrd" \
		-append "console=$CONSOLE rdinit=/init loglevel=4 panic=-1 mitigations=off random.trust_cpu=on" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		</dev/null >"$WORK/fifo" 2>&1 &
	qpid=$!
	wait "$qpid" || rc=$?
	wait "$rpid"
	return "$rc"
}

# read_console T0: copy the console to stdout and WORK/console, and
# WORK/ready when the guest's init says it is ready.
read_console() {
	local t0=$1 line
	while IFS= read -r line; do
		line=${line%$'\r'}
		printf '%s\n' "$line"
		printf '%s\n' "$line" >>"$WORK/console"
		case $line in
		*"${MARK}_READY "*) echo "$EPOCHREALTIME $t0" >"$WORK/ready" ;;
		esac
	done
}

# guest_arch: what differs by the guest's architecture, in one place: the
# emulator (TCG) and its package, the console, the initramfs's busybox.
guest_arch() {
	case $ARCH in
	amd64)
		QEMU=(qemu-system-x86_64 -accel tcg,thread=multi -cpu max)
		QEMU_PACKAGE=qemu-system-x86 CONSOLE=ttyS0
		BUSYBOX=$(command -v busybox || true)
		;;
	arm64)
		# pauth-impdef: pointer authentication as fast as TCG makes it.
		QEMU=(qemu-system-aarch64 -M virt -accel tcg,thread=multi -cpu max,pauth-impdef=on)
		QEMU_PACKAGE=qemu-system-arm CONSOLE=ttyAMA0
		BUSYBOX=$("$HERE/deb_fetch.sh" bookworm arm64 busybox-static)/root/bin/busybox || exit $?
		;;
	*) echo "kernel_boot: KERNEL_ARCH $ARCH: amd64 or arm64" >&2; exit 2 ;;
	esac
	[ "$ARCH" = amd64 ] || [ -n "$GUEST_ROOT" ] ||
		{ echo "kernel_boot: an $ARCH guest needs KERNEL_BOOT_ROOT" >&2; exit 2; }
}

# guest_crashed: whether the guest's kernel oopsed or panicked (the
# console above shows how).  Seen once under TCG with two vCPUs: an int3
# oops in do_user_addr_fault while a tracepoint's static key was being
# patched (text_poke_bp), the emulator not the test's doing: the guest is
# booted once more, and a second crash fails the test.
guest_crashed() {
	grep -aqE '^\[ *[0-9.]+\] (Oops|BUG:|Kernel panic)' "$WORK/console"
}

stop_qemu() {
	[ -s "$WORK/qemu.pid" ] && kill "$(cat "$WORK/qemu.pid")" 2>/dev/null
	return 0
}

main() {
	local suite=${1:-} kdir initrd rc=0 status ready boot_s ver try
	[ $# -ge 2 ] || { echo "usage: $0 bullseye|bookworm|trixie CMD..." >&2; exit 2; }
	shift
	guest_arch
	command -v "${QEMU[0]}" >/dev/null || missing "${QEMU[0]}" "$QEMU_PACKAGE"
	[ -n "$BUSYBOX" ] && ! ldd "$BUSYBOX" >/dev/null 2>&1 || missing "a static busybox" busybox-static
	command -v cpio >/dev/null || missing cpio cpio
	kdir=$(KERNEL_ARCH=$ARCH "$HERE/kernel_fetch.sh" "$suite") || exit $?
	ver=$(cat "$kdir/version")
	initrd=$(initramfs "$kdir")
	WORK=$(mktemp -d)
	# timeout(1) runs qemu in a process group of its own: when this script
	# is stopped (a CTest timeout, ^C) qemu must be stopped by its pid.
	trap 'stop_qemu; rm -rf "$WORK"' EXIT
	trap 'exit 143' TERM INT
	command_cpio "$WORK" "$@"
	cat "$initrd" "$WORK/cmd.cpio" >"$WORK/initrd"
	for try in 1 2; do
		log "booting $suite ($ver) with a ${TIMEOUT} s limit"
		rc=0
		boot "$kdir" "$WORK/initrd" || rc=$?
		status=$(grep -aoE "^${MARK}_EXIT=[0-9]+" "$WORK/console" | tail -n1 | cut -d= -f2 || true)
		[ -z "$status" ] && [ "$try" = 1 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] &&
			guest_crashed || break
		log "$suite: the guest's kernel crashed before the command ended: booting it once more"
		rm -f "$WORK/fifo" "$WORK/console" "$WORK/ready" "$WORK/qemu.pid"
	done
	if [ -f "$WORK/ready" ]; then
		read -r ready t0 <"$WORK/ready"
		boot_s=$(awk -v a="$ready" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
		log "$suite ($ver): booted in $boot_s s (to the command), $(grep -aoE 'btf=[a-z]+' "$WORK/console" | head -n1)"
	fi
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		log "$suite: timed out after ${TIMEOUT} s"; exit 124
	fi
	[ -n "$status" ] || { log "$suite: the guest ended (qemu status $rc) without the command's status"; exit 1; }
	log "$suite: command exited with $status"
	exit "$status"
}

main "$@"
