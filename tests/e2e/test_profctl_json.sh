# profctl --json against the real daemon: the same answer whether --json
# comes before the command or after it; JSON that parses from every
# command that prints data (list, stats, stacks, top, dump, record, diff)
# and for errors; one clear refusal (exit 2, naming the command) where
# --json means nothing (render) or would share stdout with a profile; and
# a process name holding a quote, a backslash, a tab, a control character
# and a byte that is not UTF-8 escaped so that it reads back exactly.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || fail "python3 is missing (packaging/setup.sh installs it)"

# json_ok FILE WHAT: FILE is one JSON document.
json_ok() { python3 -m json.tool "$1" >/dev/null 2>&1 || fail "$2 is not valid JSON: $(head -c 600 "$1")"; }
# numbers_out: the layout and keys without the counters, which move
# between two calls.
numbers_out() { sed -E 's/[0-9]+/N/g'; }

# The workload runs as a file whose name needs every kind of escaping: its
# command name and executable path carry it.
NAME=$'q"b\\s\tc\x01\xff'
cp "$WORKLOADS/cpu_split" "$T/$NAME"
run_bg "$T/$NAME" 30
W=${CHILDREN[-1]}
start_profd --pid "$W" --rate 99 --off-cpu
sleep 1.5

# --json anywhere: before the command, after it, after its options, -j.
for c in stats list; do
	ctl --json "$c" >"$T/$c.before.json" || fail "--json $c failed"
	ctl "$c" --json >"$T/$c.after.json" || fail "$c --json failed"
	ctl "$c" -j >"$T/$c.short.json" || fail "$c -j failed"
	json_ok "$T/$c.before.json" "--json $c"
	json_ok "$T/$c.after.json" "$c --json"
	for f in after short; do
		cmp -s <(numbers_out <"$T/$c.before.json") <(numbers_out <"$T/$c.$f.json") ||
			fail "--json $c and $c ($f) differ: $(diff "$T/$c.before.json" "$T/$c.$f.json" | head -20)"
	done
done
ctl stacks --pid "$W" --json >"$T/stacks.after.json" || fail "stacks --json failed"
ctl --json stacks --pid "$W" >"$T/stacks.before.json" || fail "--json stacks failed"
json_ok "$T/stacks.after.json" "stacks --json"
# A thread's state and stack move between two calls: the same threads
# with the same keys.
python3 - "$T/stacks.before.json" "$T/stacks.after.json" <<'PYEOF' || fail "--json stacks and stacks --json differ (above)"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
shape = lambda threads: [(t["tid"], sorted(t)) for t in threads]
assert shape(a) == shape(b), (shape(a), shape(b))
PYEOF
ok "--json before and after the command: the same keys and layout (stats, list, stacks)"

# Every other command that prints data.
ctl top --pid "$W" --json >"$T/top.json" || fail "top --json failed"
json_ok "$T/top.json" "top --json"
ctl --json dump --pid "$W" >"$T/dump.json" || fail "--json dump failed"
json_ok "$T/dump.json" "--json dump (the profile)"
ctl dump --pid "$W" -o "$T/a.folded" --json >"$T/dump.meta.json" || fail "dump -o --json failed"
json_ok "$T/dump.meta.json" "dump -o FILE --json"
ctl --json record --pid "$W" --duration 1s -f folded -o "$T/b.folded" >"$T/record.json" 2>"$T/record.err" ||
	fail "record --json failed: $(cat "$T/record.err")"
json_ok "$T/record.json" "record --json"
ctl diff "$T/a.folded" "$T/b.folded" -o "$T/d.svg" --json >"$T/diff.json" || fail "diff --json failed"
json_ok "$T/diff.json" "diff --json"
python3 - "$T" "$W" <<'PYEOF' || fail "JSON of top, dump, record or diff wrong (above)"
import json, os, sys
t, pid = sys.argv[1], int(sys.argv[2])
load = lambda n: json.load(open(os.path.join(t, n)))
top = load("top.json")
assert top["target"] == f"pid {pid}" and top["total"] > 0, top
names = [f["name"] for f in top["functions"]]
assert "spin" in names, names
assert all(f["own"] <= f["total"] <= top["total"] for f in top["functions"]), top
for n, path in (("dump.meta.json", "a.folded"), ("record.json", "b.folded")):
    m = load(n)
    assert m["output"] == os.path.join(t, path) and m["format"] == "folded", m
    assert m["bytes"] == os.path.getsize(m["output"]) and m["total"] > 0, m
    assert m["unit"] == "samples", m
d = load("diff.json")
assert d["output"] == os.path.join(t, "d.svg") and d["before_total"] > 0 and d["after_total"] > 0, d
assert load("dump.json"), "an empty JSON profile"
print(f"top: {len(names)} functions; record: {load('record.json')['total']} samples; "
      f"diff: {d['grew']} grew, {d['shrank']} shrank")
PYEOF
ok "top, dump (profile and -o FILE), record and diff print valid JSON"

# Errors under --json are JSON on stdout, naming the command.
if ctl dump --pid 999999 --json >"$T/err.json" 2>/dev/null; then fail "dump of a missing pid succeeded"; fi
json_ok "$T/err.json" "the error of dump --json"
grep -q '"error": ".*no such process.*", "command": "dump"' "$T/err.json" || fail "dump error: $(cat "$T/err.json")"

# Refused where --json means nothing: exit 2, one clear error.
printf 'main;work 5\n' >"$T/p.folded"
for args in "--json render $T/p.folded -o $T/x.svg" "render --json $T/p.folded -o $T/x.svg"; do
	rc=0
	# shellcheck disable=SC2086
	ctl $args >"$T/refused.json" 2>"$T/refused.err" || rc=$?
	[ "$rc" = 2 ] || fail "profctl $args exited $rc, not 2"
	json_ok "$T/refused.json" "render's refusal"
	grep -q '"error": "--json means nothing to render: .*", "command": "render"' "$T/refused.json" ||
		fail "unclear refusal: $(cat "$T/refused.json")"
	[ ! -e "$T/x.svg" ] || fail "render wrote its file though --json was refused"
done
refusal=$(sed -n 's/.*"error": "\([^"]*\)".*/\1/p' "$T/refused.json")
# ... and where --json would share stdout with a profile or an SVG.
for args in "dump --pid $W -f svg" "diff $T/a.folded $T/b.folded"; do
	rc=0
	# shellcheck disable=SC2086
	ctl --json $args >"$T/refused.json" 2>/dev/null || rc=$?
	[ "$rc" = 2 ] || fail "profctl --json $args exited $rc, not 2"
	grep -q '"error": "--json.* -o FILE.*"' "$T/refused.json" || fail "unclear refusal: $(cat "$T/refused.json")"
done
ok "render refuses --json (exit 2: $refusal); dump and diff without -o FILE too"

# The name, escaped: it reads back as the bytes it is, but for the byte
# that is not UTF-8 (U+FFFD) and, in stacks' thread header, the tab (a
# space: the header is tab-separated).
kill "$W"
wait "$W" 2>/dev/null
for _ in $(seq 1 50); do
	ctl --json list --all | grep -q "\"pid\": $W, .*\"exited\": true" && break
	sleep 0.1
done
for _ in 1 2 3; do
	ctl --json list --all >"$T/list.before.json" && ctl list --all --json >"$T/list.after.json" || fail "list failed"
	cmp -s "$T/list.before.json" "$T/list.after.json" && break
	sleep 0.5
done
cmp -s "$T/list.before.json" "$T/list.after.json" ||
	fail "--json list and list --json differ once nothing moves: $(diff "$T/list.before.json" "$T/list.after.json")"
ok "--json list and list --json are byte-identical ($(wc -c <"$T/list.after.json") bytes)"
grep -qF '\u0001' "$T/list.after.json" || fail "a control character is not \\u-escaped: $(cat "$T/list.after.json")"
python3 - "$T/list.after.json" "$T/stacks.after.json" "$W" "$T" <<'PYEOF' || fail "escaped names wrong (above)"
import json, sys
procs = json.load(open(sys.argv[1]))
threads = json.load(open(sys.argv[2]))
pid, t = int(sys.argv[3]), sys.argv[4]
want = 'q"b\\s\tc\x01\ufffd'
p = next((x for x in procs if x["pid"] == pid), None)
assert p is not None, procs
assert p["exited"] is True, p
assert p["comm"] == want, (p["comm"], want)
assert p["exe"] == t + "/" + want, (p["exe"], want)
main = next((x for x in threads if x["tid"] == pid), None)
assert main is not None, threads
assert main["name"] == want.replace("\t", " "), (main["name"], want)
print("comm %r, exe ...%r, thread %r" % (p["comm"], p["exe"][-12:], main["name"]))
PYEOF
ok "quotes, backslashes, tabs, control characters and invalid UTF-8 escaped in list and stacks"
stop_profd
