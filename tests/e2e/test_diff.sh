#!/bin/bash
# e2e: `profctl diff BEFORE.folded AFTER.folded -o out.svg` draws a
# differential flamegraph: a frame that grew is red, one that shrank is
# blue, unchanged ones grey (fill colours parsed from the SVG), tooltips
# carry both counts and the delta, and a path only "before" has is listed.
# Needs no BPF, no root and no other tool.
set -u

BUILD=${BUILD:?BUILD must point at the build directory}
PROFCTL=$BUILD/profctl

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
[ -x "$PROFCTL" ] || fail "$PROFCTL not built"
"$PROFCTL" diff --help >/dev/null 2>&1 ||
	fail "profctl has no 'diff' command (cmd_diff_files must be in profctl's command table)"

T=$(mktemp -d /tmp/profd-diff.XXXXXX)
trap 'rm -rf "$T"' EXIT

cat >"$T/before.folded" <<'EOP'
main (/srv/app.py:1);compute (/srv/app.py:5);grow_me (/srv/app.py:9) 100
main (/srv/app.py:1);compute (/srv/app.py:5);shrink_me (/srv/app.py:12) 400
main (/srv/app.py:1);compute (/srv/app.py:5);steady 200
main (/srv/app.py:1);old_path;gone_leaf_[k] 200
main (/srv/app.py:1);io 100
EOP
cat >"$T/after.folded" <<'EOP'
main (/srv/app.py:1);compute (/srv/app.py:5);grow_me (/srv/app.py:9) 1000
main (/srv/app.py:1);compute (/srv/app.py:5);shrink_me (/srv/app.py:12) 200
main (/srv/app.py:1);compute (/srv/app.py:5);steady 400
main (/srv/app.py:1);io 200
main (/srv/app.py:1);[libnew.so+0x10] 200
EOP

"$PROFCTL" diff "$T/before.folded" "$T/after.folded" -o "$T/diff.svg" 2>"$T/err" ||
	fail "profctl diff failed: $(cat "$T/err")"
grep -q "3 frames grew, 1 shrank" "$T/err" || fail "summary line: $(cat "$T/err")"
svg=$T/diff.svg
grep -q '^<svg ' "$svg" && grep -q '</svg>$' "$svg" || fail "not an SVG document"

# frame NAME -> "FILL|TOOLTIP" (tooltip: the <title>'s second line).
frame() {
	awk -v name="$1" '
		/<title>/ { t = $0; sub(/.*<title>/, "", t) }
		t == name && /<\/title>/ {
			tip = $0; sub(/<\/title>.*/, "", tip)
			fill = $0; sub(/.*fill="#/, "", fill); fill = substr(fill, 1, 6)
			print fill "|" tip; exit
		}' "$svg"
}
# colour HEX -> red | blue | grey | other
colour() {
	local r=$((16#${1:0:2})) g=$((16#${1:2:2})) b=$((16#${1:4:2}))
	if [ $r = $g ] && [ $g = $b ]; then echo grey
	elif [ $r -gt $b ] && [ $r -gt $g ]; then echo red
	elif [ $b -gt $r ] && [ $b -gt $g ]; then echo blue
	else echo other; fi
}
expect() { # NAME COLOUR TOOLTIP-REGEX
	local got fill tip
	got=$(frame "$1")
	[ -n "$got" ] || fail "frame '$1' not drawn"
	fill=${got%%|*}
	tip=${got#*|}
	[ "$(colour "$fill")" = "$2" ] || fail "'$1' is #$fill ($(colour "$fill")), want $2"
	echo "$tip" | grep -Eq "$3" || fail "'$1' tooltip '$tip' does not match /$3/"
	ok "$1: $2 (#$fill), $tip"
}

# Totals: 1000 before, 2000 after; colours compare shares of each total.
expect "grow_me (/srv/app.py:9)" red \
	'^before: 100 \(10\.00%\)  after: 1000 \(50\.00%\)  delta: \+900 \(\+40\.00 pp\)$'
expect "shrink_me (/srv/app.py:12)" blue \
	'^before: 400 \(40\.00%\)  after: 200 \(10\.00%\)  delta: -200 \(-30\.00 pp\)$'
expect steady grey 'delta: \+200 \(\+0\.00 pp\)$'
expect "[libnew.so+0x10]" red '^before: 0 \(0\.00%\)  after: 200 \(10\.00%\)'
grep -q 'Only in before (not drawn): 1 path, 200 samples (20.00%)' "$svg" ||
	fail "gone path not summarized"
grep -q '>old_path  .* main (/srv/app.py:1): before 200 (20.00%), after 0<' "$svg" ||
	fail "gone path old_path not listed with its count"
ok "old_path (only before) listed with its count"

# --absolute: raw counts, so steady (200 -> 400) turns red.
"$PROFCTL" diff --absolute -q "$T/before.folded" "$T/after.folded" >"$T/abs.svg" ||
	fail "profctl diff --absolute failed"
svg=$T/abs.svg
expect steady red 'delta: \+200'

# Usage errors.
"$PROFCTL" diff "$T/before.folded" 2>/dev/null; [ $? = 2 ] || fail "one file accepted"
"$PROFCTL" diff "$T/before.folded" "$T/missing.folded" -o "$T/x.svg" 2>"$T/err"
[ $? = 1 ] && grep -q "missing.folded" "$T/err" || fail "missing file not reported"
echo "profctl diff: all checks passed"
