#!/bin/bash
# profd --push otlp+http://: the real daemon sends each window as an OTLP
# ExportProfilesServiceRequest (opentelemetry-proto v1.11.0, profiles
# v1development), gzipped protobuf POSTed to /v1development/profiles.  The
# receiver, tools/push_receiver.py on 127.0.0.1 (ephemeral port), answers
# the first request 503 (profd must send it again) and then 200, and saves
# every request.  Each body is gunzipped and decoded with
# `protoc --decode` and tests/data/otlp/profiles.proto; the decoded request
# must carry the workload's resource attributes (service.name, host.name;
# no process.pid: the resource is the workload, the pid is each sample's
# attribute), the cpu sample and period types, the workload's functions
# through the dictionary, and sample values that add up to what
# `profctl dump -f folded` counted.  Loopback only.
. "$(dirname "$0")/lib.sh"

: "${SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
PROTO_DIR=$SRC/tests/data/otlp
command -v protoc >/dev/null ||
	fail "protoc is missing (packaging/setup.sh installs protobuf-compiler): it decodes the pushed requests"
command -v python3 >/dev/null || fail "python3 is missing (packaging/setup.sh installs it)"
# check.py DECODED PID HOST RATE: the protoc text of one request, checked;
# prints "TOTAL LEAF_HEAVY SECONDS" (summed sample values, those under
# leaf_heavy, the window's duration rounded up).
cat >"$T/check.py" <<'EOP'
import sys
from pbtext import all_of, one, parse, text

def fail(msg):
    sys.exit(msg)

req = parse(open(sys.argv[1], encoding="latin-1"))
pid, host, rate = int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
d = one(req, "dictionary")
if d is None:
    fail("no dictionary")
strs = [text(s) for s in all_of(d, "string_table")]
fns = all_of(d, "function_table")
locs = all_of(d, "location_table")
stacks = all_of(d, "stack_table")
for name, table in (("string", strs), ("function", fns), ("location", locs), ("stack", stacks),
                    ("mapping", all_of(d, "mapping_table")), ("attribute", all_of(d, "attribute_table"))):
    if not table or (table[0] != "" and table[0] != []):
        fail("%s_table[0] is not the zero value" % name)
if len(set(strs)) != len(strs):
    fail("string_table has duplicates")

rps = all_of(req, "resource_profiles")
if len(rps) != 1:
    fail("%d resource_profiles, want 1 (one workload)" % len(rps))
attrs = {}
for kv in all_of(one(rps[0], "resource"), "attributes"):
    v = one(kv, "value")
    attrs[text(one(kv, "key"))] = text(one(v, "string_value", one(v, "int_value")))
want = {"service.name": "cpu_split", "host.name": host, "process.pid": None,
        "process.executable.name": "cpu_split"}
for k, v in want.items():
    if attrs.get(k) != v:
        fail("resource attribute %s is %r, want %r (all: %r)" % (k, attrs.get(k), v, attrs))

sps = all_of(rps[0], "scope_profiles")
if len(sps) != 1 or text(one(one(sps[0], "scope"), "name")) != "profd":
    fail("not one scope_profiles with scope profd")
profiles = all_of(sps[0], "profiles")
if len(profiles) != 1:
    fail("%d profiles, want 1" % len(profiles))
p = profiles[0]

def vtype(name):
    v = one(p, name)
    return (strs[one(v, "type_strindex", 0)], strs[one(v, "unit_strindex", 0)]) if v else None

if vtype("sample_type") != ("samples", "count"):
    fail("sample_type %r, want (samples, count)" % (vtype("sample_type"),))
if vtype("period_type") != ("cpu", "nanoseconds"):
    fail("period_type %r, want (cpu, nanoseconds)" % (vtype("period_type"),))
if one(p, "period") != (10**9 + rate // 2) // rate:
    fail("period %r at %d Hz" % (one(p, "period"), rate))
t = one(p, "time_unix_nano", 0)
if not 1.5e18 < t < 4e18:
    fail("time_unix_nano %r" % t)

def names(stack_index):
    out = []
    for li in all_of(stacks[stack_index], "location_indices"):
        for line in all_of(locs[li], "lines"):
            out.append(strs[one(fns[one(line, "function_index")], "name_strindex", 0)])
    return out

attr_table = all_of(d, "attribute_table")

def sample_pid(s):
    for ai in all_of(s, "attribute_indices"):
        kv = attr_table[ai]
        if strs[one(kv, "key_strindex", 0)] == "process.pid":
            return one(one(kv, "value"), "int_value")
    return None

total = heavy = 0
for s in all_of(p, "samples"):
    if sample_pid(s) != pid:
        fail("sample's process.pid %r, want %d" % (sample_pid(s), pid))
    vals = all_of(s, "values")
    if len(vals) != 1 or vals[0] <= 0:
        fail("sample values %r" % vals)
    frames = names(one(s, "stack_index", 0))
    if not frames:
        fail("a sample without a stack")
    total += vals[0]
    if "leaf_heavy" in frames:
        heavy += vals[0]
print(total, heavy, -(-one(p, "duration_nano", 0) // 10**9))
EOP

start_push_receiver "$T/recv" --fails 1

"$PROFD" --help 2>&1 | grep -q -- '--push' ||
	fail "profd has no --push option yet (main.c must wire push.h; see push.h)"

run_bg "$WORKLOADS/cpu_split" 12
A=${CHILDREN[-1]}
RATE=199
start_profd --pid "$A" --rate $RATE --push "otlp+http://127.0.0.1:$PORT" --push-interval 2s
sleep 6
ctl dump --pid "$A" -f folded -o "$T/dump.folded" || fail "dump failed"
stop_profd # SIGTERM: the last window is flushed within the shutdown deadline
kill "$A" 2>/dev/null

[ -f "$T/recv/001.req" ] || fail "the receiver got nothing"
[ "$(sed -n 5p "$T/recv/001.req")" = 503 ] || fail "the first request was not the one answered 503"
[ -f "$T/recv/002.req" ] || fail "nothing was sent again after the 503"
cmp -s "$T/recv/001.body" "$T/recv/002.body" ||
	fail "the request after the 503 is not the one the 503 turned away"
ok "the window turned away with 503 was sent again"
ACCEPTED=$(push_accepted "$T/recv")
n=$(echo "$ACCEPTED" | grep -c .)
[ "$n" -ge 2 ] || fail "only $n request(s) accepted in 6 s at --push-interval 2s"

HOST=$(python3 -c 'import socket; print(socket.gethostname())')
pushed=0
for req in $ACCEPTED; do
	pb=${req%.req}.body
	[ "$(sed -n 1p "$req")" = /v1development/profiles ] || fail "$req: path $(sed -n 1p "$req")"
	[ "$(sed -n 2p "$req")" = application/x-protobuf ] || fail "$req: Content-Type $(sed -n 2p "$req")"
	[ "$(sed -n 3p "$req")" = gzip ] || fail "$req: Content-Encoding '$(sed -n 3p "$req")'"
	[ "$(head -c2 "$pb" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "$pb is not gzip"
	gunzip -c "$pb" >"$pb.raw" || fail "$pb: gunzip"
	protoc --decode opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest \
		-I "$PROTO_DIR" "$PROTO_DIR/profiles.proto" <"$pb.raw" >"$pb.txt" 2>"$pb.err" ||
		fail "$pb: protoc --decode: $(cat "$pb.err")"
	# A field number profiles.proto does not know shows as a bare number.
	! grep -qE '^ *[0-9]+:' "$pb.txt" || fail "$pb: fields outside profiles.proto: $(grep -E '^ *[0-9]+:' "$pb.txt" | head -3)"
	read -r total heavy secs < <(PYTHONPATH=$TOOLS python3 "$T/check.py" "$pb.txt" "$A" "$HOST" $RATE 2>"$pb.err") ||
		fail "$pb: $(cat "$pb.err")"
	[ -n "$total" ] && [ "$total" -gt 0 ] || fail "$pb: no samples: $(cat "$pb.err")"
	# One busy thread: at most RATE per second of the window (+ slack).
	[ "$total" -le $((RATE * (secs + 2))) ] || fail "$pb: $total samples in a window of ${secs}s at $RATE Hz"
	echo "  $(basename "$pb"): samples=$total leaf_heavy=$heavy duration=${secs}s"
	[ "$heavy" -gt 0 ] || fail "$pb: no leaf_heavy through the dictionary"
	pushed=$((pushed + total))
done
dumped=$(total_samples "$T/dump.folded")
[ "$dumped" -gt 0 ] || fail "the dump has no samples"
# Windows do not overlap: their sum is about what the daemon counted (the
# dump was taken a moment before SIGTERM, whose final flush adds a bit).
[ "$pushed" -ge $((dumped / 2)) ] || fail "pushed $pushed samples, the daemon counted $dumped"
[ "$pushed" -le $((dumped + RATE * 2)) ] ||
	fail "pushed $pushed samples, more than the daemon's $dumped: windows overlap?"
ok "$n OTLP requests decoded by protoc: $pushed samples in all (dump: $dumped)"
