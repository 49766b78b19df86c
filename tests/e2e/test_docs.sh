# The documentation keeps up with the binaries: every profd option (from
# profd --help) has a line in packaging/profd.conf and an entry in profd(8);
# every profctl command and option (from profctl [CMD] --help) is in
# profctl(1); every command and option that README.md and docs/ show
# exists, every relative link there resolves, and the README stays a short
# front page.  Needs no privileges.
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

# The README and the guide show only commands that exist.  Every profd and
# profctl command line in a code span or a fenced block (profctl's command,
# and each option up to a shell separator or "--") must be in the --help of
# what it runs, so a renamed option breaks this test rather than a reader's
# first try.  The design notes are checked the same way; a bare option in a
# span ("`--off-cpu`") is checked in the README and the guide only, against
# every --help, as the design notes also name other tools' options.
grep -E '^ +-' "$T/profctl.help" >"$T/profctl.opts"
for c in $cmds; do cat "$T/$c.help" "$T/profctl.opts" >"$T/cmd.$c"; done
cat "$T/profd.help" "$T/profctl.help" "$T"/*.help >"$T/all.help"
# Options of other programs that the guide names in a bare span.
FOREIGN_OPTS="--feature-gates" # the OpenTelemetry collector's (fleet.md)

# snippets FILE: "LINE<TAB>KIND<TAB>TEXT" for every code snippet: KIND
# "fence" for a line of a fenced block (without its # comment), "span" for
# a code span (a paragraph's lines joined first: a span may wrap).
snippets() {
	awk 'function flush(rest) {
		rest = para
		while (match(rest, /`[^`]+`/)) {
			print pline "\tspan\t" substr(rest, RSTART + 1, RLENGTH - 2)
			rest = substr(rest, RSTART + RLENGTH)
		}
		para = ""
	}
	/^ *```/ { flush(); fence = !fence; next }
	fence { l = $0; sub(/(^|[ \t])#.*/, "", l); if (l ~ /[^ \t]/) print NR "\tfence\t" l; next }
	/^[ \t]*$/ { flush(); next }
	{ if (para == "") pline = NR; para = para " " $0 }
	END { flush() }' "$1"
}

# opts_of WORD: the options a word names, one a line: "--rate=99",
# "[--json]", "--since/--until", "-o," give --rate, --json, --since and
# --until, -o; a value, a path or a placeholder gives nothing.
opts_of() {
	local p parts
	IFS=/ read -ra parts <<<"$1"
	for p in "${parts[@]}"; do
		p=${p#[\[(\"]}
		p=${p%%[]=),;:\"]*}
		[[ $p =~ ^(--[a-z][a-z0-9-]*|-[a-zA-Z])$ ]] && printf '%s\n' "$p"
	done
}
# has_opt FILE OPT: FILE lists OPT as a whole word (--all is not --all-processes).
has_opt() { grep -qE -- "(^|[^a-zA-Z0-9-])$2([^a-zA-Z0-9-]|\$)" "$1"; }

bad='' ncmds=0 nopts=0
# check_cmd WHERE WORD...: each profd or profctl (by file name, in any
# directory) that WORDS run is given only a command and options it knows.
# A program is run by the first word, or the first after a shell separator,
# sudo or VAR=value: /opt/profd in "tar -C /opt/profd" is not one.
check_cmd() {
	local where=$1 w o prog='' cmd='' help='' skip='' runs=1
	shift
	for w in "$@"; do
		if [ -n "$skip" ]; then skip=''; continue; fi
		case $w in '&&' | '||' | ';' | '|' | '&' | --) prog='' runs=1; continue ;; esac
		if [ -z "$prog" ]; then
			[ -n "$runs" ] || continue
			case ${w##*/} in
			profd) prog=profd help=$T/profd.help ncmds=$((ncmds + 1)) ;;
			profctl) prog=profctl cmd='' help=$T/profctl.opts ncmds=$((ncmds + 1)) ;;
			sudo | [A-Za-z_]*=*) ;;
			*) runs='' ;;
			esac
			continue
		fi
		if [ "$prog" = profctl ] && [ -z "$cmd" ] && [[ $w != -* ]]; then
			cmd=$w help=$T/cmd.$w
			[ -f "$help" ] || { bad="$bad
  $where: profctl $w: no such command"; prog=''; }
			continue
		fi
		for o in $(opts_of "$w"); do
			nopts=$((nopts + 1))
			has_opt "$help" "$o" || bad="$bad
  $where: $prog${cmd:+ $cmd} $o: not in its --help"
		done
		# profctl --socket PATH: PATH is not the command.
		if [ "$prog" = profctl ] && [ -z "$cmd" ] && { [ "$w" = --socket ] || [ "$w" = -s ]; }; then
			skip=1
		fi
	done
}

# check_bare WHERE WORD...: a span that starts with an option names one
# that some --help lists.
check_bare() {
	local where=$1 w o
	shift
	for w in "$@"; do
		case $w in '&&' | '||' | ';' | '|' | '&' | --) return ;; esac
		for o in $(opts_of "$w"); do
			case " $FOREIGN_OPTS " in *" $o "*) continue ;; esac
			nopts=$((nopts + 1))
			has_opt "$T/all.help" "$o" || bad="$bad
  $where: $o: in no --help of profd or profctl"
		done
	done
}

cd "$SRC" || fail "cannot enter $SRC"
for f in README.md docs/guide/*.md docs/design/*.md; do
	[ -f "$f" ] || fail "$f missing"
	while IFS=$'\t' read -r line kind text; do
		read -ra words <<<"$text"
		[ ${#words[@]} -gt 0 ] || continue
		if [ "$kind" = span ] && [ -f "$T/cmd.${words[0]}" ] && [[ ${words[1]:-} == -* ]]; then
			check_cmd "$f:$line" profctl "${words[@]}" # `dump --by-thread`
		elif [ "$kind" = span ] && [[ ${words[0]} == -?* ]]; then
			case $f in docs/design/*) ;; *) check_bare "$f:$line" "${words[@]}" ;; esac
		else
			check_cmd "$f:$line" "${words[@]}"
		fi
	done < <(snippets "$f")
done
[ -z "$bad" ] || fail "commands or options the binaries do not have:$bad"
ok "docs: $ncmds profd/profctl commands and $nopts options in README.md and docs/ are in their --help"

# Every relative link in README.md and docs/ leads to a file, and an
# anchor to a heading of it (GitHub's ids: lower case, punctuation dropped,
# spaces as hyphens).
heading_ids() {
	awk '/^ *```/ { fence = !fence; next } !fence && /^#+ / { sub(/^#+ +/, ""); print }' "$1" |
		tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}
nlinks=0
for f in README.md $(find docs -name '*.md' | sort); do
	while IFS=$'\t' read -r line target; do
		case $target in [a-z]*:*) continue ;; esac # http:, https:, mailto:
		nlinks=$((nlinks + 1))
		path=${target%%#*}
		dest=$f
		[ -z "$path" ] || dest=$(dirname "$f")/$path
		if [ ! -e "$dest" ]; then
			bad="$bad
  $f:$line: $target: no such file"
		elif [ "$path" != "$target" ] && [ -f "$dest" ] &&
			! heading_ids "$dest" | grep -qxF -- "${target#*#}"; then
			bad="$bad
  $f:$line: $target: no such heading"
		fi
	done < <(awk '/^ *```/ { fence = !fence; next }
		!fence { s = $0; while (match(s, /\]\([^) ]+\)/)) {
			print NR "\t" substr(s, RSTART + 2, RLENGTH - 3); s = substr(s, RSTART + RLENGTH) } }' "$f")
done
[ -z "$bad" ] || fail "broken links:$bad"
ok "docs: $nlinks relative links in README.md and docs/ resolve"

# The README is a front page: it opens with the two commands (build and
# run, build and test) and stays short; the rest lives in docs/.
first='# profd

```sh
packaging/setup.sh && build/profd --all-processes
packaging/setup.sh && tests/run
```'
[ "$(head -6 README.md)" = "$first" ] || fail "README.md does not start with its two commands:
$(head -6 README.md)"
n=$(wc -l <README.md)
[ "$n" -le 260 ] || fail "README.md has $n lines (at most 260: move the detail to docs/)"
ok "README.md: $n lines, starts with the two commands"
