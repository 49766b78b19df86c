# profctl stacks --locals, like py-spy dump --locals: a Python job blocked
# in a frame with variables of every kind the reader shows by value
# (tests/workloads/py_locals.py), on every interpreter pythons.sh lists.
# The blocked frame lists its arguments first, marked, then its locals,
# each with the repr Python itself gives (an instance as
# <TYPE at 0xADDR>, long values cut with "..."), in text and
# in JSON; a client that does not ask gets no locals; --locals with
# --async is refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pythons.sh"

SCRIPT=$SRC/tests/workloads/py_locals.py
L_BLOCK=$(line_of 'blocked here')

# check_json VERSION FILE: the blocked frame's locals, against what the
# interpreter's own repr says.
check_json() {
	"$1" - "$2" "$SCRIPT" "$L_BLOCK" >"$T/summary" <<'PY' || fail "python $1: --locals JSON wrong"
import json, re, sys
threads = json.load(open(sys.argv[1]))
want_frame = "blocked (%s:%s)" % (sys.argv[2], sys.argv[3])
frames = [f for t in threads for f in t["frames"] if f["name"].endswith(want_frame)]
assert len(frames) == 1, [f["name"] for t in threads for f in t["frames"]]
got = frames[0]["locals"]
names = [l["name"] for l in got]
args = [l["name"] for l in got if l["arg"]]
# positional, keyword-only, *args, **kwargs: the order of the slots
assert args == ["count", "flag", "rest", "extra"], args
assert names[:len(args)] == args, ("arguments first", names)
by = {l["name"]: l for l in got}
exact = {
    "count": repr(5), "rest": repr(("x",)), "flag": repr(True), "small": repr(42),
    "negative": repr(-7), "big": repr(2**100), "ratio": repr(0.25),
    "text": repr("h\u00e9llo\tworld"), "wide": repr("\u65e5\u672c"), "astral": repr("py\U0001f40d"),
    "quoted": repr("it's"), "data": repr(b"\x00ab\xff"), "nothing": repr(None), "no": repr(False),
    "items": repr([1, "two", 3.5]), "pair": repr((1, 2)),
}
for k, v in exact.items():
    assert k in by, ("missing", k, names)
    assert by[k]["repr"] == v, (k, by[k]["repr"], v)
assert by["many"]["repr"] == "[0, 1, 2, 3, ...]", by["many"]
assert re.fullmatch(r"'x{50,100}\.\.\.", by["long_text"]["repr"]), by["long_text"]
# dicts, combined and split, in every keys layout: the first items
assert by["extra"]["repr"] == repr({"extra_key": 1}), by["extra"]
assert by["table"]["repr"] == repr({"a": 1}), by["table"]
assert by["numbers"]["repr"] == "{0: '0', 1: '1', 2: '2', 3: '3', ...}", by["numbers"]
assert by["attrs"]["repr"] == repr({"name": "w"}), by["attrs"]
# nested containers as Python shows them, PYLOCALS_DEPTH (3) levels deep
assert by["nested"]["repr"] == "{'a': False, 'b': (1, 2, 3), 'c': [[1, [2, [...]]]]}", by["nested"]
assert by["loop"]["repr"] == "[1, [1, [1, [1, [...]]]]]", by["loop"]
assert re.fullmatch(r"<Widget at 0x[0-9a-f]+>", by["widget"]["repr"]), by["widget"]
assert re.fullmatch(r"<function at 0x[0-9a-f]+>", by["inner"]["repr"]), by["inner"]
assert by["small"]["scope"] == "cell", by["small"]
assert all(by[k]["scope"] == "local" for k in ("big", "text", "items")), got
print("%d variables, %d arguments first; small is a cell" % (len(got), len(args)))
PY
}

# check_text VERSION PID FILE: the same under the frame's line, indented.
check_text() {
	awk -v h="Thread $2 " 'index($0, h) == 1 { on = 1; next } /^$/ { on = 0 } on' "$3" >"$T/main.txt"
	grep -A3 -F "blocked ($SCRIPT:$L_BLOCK)" "$T/main.txt" | sed -n 2p | grep -qx '        count = 5  \[arg\]' ||
		{ cat "$T/main.txt" >&2; fail "python $1: no 'count = 5  [arg]' under the blocked frame"; }
	grep -qx "        small = 42  \[cell\]" "$T/main.txt" ||
		{ cat "$T/main.txt" >&2; fail "python $1: no 'small = 42  [cell]'"; }
	grep -q "^        big = 1267650600228229401496703205376$" "$T/main.txt" ||
		{ cat "$T/main.txt" >&2; fail "python $1: 2**100 not shown"; }
}

mapfile -t PYS < <(list_pythons)
[ "${#PYS[@]}" -gt 0 ] || skip "no CPython 3.9+ found"
[ "$(id -u)" = 0 ] || skip "needs root to load BPF programs (running as uid $(id -u))"
JOBS=()
VERS=()
for py in "${PYS[@]}"; do
	start_ready nice -n 19 "$py" "$SCRIPT"
	JOBS+=("$W")
	VERS+=("$py")
done
start_profd
for i in "${!JOBS[@]}"; do
	W=${JOBS[$i]} py=${VERS[$i]}
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	ctl stacks --pid "$W" --locals >"$T/st.txt" 2>"$T/st.err" ||
		{ cat "$T/st.err" >&2; fail "python $ver: stacks --locals failed"; }
	check_text "$ver" "$W" "$T/st.txt"
	ctl stacks --pid "$W" --locals --json >"$T/st.json" || fail "python $ver: stacks --locals --json failed"
	check_json "$py" "$T/st.json"
	ok "python $ver ($py): $(cat "$T/summary")"
done
# Without --locals: no variables, in text or JSON.
W=${JOBS[0]}
ctl stacks --pid "$W" >"$T/plain.txt" || fail "stacks without --locals failed"
grep -q "count = 5" "$T/plain.txt" && fail "variables listed without --locals"
ctl stacks --pid "$W" --json | grep -q '"locals"' && fail "JSON has locals without --locals"
ctl stacks --pid "$W" --locals --async >/dev/null 2>&1 && fail "--locals --async accepted"
ok "no variables unless asked; --locals --async refused"
stop_profd
