# The CPython interpreters to test, one path per line: $PROFD_TEST_PYTHONS
# (colon-separated) if set, else Debian's python3.11, every pyenv version
# from 3.9 on, and 3.14 and 3.15 from Debian sid's packages, fetched once
# into the build tree by get_sid_pythons.sh (where that fails, the reason
# is printed and those versions are skipped).  Sourced by the Python
# end-to-end tests.
list_pythons() {
	if [ -n "${PROFD_TEST_PYTHONS:-}" ]; then
		echo "$PROFD_TEST_PYTHONS" | tr ':' '\n'
		return
	fi
	local p root
	for p in /usr/bin/python3.9 /usr/bin/python3.10 /usr/bin/python3.11 /usr/bin/python3.12 /usr/bin/python3.13 /usr/local/bin/python3.*; do
		[ -x "$p" ] && echo "$p"
	done
	if command -v pyenv >/dev/null 2>&1 && root=$(pyenv root 2>/dev/null); then
		for p in "$root"/versions/3.*/bin/python3; do
			[ -x "$p" ] || continue
			case "$("$p" -c 'import sys; print(sys.version_info[1] >= 9)' 2>/dev/null)" in
			True) echo "$p" ;;
			esac
		done
	fi
	"$(dirname "${BASH_SOURCE[0]}")/get_sid_pythons.sh" "$BUILD/sid-pythons" 14 15 ||
		echo "SKIP: sid's CPython 3.14/3.15 (reason above)" >&2
}
