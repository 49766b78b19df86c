#!/bin/bash
# e2e: every output format of `profctl render` is read by its real
# consumer: pprof by `go tool pprof` (-top, -traces, -raw), pstats by
# Python's pstats.Stats under every CPython found (3.9+), speedscope JSON
# against speedscope's file-format schema (python3 jsonschema), and our
# json by Python's json module against docs/json-format.md.  Those need no
# BPF and no root.  Last, a pprof dump from the real daemon must name the
# workload's binary as a Mapping with its build-id (root and BPF).  A
# missing consumer or privilege is a skip (77) naming it, after every
# check that can run has been run.
set -u

BUILD=${BUILD:?BUILD must point at the build directory}
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PROFCTL=$BUILD/profctl
SCHEMA=$SRC/tests/data/speedscope-file-format-schema.json
. "$SRC/tests/e2e/pythons.sh"

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
[ -x "$PROFCTL" ] || fail "$PROFCTL not built"

T=$(mktemp -d /tmp/profd-formats.XXXXXX)
trap 'rm -rf "$T"' EXIT
missing=()

# 700 samples at 100 Hz: Python over native, kernel and unknown frames,
# a recursion (rec 3 deep), and a stack without Python frames (10).
cat >"$T/p.folded" <<'EOP'
main (/srv/app/work.py:10);compute (/srv/app/work.py:20);leaf_a (/srv/app/work.py:4) 300
main (/srv/app/work.py:10);compute (/srv/app/work.py:21);leaf_a (/srv/app/work.py:5);PyObject_Free 100
main (/srv/app/work.py:10);io_wait (/srv/app/work.py:30);__libc_read;entry_SYSCALL_64_[k];ksys_read_[k] 120
main (/srv/app/work.py:10);io_wait (/srv/app/work.py:30) 70
main (/srv/app/work.py:10);[libfoo.so+0x1a2b] 50
main (/srv/app/work.py:10);rec (/srv/app/work.py:40);rec (/srv/app/work.py:41);rec (/srv/app/work.py:41) 40
gc_collect;[unknown] 20
EOP

render() { # FORMAT OUT [options]
	local fmt=$1 out=$2
	shift 2
	"$PROFCTL" render -i "$T/p.folded" --format "$fmt" -o "$out" --rate 100 "$@" ||
		fail "profctl render --format $fmt failed"
	[ -s "$out" ] || fail "profctl render --format $fmt wrote nothing"
}

# ---- pprof ----
check_pprof() {
	local top raw
	render pprof "$T/p.pb.gz"
	export HOME=${HOME:-$T} GOCACHE=${GOCACHE:-$T/gocache} PPROF_TMPDIR=$T
	top=$(go tool pprof -sample_index=samples -top "$T/p.pb.gz" 2>&1) ||
		fail "go tool pprof -top: $top"
	echo "$top" | sed 's/^/  pprof: /'
	echo "$top" | grep -q "Showing nodes accounting for 700, 100% of 700 total" ||
		fail "pprof -top: total is not 700 samples"
	echo "$top" | grep -Eq '^ +300 +42\.86% +42\.86% +400 +57\.14% +leaf_a$' ||
		fail "pprof -top: leaf_a is not 300 flat / 400 cum"
	echo "$top" | grep -Eq '^ +120 .* ksys_read_\[k\]$' || fail "pprof -top: kernel frame"
	echo "$top" | grep -Eq '^ +50 .* \[libfoo\.so\+0x1a2b\]$' || fail "pprof -top: unknown frame"
	echo "$top" | grep -Eq '^ +0 .* +680 +97\.14% +main$' || fail "pprof -top: main cum 680"
	top=$(go tool pprof -top "$T/p.pb.gz" 2>&1) || fail "go tool pprof -top (cpu): $top"
	echo "$top" | grep -q "Type: cpu" || fail "pprof: default sample type is not cpu"
	echo "$top" | grep -Eq "accounting for (7s|7000ms), 100% of (7s|7000ms) total" || fail "pprof: 700 samples at 100 Hz are not 7s"
	raw=$(go tool pprof -raw "$T/p.pb.gz" 2>&1) || fail "go tool pprof -raw: $raw"
	echo "$raw" | grep -q "PeriodType: cpu nanoseconds" || fail "pprof -raw: period type"
	echo "$raw" | grep -q "Period: 10000000" || fail "pprof -raw: period"
	echo "$raw" | grep -Eq '^ +300 +3000000000: ' || fail "pprof -raw: sample of 300"
	echo "$raw" | grep -Eq ' leaf_a /srv/app/work\.py:4 ' || fail "pprof -raw: leaf_a line 4"
	echo "$raw" | grep -Eq ' leaf_a /srv/app/work\.py:5 ' || fail "pprof -raw: leaf_a line 5"
	echo "$raw" | grep -Eq ' rec /srv/app/work\.py:41 ' || fail "pprof -raw: rec line 41"
	echo "$raw" | grep -Eq '0x1a2b M=[0-9]+ \[libfoo\.so\+0x1a2b\]' || fail "pprof -raw: module address"
	echo "$raw" | grep -Eq '^[0-9]+: 0x0/0x1a2c/0x0 libfoo\.so' || fail "pprof -raw: libfoo.so mapping"
	go tool pprof -traces "$T/p.pb.gz" 2>&1 | grep -A5 'ksys_read_\[k\]' |
		grep -q 'io_wait' || fail "pprof -traces: ksys_read_[k] is not under io_wait"
	ok "go tool pprof reads pprof: totals, frames, lines, mappings"
}
if command -v go >/dev/null 2>&1 && go tool pprof -h >/dev/null 2>&1; then
	check_pprof
else
	missing+=("go tool pprof (Debian package golang-go)")
fi

# ---- pstats ----
cat >"$T/pstats_check.py" <<'EOP'
import io, pstats, sys
s = pstats.Stats(sys.argv[1], stream=io.StringIO())
st = s.stats
def entry(func):
    keys = [k for k in st if k[2] == func]
    assert len(keys) == 1, (func, keys)
    return keys[0], st[keys[0]]
# 680 samples have Python frames (gc_collect;[unknown] has none).
assert abs(s.total_tt - 6.8) < 1e-9, s.total_tt
key, (cc, nc, tt, ct, callers) = entry("rec")
assert key == ("/srv/app/work.py", 40, "rec"), key
assert (cc, nc) == (40, 120), (cc, nc)  # recursion: 120 on the stack, 40 primitive
assert abs(tt - 0.4) < 1e-9 and abs(ct - 0.4) < 1e-9, (tt, ct)
assert set(k[2] for k in callers) == {"main", "rec"}, callers
key, (cc, nc, tt, ct, callers) = entry("main")
assert (cc, nc) == (680, 680) and abs(ct - 6.8) < 1e-9 and abs(tt - 0.5) < 1e-9, (cc, nc, tt, ct)
assert callers == {}
key, (cc, nc, tt, ct, callers) = entry("leaf_a")
assert key == ("/srv/app/work.py", 4, "leaf_a"), key  # smallest line sampled
assert abs(tt - 4.0) < 1e-9 and abs(ct - 4.0) < 1e-9, (tt, ct)
caller = ("/srv/app/work.py", 20, "compute")
assert callers[caller][:2] == (400, 400) and abs(callers[caller][3] - 4.0) < 1e-9, callers
out = io.StringIO()
pstats.Stats(sys.argv[1], stream=out).sort_stats("cumulative").print_stats(8)
print(out.getvalue())
EOP
check_pstats() {
	local py pys=() n=0
	render pstats "$T/p.pstats"
	mapfile -t pys < <(list_pythons)
	[ ${#pys[@]} -gt 0 ] || pys=(python3)
	for py in "${pys[@]}"; do
		"$py" -c 'import pstats' 2>/dev/null || continue
		"$py" "$T/pstats_check.py" "$T/p.pstats" >"$T/pstats.out" 2>&1 ||
			fail "pstats under $py: $(cat "$T/pstats.out")"
		[ $n = 0 ] && sed 's/^/  pstats: /' "$T/pstats.out"
		n=$((n + 1))
		ok "pstats.Stats under $("$py" -V 2>&1) reads pstats"
	done
	[ $n -gt 0 ] || missing+=("python3 (pstats)")
	# Without Python frames there is nothing to write: a clear error.
	echo "gc_collect;[unknown] 5" >"$T/native.folded"
	if "$PROFCTL" render -i "$T/native.folded" -f pstats -o "$T/native.pstats" 2>"$T/err"; then
		fail "pstats of a profile without Python frames succeeded"
	fi
	grep -q "no Python frames" "$T/err" || fail "pstats without Python frames: $(cat "$T/err")"
}
check_pstats

# ---- speedscope ----
find_jsonschema_python() {
	local py
	for py in python3 /usr/bin/python3; do
		command -v "$py" >/dev/null 2>&1 && "$py" -c 'import jsonschema' 2>/dev/null &&
			{ echo "$py"; return; }
	done
}
cat >"$T/speedscope_check.py" <<'EOP'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
jsonschema.Draft7Validator.check_schema(schema)
jsonschema.validate(doc, schema)
frames = doc["shared"]["frames"]
prof = doc["profiles"][0]
assert prof["type"] == "sampled" and prof["unit"] == "none", prof["type"]
assert len(prof["samples"]) == len(prof["weights"]) == 7
assert sum(prof["weights"]) == 700 == prof["endValue"] - prof["startValue"]
assert all(0 <= i < len(frames) for s in prof["samples"] for i in s)
leaf = [frames[s[-1]] for s, w in zip(prof["samples"], prof["weights"]) if w == 300]
assert leaf == [{"name": "leaf_a", "file": "/srv/app/work.py", "line": 4}], leaf
assert {"name": "ksys_read_[k]"} in frames and {"name": "[libfoo.so+0x1a2b]"} in frames
# A broken file must fail the same schema (the check is not vacuous).
del prof["weights"]
try:
    jsonschema.validate(doc, schema)
    raise SystemExit("schema accepted a profile without weights")
except jsonschema.ValidationError:
    pass
EOP
check_speedscope() {
	local py=$1
	render speedscope "$T/p.speedscope.json"
	"$py" "$T/speedscope_check.py" "$SCHEMA" "$T/p.speedscope.json" >"$T/ss.out" 2>&1 ||
		fail "speedscope JSON: $(cat "$T/ss.out")"
	ok "speedscope JSON matches speedscope's file-format schema ($py)"
}
jpy=$(find_jsonschema_python)
if [ -n "$jpy" ]; then
	check_speedscope "$jpy"
else
	missing+=("python3 jsonschema (Debian package python3-jsonschema)")
fi

# ---- json (docs/json-format.md) ----
cat >"$T/json_check.py" <<'EOP'
import json, sys
doc = json.load(open(sys.argv[1]))
assert set(doc) == {"format", "version", "metadata", "frames", "stacks"}, set(doc)
assert doc["format"] == "profd-profile" and doc["version"] == 1
m = doc["metadata"]
assert set(m) == {"title", "type", "unit", "start_ns", "end_ns", "rate_hz", "total"}, set(m)
assert m["title"] == "p.folded" and m["unit"] == "samples" and m["rate_hz"] == 100, m
for k in ("start_ns", "end_ns", "rate_hz", "total"):
    assert isinstance(m[k], int) and m[k] >= 0, k
kinds = {"unknown", "kernel", "native", "python", "root", "gpu", "wait"}
for f in doc["frames"]:
    assert isinstance(f["name"], str) and f["kind"] in kinds, f
    if f["kind"] == "python":
        assert f["name"] == "%s (%s:%d)" % (f["function"], f["file"], f["line"]), f
    if "module" in f:
        assert f["name"] == "[%s+0x%x]" % (f["module"], f["offset"]), f
used = set()
names = []
for s in doc["stacks"]:
    assert set(s) == {"frames", "count"} and s["count"] > 0, s
    assert all(isinstance(i, int) and 0 <= i < len(doc["frames"]) for i in s["frames"])
    used.update(s["frames"])
    names.append([doc["frames"][i]["name"] for i in s["frames"]])
assert used == set(range(len(doc["frames"]))), "unused frames listed"
assert names == sorted(names), "stacks not in folded order"
assert sum(s["count"] for s in doc["stacks"]) == m["total"] == 700
byname = {f["name"]: f for f in doc["frames"]}
assert byname["ksys_read_[k]"]["kind"] == "kernel"
assert byname["__libc_read"]["kind"] == "native"
assert byname["[libfoo.so+0x1a2b]"] == {"name": "[libfoo.so+0x1a2b]", "kind": "unknown", "module": "libfoo.so", "offset": 0x1a2b}
assert byname["rec (/srv/app/work.py:41)"]["line"] == 41
EOP
check_json() {
	local py=
	command -v python3 >/dev/null 2>&1 && py=python3
	[ -z "$py" ] && [ -x /usr/bin/python3 ] && py=/usr/bin/python3
	[ -n "$py" ] || { missing+=("python3 (json)"); return; }
	render json "$T/p.json"
	"$py" "$T/json_check.py" "$T/p.json" >"$T/json.out" 2>&1 || fail "json: $(cat "$T/json.out")"
	# Same input, same bytes.
	render json "$T/p2.json"
	cmp -s "$T/p.json" "$T/p2.json" || fail "json output is not stable"
	ok "json matches docs/json-format.md"
}
check_json

# ---- pprof from the real daemon: native frames carry their binary ----
# The build-id in FILE's NT_GNU_BUILD_ID note, lowercase hex, or nothing.
elf_build_id() {
	local id
	id=$(LC_ALL=C readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }')
	[ -n "$id" ] || id=$(file -b "$1" 2>/dev/null | sed -n 's/.*BuildID\[[^]]*\]=\([0-9a-fA-F]*\).*/\1/p')
	echo "$id" | tr 'A-F' 'a-f'
}

# In a subshell: lib.sh brings its own temporary directory, daemon and
# clean-up, and its skip (77, not root or no BPF) must not end this script.
check_daemon_pprof() (
	. "$SRC/tests/e2e/lib.sh"
	local exe want raw maps line got mid top
	exe=$(readlink -f "$WORKLOADS/cpu_split")
	[ -x "$exe" ] || fail "$WORKLOADS/cpu_split not built"
	want=$(elf_build_id "$exe")
	[ -n "$want" ] || fail "$exe has no build-id note (link with -Wl,--build-id)"
	start_profd
	run_bg "$exe" 8
	sleep 3
	ctl dump --pid "${CHILDREN[-1]}" -f pprof -o "$T/d.pb.gz" || fail "profctl dump -f pprof failed"
	raw=$(go tool pprof -raw "$T/d.pb.gz" 2>&1) || fail "go tool pprof -raw of the dump: $raw"
	maps=$(echo "$raw" | sed -n '/^Mappings/,$p')
	echo "$maps" | sed 's/^/  pprof mappings: /'
	# "ID: start/limit/offset FILE BUILD-ID [FN]"
	line=$(echo "$maps" | awk -v f="$exe" '$3 == f { print; exit }')
	[ -n "$line" ] || fail "pprof: no Mapping for the workload $exe"
	got=$(echo "$line" | awk '{ print $4 }')
	[ "$got" = "$want" ] || fail "pprof: $exe has build-id '$got', readelf -n says $want"
	mid=${line%%:*}
	echo "$raw" | grep -Eq "^ +[0-9]+: 0x[0-9a-f]+ M=$mid (leaf_heavy|leaf_light|spin|dispatch|main) " ||
		fail "pprof: no Location of the workload's functions points at its Mapping $mid"
	top=$(go tool pprof -top "$T/d.pb.gz" 2>&1) || fail "go tool pprof -top of the dump: $top"
	echo "$top" | grep -Eq ' (spin|leaf_heavy)$' || fail "pprof -top of the dump: $top"
	ok "pprof from profd: $exe is Mapping $mid with build-id $want"
)
if command -v go >/dev/null 2>&1 && go tool pprof -h >/dev/null 2>&1; then
	check_daemon_pprof
	case $? in
	0) ;;
	77) missing+=("root and BPF (pprof dump from profd)") ;;
	*) exit 1 ;;
	esac
fi

# Unknown formats are a usage error that lists the known ones.
"$PROFCTL" render -i "$T/p.folded" -f png -o "$T/x" 2>"$T/err" && fail "format png accepted"
grep -q "folded, svg, pprof, speedscope, pstats, json" "$T/err" || fail "unknown format message: $(cat "$T/err")"

if [ ${#missing[@]} -gt 0 ]; then
	echo "SKIP: not available here: ${missing[*]}"
	exit 77
fi
echo "all formats read by their consumers"
