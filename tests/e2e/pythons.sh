# The CPython interpreters to test, one path per line: $PROFD_TEST_PYTHONS
# (colon-separated) if set, else Debian's python3.11, every pyenv version
# from 3.9 on, and 3.14 and 3.15 from Debian sid's packages (or those
# PROFD_TEST_DEBIAN_PYTHONS names, MINOR[@SUITE] as get_debian_pythons.sh
# takes them), fetched once into the build tree by get_debian_pythons.sh
# (where that fails, the reason is printed and those versions are skipped).  Sourced by the Python
# end-to-end tests.
list_pythons() {
	if [ -n "${PROFD_TEST_PYTHONS:-}" ]; then
		echo "$PROFD_TEST_PYTHONS" | tr ':' '\n'
		return
	fi
	if [ "${PROFD_TEST_PYTHON_SET:-all}" = layouts ]; then
		all_pythons | one_per_layout
		return
	fi
	all_pythons
}

# one_per_layout: of the interpreters on stdin, the first of each frame
# layout profd walks: PyFrameObject chains (3.9, 3.10: the newest), then
# 3.11, 3.12, 3.13 and 3.14+ (the last two through _Py_DebugOffsets, 3.14
# with tagged stack refs; the newest of them).  For the runs that check
# another build or the sanitizers over the same walkers, where every
# patch release again would only repeat the plain run.
one_per_layout() {
	local p v layout
	declare -A minor=()
	declare -A pick=()
	while read -r p; do
		v=$("$p" -c 'import sys; print(sys.version_info[1])' 2>/dev/null) || continue
		case $v in 9 | 10) layout=frameobject ;; 11 | 12 | 13) layout=3.$v ;; *) layout=stackref ;; esac
		# The first of a version (Debian's own before pyenv's), the
		# newest version of a layout.
		[ "$v" -gt "${minor[$layout]:-0}" ] || continue
		minor[$layout]=$v
		pick[$layout]=$p
	done
	for layout in frameobject 3.11 3.12 3.13 stackref; do
		[ -n "${pick[$layout]:-}" ] && echo "${pick[$layout]}"
	done
	return 0
}

all_pythons() {
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
	# shellcheck disable=SC2086
	"$(dirname "${BASH_SOURCE[0]}")/get_debian_pythons.sh" "$BUILD/debian-pythons" \
		${PROFD_TEST_DEBIAN_PYTHONS:-14 15} ||
		echo "SKIP: Debian's CPython ${PROFD_TEST_DEBIAN_PYTHONS:-14 15} (reason above)" >&2
}

# split_chain: for tests/workloads/py_split.py, the lines of its known chain
# (L_MODULE, L_MAIN, L_LOOP, L_MID_H, L_MID_L, L_HEAVY, L_LIGHT) and
# complete_re, the python-only folded line of a complete stack: every
# frame the chain's own, in order, with a line the chain really executes.
split_chain() {
	SCRIPT=$SRC/tests/workloads/py_split.py
	L_MODULE=$(line_of 'main(seconds)  # called from <module>')
	L_MAIN=$(line_of '^        mid()$')
	L_LOOP=$(line_of 'while time.monotonic() < end:')
	L_MID_H=$(line_of '^    leaf_heavy()$')
	L_MID_L=$(line_of '^    leaf_light()$')
	L_HEAVY=$(line_of 'return spin(30000)')
	L_LIGHT=$(line_of 'return spin(10000)')
	complete_re="^<module> \\($SCRIPT:$L_MODULE\\);main \\($SCRIPT:($L_MAIN|$L_LOOP)\\)"
	complete_re="$complete_re(;mid \\($SCRIPT:($L_MID_H|$L_MID_L)\\)(;leaf_heavy \\($SCRIPT:$L_HEAVY\\)|;leaf_light \\($SCRIPT:$L_LIGHT\\))?(;spin \\($SCRIPT:[0-9]+\\))?)? [0-9]+\$"
}
line_of() { grep -n -- "$1" "$SCRIPT" | head -1 | cut -d: -f1; }

# split_share FOLDED: leaf_heavy's share of the leaf samples, in percent.
split_share() {
	awk -v h="$(sum_matching "$1" ";leaf_heavy ")" -v l="$(sum_matching "$1" ";leaf_light ")" \
		'BEGIN { printf "%.1f", h + l ? 100 * h / (h + l) : 0 }'
}
# split_ok SHARE: within 75 +- 3.  Two thousand samples put 3 points at
# about 3 standard errors; a shared machine's scheduler can still skew one
# window (CI: 79.3% once in 2014 samples, every other reading 74-76%), so
# a window out of the band is followed by a second, independent one
# (split_second_window), and only both out fails.  (CI read 78.9% and
# 80.2% in one process once: the workload then locked in phase with the
# clock; tests/workloads/py_split.py now varies its lengths more.)
split_ok() { awk -v s="$1" 'BEGIN { exit !(s >= 72 && s <= 78) }'; }
# split_second_window PID FOLDED SECONDS: the split of the last SECONDS,
# dumped after waiting them (--since: samples the first window did not
# hold, with profd's --bucket 1s).
split_second_window() {
	sleep "$3"
	ctl dump --pid "$1" --python-only --since "${3}s" -o "$2" || fail "pid $1: second dump failed"
	echo "a second window ($(total_samples "$2") samples): leaf_heavy $(split_share "$2")%"
}
