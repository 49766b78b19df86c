# private_apt.sh: sourced by the scripts that fetch Debian packages for
# guests (kernel_fetch.sh, guest_userland.sh, vmlinux/gen_arm64.sh).
# APT_ARCH (default amd64) is the architecture whose packages apt sees.

# host_mirror: the URI of the host's main Debian archive (not -security),
# from deb822 sources or the one-line sources.list format.
host_mirror() {
	local f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' "$f" |
			grep -v -- '-security' | grep -m1 '/debian/\?$' || true)
		[ -n "$uri" ] && { echo "$uri"; return; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) { print $i; break } }' "$f" |
			grep -v -- '-security' | grep -m1 '/debian/\?$' || true)
		[ -n "$uri" ] && { echo "$uri"; return; }
	done
}

# private_apt DIR ARGS...: apt-get/apt-cache with sources, lists, cache
# and dpkg status of DIR's own; the host's apt.conf.d still applies (a
# proxy, say), its sources and preferences do not.
private_apt() {
	local dir=$1 tool=$2; shift 2
	"$tool" -q -o Dir::Etc::SourceList="$dir/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
		-o Dir::State="$dir/state" -o Dir::State::status="$dir/status" \
		-o Dir::Cache="$dir/cache" -o APT::Architecture="${APT_ARCH:-amd64}" \
		-o APT::Architectures::="${APT_ARCH:-amd64}" -o Acquire::Languages=none \
		-o APT::Sandbox::User=root "$@"
}
