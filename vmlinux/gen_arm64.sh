#!/bin/bash
# gen_arm64.sh: regenerate vmlinux/arm64/vmlinux.h, the arm64 BPF objects'
# CO-RE types, from the BTF of Debian 12's arm64 kernel.
#
# An arm64 vmlinuz is a bare Image (no ELF sections to read the BTF
# from), so the kernel is booted under qemu-system-aarch64 (TCG, ~20 s)
# with a busybox-only initramfs that prints /sys/kernel/btf/vmlinux in
# base64 between two markers on the serial console; bpftool turns the
# decoded BTF into C.  Kernel and busybox come from Debian's archive
# (tests/kernels/kernel_fetch.sh, deb_fetch.sh); nothing is installed.
# Needs qemu-system-arm, bpftool, cpio.  Run from anywhere.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/vmlinux/arm64/vmlinux.h
BEGIN=PROFD_BTF_BEGIN END=PROFD_BTF_END

die() { echo "gen_arm64: $*" >&2; exit 1; }

# The guest's PID 1: print the BTF and power off.
guest_init() {
	cat <<EOS
#!/bin/busybox sh
/bin/busybox mkdir -p /sys
/bin/busybox mount -t sysfs sysfs /sys
echo $BEGIN
/bin/busybox base64 /sys/kernel/btf/vmlinux
echo $END
/bin/busybox poweroff -f
EOS
}

main() {
	local kdir bb
	command -v qemu-system-aarch64 >/dev/null || die "qemu-system-aarch64 missing (package qemu-system-arm)"
	command -v bpftool >/dev/null || PATH=$PATH:/usr/sbin
	kdir=$(KERNEL_ARCH=arm64 "$ROOT/tests/kernels/kernel_fetch.sh" bookworm)
	bb=$("$ROOT/tests/kernels/deb_fetch.sh" bookworm arm64 busybox-static)/root/bin/busybox
	[ -x "$bb" ] || die "no busybox in the arm64 busybox-static package"
	WORK=$(mktemp -d)
	trap 'rm -rf "$WORK"' EXIT
	mkdir -p "$WORK/root/bin"
	cp "$bb" "$WORK/root/bin/busybox"
	guest_init >"$WORK/root/init"
	chmod 755 "$WORK/root/init"
	(cd "$WORK/root" && find . | cpio -o -H newc -R 0:0 --quiet) >"$WORK/initrd"
	# loglevel=0: no kernel message in the middle of the base64.
	timeout 300 qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -smp 1 -m 1G \
		-nographic -no-reboot -nic none -kernel "$kdir/vmlinuz" -initrd "$WORK/initrd" \
		-append "console=ttyAMA0 rdinit=/init loglevel=0 panic=-1" </dev/null >"$WORK/console" 2>&1 ||
		die "qemu failed: $(tail -n 5 "$WORK/console")"
	tr -d '\r' <"$WORK/console" | sed -n "/^$BEGIN\$/,/^$END\$/p" | sed '1d;$d' |
		base64 -d >"$WORK/btf" || die "no BTF on the guest's console"
	bpftool btf dump file "$WORK/btf" format c >"$WORK/vmlinux.h"
	grep -q 'struct user_pt_regs {' "$WORK/vmlinux.h" || die "the BTF has no arm64 user_pt_regs"
	mv "$WORK/vmlinux.h" "$OUT"
	echo "gen_arm64: $OUT from $(cat "$kdir/version") ($(wc -c <"$WORK/btf") bytes of BTF)"
}

main "$@"
