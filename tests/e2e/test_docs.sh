# The packaged documentation keeps up with the binaries: every profd option
# (from profd --help) has a line in packaging/profd.conf and an entry in
# profd(8); every profctl command and option (from profctl [CMD] --help)
# is in profctl(1).  Needs no privileges.
. "$(dirname "$0")/lib.sh"

: "${SRC:?SRC must point at the source directory}"
PKG=$SRC/packaging

# "--foo-bar" as roff writes it: \-\-foo\-bar.
roff() { printf '%s' "$1" | sed 's/-/\\-/g'; }
long_opts() { grep -oE -- '--[a-z][a-z0-9-]+' | sort -u; }

"$PROFD" --help >"$T/profd.help" || fail "profd --help failed"
missing=
for o in $(long_opts <"$T/profd.help"); do
	key=${o#--}
	[ "$key" = help ] && continue
	# Command-line only: --config names the file, --check is an action.
	[ "$key" = config ] || [ "$key" = check ] || grep -qE "^#? *$key *=" "$PKG/profd.conf" ||
		missing="$missing profd.conf:$key"
	grep -qF -- "$(roff "$o")" "$PKG/profd.8" || missing="$missing profd.8:$o"
done
[ -z "$missing" ] || fail "undocumented profd options:$missing"
ok "profd: $(long_opts <"$T/profd.help" | wc -l) options in profd.conf and profd(8)"

"$PROFCTL" --help >"$T/profctl.help" || fail "profctl --help failed"
cmds=$(sed -n '/^commands:/,/^$/p' "$T/profctl.help" | sed -n 's/^  \([a-z][a-z-]*\)\( .*\)\{0,1\}$/\1/p')
[ -n "$cmds" ] || fail "no commands found in profctl --help"
for o in $(long_opts <"$T/profctl.help"); do
	grep -qF -- "$(roff "$o")" "$PKG/profctl.1" || missing="$missing profctl.1:$o"
done
for c in $cmds; do
	grep -qxF ".SS $c" "$PKG/profctl.1" || missing="$missing profctl.1:$c"
	"$PROFCTL" "$c" --help >"$T/$c.help" 2>&1 || fail "profctl $c --help failed: $(cat "$T/$c.help")"
	for o in $(long_opts <"$T/$c.help"); do
		grep -qF -- "$(roff "$o")" "$PKG/profctl.1" || missing="$missing profctl.1:$c$o"
	done
done
[ -z "$missing" ] || fail "undocumented in profctl(1):$missing"
ok "profctl: commands $(echo "$cmds" | tr '\n' ' ')in profctl(1)"
