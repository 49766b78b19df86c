#!/bin/sh
# unit.bpf_headers_standalone: every bpf/*.bpf.h compiles on its own, after
# vmlinux.h alone (what each BPF program includes first), in both builds
# (as is and with PROFD_LEGACY, kcompat.bpf.h), with the flags the real
# objects are built with (cmake/BpfSkeleton.cmake).  A header that uses
# what another defines must include it: found only through the order a
# program happens to include them in, it breaks the next program that
# includes them in another.  Needs no privileges.
# Usage: bpf_headers.sh SOURCE_DIR CLANG FLAGS...
set -eu
src=$1 clang=$2
shift 2

fails=0 n=0
for h in "$src"/bpf/*.bpf.h; do
	name=$(basename "$h")
	for variant in modern legacy; do
		def=
		[ "$variant" = legacy ] && def=-DPROFD_LEGACY=1
		n=$((n + 1))
		if ! printf '#include "vmlinux.h"\n#include "%s"\n' "$name" |
			"$clang" "$@" $def -x c -c - -o /dev/null; then
			echo "FAIL: $name ($variant) does not compile on its own"
			fails=$((fails + 1))
		fi
	done
done
echo "$((n - fails)) of $n header builds compile on their own"
[ "$fails" -eq 0 ]
