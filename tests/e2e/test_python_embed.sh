# A program that embeds CPython through a shared libpython3.X.so and is
# not called python (uwsgi, a game engine, a plugin host) is found by the
# _PyRuntime its libpython defines: complete stacks with the right lines.
# The host is built here against the shared libpython of every
# interpreter on the machine that has one (Debian's libpython3.11, pyenv's
# builds, sid's libpython3.14 and 3.15); skips where none has.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pythons.sh"

split_chain # SCRIPT, its chain's lines, complete_re (pythons.sh)
HOST_SRC=$SRC/tests/workloads/embed/py_embed_host.c

CC=${CC:-cc}
command -v "$CC" >/dev/null || fail "no C compiler ($CC) to build the embedding host (packaging/setup.sh installs build-essential)"

# build_host PYTHON OUT: build the host against the shared libpython of
# PYTHON (beside it or in its LIBDIR); fails (quietly) when there is none.
# An interpreter run by a loader of its own (sid's, see get_debian_pythons.sh)
# gets the host the same loader and library path.
build_host() {
	local py=$1 out=$2 ver d dir= interp rpath
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || return 1
	for d in "$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR") or "")')" \
		"$(dirname "$py")/../lib" "$(dirname "$py")/../lib/x86_64-linux-gnu"; do
		[ -n "$d" ] && [ -e "$d/libpython$ver.so.1.0" ] && { dir=$(realpath "$d"); break; }
	done
	[ -n "$dir" ] || return 1
	"$CC" -O1 -o "$out" "$HOST_SRC" -L"$dir" -l:"libpython$ver.so.1.0" -Wl,-rpath,"$dir" \
		-Wl,--unresolved-symbols=ignore-in-shared-libs 2>"$out.err" || return 1
	interp=$(patchelf --print-interpreter "$py" 2>/dev/null) || interp=
	if [ -n "$interp" ] && [ "$interp" != "$(patchelf --print-interpreter /bin/sh 2>/dev/null)" ]; then
		rpath=$(patchelf --print-rpath "$py")
		# DT_RPATH (not RUNPATH): libpython's own libraries come from there too.
		patchelf --remove-rpath "$out" &&
			patchelf --set-interpreter "$interp" --force-rpath \
				--set-rpath "$dir${rpath:+:$rpath}" "$out" || return 1
	fi
	PYTHONHOME=$PYHOME "$out" /dev/null >/dev/null 2>&1 || return 1 # starts and finalizes
	ldd "$out" 2>/dev/null | grep -q "libpython$ver" # linked to the shared library
}

mapfile -t PYTHONS < <(list_pythons)
declare -A seen=()
hosts=0
for py in "${PYTHONS[@]}"; do
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	[ -z "${seen[$ver]:-}" ] || continue
	HOST=$T/plugin_host_${ver/./_}
	# Where the stdlib is: the host lives elsewhere than the interpreter.
	PYHOME=$("$py" -c 'import sys; print(sys.prefix)')
	build_host "$py" "$HOST" || { echo "python $ver ($py): no shared libpython to embed"; continue; }
	seen[$ver]=1
	hosts=$((hosts + 1))
	PYTHONHOME=$PYHOME run_bg "$HOST" "$SCRIPT" 30
	W=${CHILDREN[-1]}
	sleep 0.5
	lib=$(grep -o '/[^ ]*libpython[^ ]*\.so[^ ]*' "/proc/$W/maps" | head -1)
	[ -n "$lib" ] || fail "python $ver: the host did not map a libpython"
	start_profd --rate 999
	sleep 3
	ctl dump --pid "$W" --python-only -o "$T/embed.folded" || fail "python $ver: dump failed"
	stop_profd
	kill "$W"; wait "$W" 2>/dev/null
	total=$(total_samples "$T/embed.folded")
	good=$(grep -E "$complete_re" "$T/embed.folded" | awk '{ s += $NF } END { print s + 0 }')
	[ "$total" -ge 300 ] || fail "python $ver: only $total samples of $(basename "$HOST")"
	pct=$(awk -v g="$good" -v t="$total" 'BEGIN { printf "%.2f", 100 * g / t }')
	echo "python $ver embedded in $(basename "$HOST") ($lib): $good/$total = $pct% complete"
	awk -v p="$pct" 'BEGIN { exit !(p >= 99) }' || {
		grep -vE "$complete_re" "$T/embed.folded" | head -5 >&2
		fail "python $ver embedded: only $pct% of samples have a complete stack"
	}
	ok "python $ver embedded in a program not called python"
done
[ "$hosts" -gt 0 ] || skip "no interpreter with a shared libpython and its python3.X-config on this machine"
