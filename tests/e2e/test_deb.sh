# The Debian package: build it with cpack from $BUILD, install it on this
# machine, check what it put where, remove and purge it.  Leaves the machine
# as it found it (the profd group too, when this test created it).
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "installing a .deb needs root (running as uid $(id -u))"
command -v dpkg >/dev/null || skip "dpkg not found: not a Debian system"
command -v cpack >/dev/null || fail "cpack is missing (packaging/setup.sh installs cmake)"
# Never replace a profd someone installed for real.
if dpkg-query -W -f='${Status}' profd 2>/dev/null | grep -q 'install ok'; then
	skip "a profd package is already installed here; not replacing it"
fi

INSTALLED=
GROUP_WAS_THERE=
getent group profd >/dev/null && GROUP_WAS_THERE=1

deb_cleanup() {
	if [ -n "$INSTALLED" ]; then
		dpkg -P profd >/dev/null 2>&1
	fi
	if [ -z "$GROUP_WAS_THERE" ] && getent group profd >/dev/null; then
		groupdel profd
	fi
	cleanup
}
trap deb_cleanup EXIT

# cpack runs in $BUILD (CPackConfig.cmake is there) and writes to $T only.
(cd "$BUILD" && cpack -G DEB -B "$T/pkg") >"$T/cpack.log" 2>&1 ||
	{ cat "$T/cpack.log" >&2; fail "cpack -G DEB failed"; }
DEB=
for f in "$T"/pkg/profd_*.deb; do [ -f "$f" ] && DEB=$f; done
[ -n "$DEB" ] || fail "cpack made no profd_*.deb: $(ls "$T/pkg")"
ok "built $(basename "$DEB") ($(wc -c <"$DEB") bytes)"

deps=$(dpkg-deb -f "$DEB" Depends)
for d in libbpf1 libelf1 libc6 adduser; do
	echo "$deps" | grep -q "$d" || fail "Depends lacks $d: $deps"
done
dpkg-deb -I "$DEB" | grep -q ' postinst ' || fail "no postinst in the package"
ok "Depends: $deps"

dpkg -i "$DEB" >"$T/dpkg-i.log" 2>&1 || { cat "$T/dpkg-i.log" >&2; fail "dpkg -i failed"; }
INSTALLED=1
for f in /usr/sbin/profd /usr/bin/profctl /lib/systemd/system/profd.service \
	/etc/profd/profd.conf /usr/share/man/man8/profd.8 /usr/share/man/man1/profctl.1 \
	/usr/lib/sysusers.d/profd.conf; do
	[ -f "$f" ] || fail "$f not installed"
done
{ [ -x /usr/sbin/profd ] && [ -x /usr/bin/profctl ]; } || fail "binaries not executable"
/usr/sbin/profd --help >"$T/help" 2>&1 || fail "/usr/sbin/profd --help failed: $(cat "$T/help")"
grep -q -- '--all-processes' "$T/help" || fail "profd --help does not list its options"
/usr/bin/profctl --help >/dev/null || fail "/usr/bin/profctl --help failed"
getent group profd >/dev/null || fail "postinst did not create group profd"
dpkg-query -W -f='${Conffiles}' profd | grep -q '/etc/profd/profd.conf' ||
	fail "/etc/profd/profd.conf is not a conffile"
# The default configuration is all comments: profd must accept it.
if grep -q -- '--config' "$T/help"; then
	/usr/sbin/profd --config /etc/profd/profd.conf --help >/dev/null 2>"$T/conf.err" ||
		fail "profd rejects its own default config: $(cat "$T/conf.err")"
	ok "default config accepted"
fi
command -v systemd-analyze >/dev/null || fail "systemd-analyze is missing (packaging/setup.sh installs systemd)"
command -v man >/dev/null || fail "man is missing (packaging/setup.sh installs man-db)"
if true; then
	systemd-analyze verify /lib/systemd/system/profd.service >"$T/verify" 2>&1 ||
		fail "systemd-analyze verify: $(cat "$T/verify")"
	ok "systemd-analyze verify: clean"
fi
if true; then
	man -l /usr/share/man/man8/profd.8 2>/dev/null | grep -q 'CAP_BPF' || fail "profd(8) does not render"
fi
ok "installed: binaries, unit, conffile, man pages, group profd"

dpkg -r profd >"$T/dpkg-r.log" 2>&1 || { cat "$T/dpkg-r.log" >&2; fail "dpkg -r failed"; }
for f in /usr/sbin/profd /usr/bin/profctl /lib/systemd/system/profd.service; do
	[ ! -e "$f" ] || fail "$f left after dpkg -r"
done
[ -f /etc/profd/profd.conf ] || fail "dpkg -r removed the conffile (only purge should)"
dpkg -P profd >"$T/dpkg-p.log" 2>&1 || { cat "$T/dpkg-p.log" >&2; fail "dpkg -P failed"; }
INSTALLED=
[ ! -e /etc/profd ] || fail "/etc/profd left after purge"
ok "removed (conffile kept) and purged"
