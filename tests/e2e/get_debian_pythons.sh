#!/bin/bash
# get_debian_pythons.sh DEST [MINOR[@SUITE]...]: fetch CPython 3.MINOR
# (default 14 and 15) from Debian's binary packages of SUITE (default sid)
# into DEST/python3.MINOR/, runnable there: the suite's dynamic loader and
# libc come along and the interpreter is pointed at them with patchelf.
# PYTHONS_ARCH (default: this machine's) fetches another architecture's
# (an arm64 guest's, unpacked on the x86-64 host that boots it: not run
# here).  Prints one interpreter path per line on stdout, and on stderr
# why a version could not be had.
#
# apt runs with a private source list, package lists and cache under
# DEST/apt-SUITE-ARCH: the machine's apt configuration is read (for its
# Debian mirror) but never changed.  A version already unpacked is
# reused, so the tests download once per build tree.  Needs dpkg, apt-get
# and patchelf.
set -u

DEST=${1:?usage: get_debian_pythons.sh DEST [MINOR[@SUITE]...]}
# Absolute: apt reads a relative path as under /etc/apt.
mkdir -p "$DEST" && DEST=$(cd "$DEST" && pwd) || exit 1
shift
MINORS=("$@")
[ "${#MINORS[@]}" -gt 0 ] || MINORS=(14 15)
case $(uname -m) in aarch64) HOST_ARCH=arm64 ;; *) HOST_ARCH=amd64 ;; esac
ARCH=${PYTHONS_ARCH:-$HOST_ARCH}
# The architecture's library directory and dynamic loader.
case $ARCH in
amd64) TRIPLET=x86_64-linux-gnu LOADER=ld-linux-x86-64.so.2 ;;
arm64) TRIPLET=aarch64-linux-gnu LOADER=ld-linux-aarch64.so.1 ;;
*) echo "get_debian_pythons: architecture $ARCH: amd64 or arm64" >&2; exit 2 ;;
esac

say() { echo "get_debian_pythons: $*" >&2; }

# The Debian archive the machine already uses: the first URI of a source
# that carries the main archive (not the security one), from one-line
# .list files or deb822 .sources files.
debian_mirror() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		awk '
			/^[ \t]*#/ { next }
			/^deb[ \t]/ {
				for (i = 2; i <= NF; i++)
					if ($i ~ /^[a-z+]+:\/\//) { print $i; break }
			}
			/^URIs:/ { for (i = 2; i <= NF; i++) print $i }
		' "$f"
	done | grep -E '/debian/?$' | head -1
}

apt_private() {
	apt-get -q \
		-o Dir::Etc::SourceList="$APT/sources.list" \
		-o Dir::Etc::SourceParts="$APT/sources.list.d" \
		-o Dir::Etc::Preferences="$APT/preferences" \
		-o Dir::Etc::PreferencesParts="$APT/preferences.d" \
		-o Dir::State::Lists="$APT/lists" \
		-o Dir::State::status="$APT/status" \
		-o Dir::Cache="$APT/cache" \
		-o APT::Architecture="$ARCH" -o APT::Architectures="$ARCH" \
		-o APT::Get::List-Cleanup=0 \
		-o Acquire::http::Timeout=20 -o Acquire::https::Timeout=20 \
		-o Acquire::Retries=1 \
		"$@"
}

# prepare_apt SUITE: APT set to that suite's private state, its package
# lists fetched once per run (sid changes daily; a stale list 404s).
declare -A apt_ready=()
prepare_apt() {
	local suite=$1 mirror keyring=/usr/share/keyrings/debian-archive-keyring.gpg tool
	APT=$DEST/apt-$suite-$ARCH
	[ -n "${apt_ready[$suite]:-}" ] && return "${apt_ready[$suite]}"
	apt_ready[$suite]=1
	for tool in apt-get dpkg patchelf; do
		command -v "$tool" >/dev/null || { say "$tool is not installed"; return 1; }
	done
	mirror=$(debian_mirror)
	[ -n "$mirror" ] || { say "no Debian mirror in /etc/apt/sources.list(.d)"; return 1; }
	[ -r "$keyring" ] || { say "no $keyring"; return 1; }
	mkdir -p "$APT/sources.list.d" "$APT/preferences.d" "$APT/lists/partial" \
		"$APT/cache/archives/partial" || return 1
	# An empty dpkg status: the suite's own versions, whatever this
	# machine has installed.
	: >"$APT/preferences"
	: >"$APT/status"
	echo "deb [signed-by=$keyring] $mirror $suite main" >"$APT/sources.list"
	if ! apt_private update >"$APT/update.log" 2>&1; then
		say "apt-get update from $mirror $suite ($ARCH) failed: $(tail -3 "$APT/update.log" | tr '\n' ' ')"
		return 1
	fi
	apt_ready[$suite]=0
}

# fetch_one MINOR SUITE: download, unpack and patch python3.MINOR.
fetch_one() {
	local v=3.$1 suite=$2 root dl py ld pkgs deb lib
	root=$DEST/python$v
	py=$root/usr/bin/python$v
	if [ -x "$py" ] && [ -f "$root/.complete" ]; then
		echo "$py"
		return 0
	fi
	prepare_apt "$suite" || return 1
	rm -rf "$root" && mkdir -p "$root" || return 1
	dl=$DEST/debs-$v
	rm -rf "$dl" && mkdir -p "$dl" || return 1
	# The interpreter, its standard library, the suite's libc (the
	# binaries need its symbol versions) and the libraries extension
	# modules use.
	pkgs=(python$v-minimal libpython$v-minimal libpython$v-stdlib libpython$v
		libc6 libexpat1 zlib1g libffi8 libbz2-1.0 liblzma5 libzstd1 libmpdec4)
	if ! (cd "$dl" && apt_private download "${pkgs[@]}") >"$dl/download.log" 2>&1; then
		# Optional libraries have other names in other suites; retry
		# with what the interpreter cannot do without.
		pkgs=(python$v-minimal libpython$v-minimal libpython$v-stdlib libc6 libexpat1 zlib1g)
		if ! (cd "$dl" && apt_private download "${pkgs[@]}") >"$dl/download.log" 2>&1; then
			say "python$v: download from $suite failed: $(grep -E '^E:' "$dl/download.log" | head -2 | tr '\n' ' ')"
			return 1
		fi
	fi
	for deb in "$dl"/*.deb; do
		dpkg -x "$deb" "$root" || { say "python$v: dpkg -x $deb failed"; return 1; }
	done
	ld=$root/usr/lib/$TRIPLET/$LOADER
	[ -e "$ld" ] || ld=$root/lib/$TRIPLET/$LOADER
	[ -x "$py" ] && [ -e "$ld" ] || { say "python$v: no $py or dynamic loader in the packages"; return 1; }
	lib=$root/usr/lib/$TRIPLET:$root/lib/$TRIPLET
	# DT_RPATH (not RUNPATH) so that it also covers the libraries of
	# extension modules loaded later.
	patchelf --set-interpreter "$ld" --force-rpath --set-rpath "$lib" "$py" ||
		{ say "python$v: patchelf failed"; return 1; }
	# Another architecture's interpreter runs in its guest, not here.
	if [ "$ARCH" = "$HOST_ARCH" ] && ! "$py" -c 'import sys, time, threading' >/dev/null 2>"$dl/run.log"; then
		say "python$v: the unpacked interpreter does not run: $(head -3 "$dl/run.log" | tr '\n' ' ')"
		return 1
	fi
	rm -rf "$dl"
	touch "$root/.complete"
	echo "$py"
}

rc=0
for m in "${MINORS[@]}"; do
	case $m in
	*@*) fetch_one "${m%@*}" "${m#*@}" || rc=1 ;;
	*) fetch_one "$m" sid || rc=1 ;;
	esac
done
exit $rc
