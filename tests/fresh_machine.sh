#!/bin/bash
# fresh_machine.sh [REPO [COMMIT]]: the README's test command as a new user
# meets it, on a brand-new Debian 12 machine with this machine's kernel: a
# debootstrapped bookworm root (the variant a cloud image starts from),
# with /proc, /sys (cgroups, BPF and tracing filesystems included) and
# /dev bound in, a `git clone` of REPO (default: this checkout) at COMMIT
# (default: HEAD) inside it, and nothing else: no package, tool or cache
# of this machine's.  Then `sh .ci/run` runs in it as CI runs it, and the
# time of each step is printed; with the suite's own per-group times at
# the end (tests/CMakeLists.txt's timing.report).
#
# FRESH_CMD replaces `sh .ci/run` (a part of the suite, say:
# FRESH_CMD='packaging/setup.sh && tests/run -R arch').
#
# Needs root, debootstrap and a Debian mirror in the host's apt sources
# (the root gets the host's sources, resolver, certificate authorities and
# the environment variables that name them, so that apt and npm reach the
# same registries as the machine itself).  The root lives in $FRESH_DIR (default
# /var/tmp/profd-fresh), made anew each run; its log in $FRESH_DIR.log.
# Everything is mounted inside a private mount namespace, so nothing is
# left mounted when the run ends, however it ends.  Put aside: the host's
# network, pid namespace and kernel, as a container has them.
set -euo pipefail

SRC_REPO=${1:-$(cd "$(dirname "$0")/.." && pwd)}
COMMIT=${2:-$(git -C "$SRC_REPO" rev-parse HEAD)}
DIR=${FRESH_DIR:-/var/tmp/profd-fresh}
LOG=$DIR.log

die() { echo "fresh_machine: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"

mirror() {
	local f=/etc/apt/sources.list.d/debian.sources
	[ -f "$f" ] && awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f" && return
	awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\//) { if ($i !~ /security/) { print $i; exit } break } }' /etc/apt/sources.list
}

# Nothing may still be mounted below DIR before it is removed: rm must
# never reach the host's /dev or /sys.
if grep -q " $DIR/" /proc/self/mounts; then die "mounts left under $DIR; unmount them first"; fi
rm -rf "$DIR"
mkdir -p "$DIR"
exec > >(tee "$LOG") 2>&1

t0=$SECONDS
M=$(mirror)
[ -n "$M" ] || die "no Debian mirror in the host's apt sources"
echo "fresh_machine: debootstrap bookworm from $M into $DIR"
debootstrap bookworm "$DIR" "$M" >"$DIR.debootstrap.log" 2>&1 ||
	{ tail -n 20 "$DIR.debootstrap.log"; die "debootstrap failed"; }
t_boot=$((SECONDS - t0))

# What a new machine has beside its packages: its apt sources and apt's
# settings for reaching them, a resolver, and the certificate authorities
# it trusts (a registry reached through a proxy of the site's own is
# signed by the site's CA: npm refuses it otherwise).
cp /etc/resolv.conf "$DIR/etc/resolv.conf"
if [ -d /usr/local/share/ca-certificates ]; then
	mkdir -p "$DIR/usr/local/share/ca-certificates"
	cp -r /usr/local/share/ca-certificates/. "$DIR/usr/local/share/ca-certificates/"
fi
[ -f /etc/ssl/certs/ca-certificates.crt ] && mkdir -p "$DIR/etc/ssl/certs" &&
	cp /etc/ssl/certs/ca-certificates.crt "$DIR/etc/ssl/certs/"
[ -d /etc/apt/sources.list.d ] && cp /etc/apt/sources.list.d/*.sources "$DIR/etc/apt/sources.list.d/" 2>/dev/null &&
	rm -f "$DIR/etc/apt/sources.list"
for f in /etc/apt/apt.conf.d/99*; do [ -f "$f" ] && cp "$f" "$DIR/etc/apt/apt.conf.d/"; done

echo "fresh_machine: git clone $SRC_REPO at $COMMIT"
git clone -q "$SRC_REPO" "$DIR/src"
git -C "$DIR/src" checkout -q "$COMMIT"
# CI keeps a read-only copy of the project's shared notes beside the clone.
[ -d "$SRC_REPO/../shared" ] && cp -r "$SRC_REPO/../shared" "$DIR/shared" && chmod -R a-w "$DIR/shared"

# The run, in a mount namespace of its own whose root is the new root:
# its mounts die with it.
t1=$SECONDS
rc=0
unshare --mount --propagation private bash -c '
	set -e
	d=$1 cmd=$2
	# The root a mount point of its own, as a machine'"'"'s / is: else
	# `unshare -m` inside (tests hide files that way) cannot make it private.
	mount --bind "$d" "$d"
	mount --rbind /proc "$d/proc"
	mount --rbind /sys "$d/sys"   # cgroup2, bpf, tracefs and debugfs with it
	mount --rbind /dev "$d/dev"
	mount -t tmpfs tmpfs "$d/tmp"
	shift 2
	# pivot_root, not chroot: the root is then the mount namespace'"'"'s
	# own, as on a machine (a chroot shows a container'"'"'s private files
	# by their host paths, and refuses some namespace operations).
	cd "$d"
	mkdir -p .old-root
	pivot_root . .old-root
	umount -l /.old-root
	rmdir /.old-root
	exec /usr/bin/env -i HOME=/root CI=true LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@" \
		sh -c "cd /src && { $cmd; } </dev/null"
' _ "$DIR" "${FRESH_CMD:-sh .ci/run}" $(env | grep -E '^(SSL_CERT_FILE|SSL_CERT_DIR|NODE_EXTRA_CA_CERTS|CURL_CA_BUNDLE|REQUESTS_CA_BUNDLE)=') || rc=$?
t_run=$((SECONDS - t1))
echo "fresh_machine: debootstrap ${t_boot} s, ${FRESH_CMD:-sh .ci/run}: ${t_run} s (rc $rc), whole ${SECONDS} s"
exit "$rc"
