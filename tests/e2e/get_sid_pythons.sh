#!/bin/bash
# get_sid_pythons.sh DEST [MINOR...]: fetch CPython 3.MINOR (default 14 and
# 15) from Debian sid's binary packages into DEST/python3.MINOR/, runnable
# here: sid's dynamic loader and libc come along and the interpreter is
# pointed at them with patchelf.  Prints one interpreter path per line on
# stdout, and on stderr why a version could not be had.
#
# apt runs with a private source list, package lists and cache under
# DEST/apt: the machine's apt configuration is read (for its Debian mirror)
# but never changed.  A version already unpacked is reused, so the tests
# download once per build tree.  Needs dpkg, apt-get and patchelf.
set -u

DEST=${1:?usage: get_sid_pythons.sh DEST [MINOR...]}
shift
MINORS=("$@")
[ "${#MINORS[@]}" -gt 0 ] || MINORS=(14 15)

say() { echo "get_sid_pythons: $*" >&2; }

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

APT=$DEST/apt
apt_private() {
	apt-get -q \
		-o Dir::Etc::SourceList="$APT/sources.list" \
		-o Dir::Etc::SourceParts="$APT/sources.list.d" \
		-o Dir::Etc::Preferences="$APT/preferences" \
		-o Dir::Etc::PreferencesParts="$APT/preferences.d" \
		-o Dir::State::Lists="$APT/lists" \
		-o Dir::Cache="$APT/cache" \
		-o APT::Get::List-Cleanup=0 \
		-o Acquire::http::Timeout=20 -o Acquire::https::Timeout=20 \
		-o Acquire::Retries=1 \
		"$@"
}

# Package lists once per run (sid changes daily; a stale list 404s).
apt_ready=
prepare_apt() {
	[ -n "$apt_ready" ] && return "$apt_ready"
	apt_ready=1
	local mirror keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	for tool in apt-get dpkg patchelf; do
		command -v "$tool" >/dev/null || { say "$tool is not installed"; return 1; }
	done
	mirror=$(debian_mirror)
	[ -n "$mirror" ] || { say "no Debian mirror in /etc/apt/sources.list(.d)"; return 1; }
	[ -r "$keyring" ] || { say "no $keyring"; return 1; }
	mkdir -p "$APT/sources.list.d" "$APT/preferences.d" "$APT/lists/partial" \
		"$APT/cache/archives/partial" || return 1
	: >"$APT/preferences"
	echo "deb [signed-by=$keyring] $mirror sid main" >"$APT/sources.list"
	if ! apt_private update >"$APT/update.log" 2>&1; then
		say "apt-get update from $mirror sid failed: $(tail -3 "$APT/update.log" | tr '\n' ' ')"
		return 1
	fi
	apt_ready=0
}

# fetch_one MINOR: download, unpack and patch python3.MINOR.
fetch_one() {
	local v=3.$1 root dl py ld pkgs deb
	root=$DEST/python$v
	py=$root/usr/bin/python$v
	if [ -x "$py" ] && [ -f "$root/.complete" ]; then
		echo "$py"
		return 0
	fi
	prepare_apt || return 1
	rm -rf "$root" && mkdir -p "$root" || return 1
	dl=$DEST/debs-$v
	rm -rf "$dl" && mkdir -p "$dl" || return 1
	# The interpreter, its standard library, sid's libc (the binaries
	# need its symbol versions) and the libraries extension modules use.
	pkgs=(python$v-minimal libpython$v-minimal libpython$v-stdlib libpython$v
		libc6 libexpat1 zlib1g libffi8 libbz2-1.0 liblzma5 libzstd1 libmpdec4)
	if ! (cd "$dl" && apt_private download "${pkgs[@]}") >"$dl/download.log" 2>&1; then
		# Optional libraries may have other names in sid by now; retry
		# with what the interpreter cannot do without.
		pkgs=(python$v-minimal libpython$v-minimal libpython$v-stdlib libc6 libexpat1 zlib1g)
		if ! (cd "$dl" && apt_private download "${pkgs[@]}") >"$dl/download.log" 2>&1; then
			say "python$v: download from sid failed: $(grep -E '^E:' "$dl/download.log" | head -2 | tr '\n' ' ')"
			return 1
		fi
	fi
	for deb in "$dl"/*.deb; do
		dpkg -x "$deb" "$root" || { say "python$v: dpkg -x $deb failed"; return 1; }
	done
	ld=$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
	[ -e "$ld" ] || ld=$root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
	[ -x "$py" ] && [ -e "$ld" ] || { say "python$v: no $py or dynamic loader in the packages"; return 1; }
	# DT_RPATH (not RUNPATH) so that it also covers the libraries of
	# extension modules loaded later.
	patchelf --set-interpreter "$ld" \
		--force-rpath --set-rpath "$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu" \
		"$py" || { say "python$v: patchelf failed"; return 1; }
	if ! "$py" -c 'import sys, time, threading' >/dev/null 2>"$dl/run.log"; then
		say "python$v: the unpacked interpreter does not run: $(head -3 "$dl/run.log" | tr '\n' ' ')"
		return 1
	fi
	rm -rf "$dl"
	touch "$root/.complete"
	echo "$py"
}

rc=0
for m in "${MINORS[@]}"; do
	fetch_one "$m" || rc=1
done
exit $rc
