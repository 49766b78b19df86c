#!/bin/bash
# profd --push URL/push.v1.PusherService/Push: the real daemon sends each
# window to Pyroscope's push API (a Connect unary call, protobuf body).  The
# receiver, tools/push_receiver.py on 127.0.0.1 (ephemeral port), saves
# every request and answers the first with 503 and Connect's JSON error,
# which must be retried with the same body.  Each body must decode with
# protoc against our own tests/data/pyroscope/push.proto into one series
# labelled __name__, service_name and hostname, whose raw_profile reads in
# `go tool pprof -raw`, names the workload's functions, carries the pid as
# a sample label, and adds up with the other windows to what `profctl
# dump` counted.  A second, short run gives a bare URL with
# --push-protocol push.  Loopback only.
. "$(dirname "$0")/lib.sh"

: "${SRC:?SRC must point at the source directory}"
PROTO_DIR=$SRC/tests/data/pyroscope
command -v go >/dev/null || fail "go is missing (packaging/setup.sh installs golang-go): go tool pprof reads the pushed profiles"
command -v protoc >/dev/null || fail "protoc is missing (packaging/setup.sh installs protobuf-compiler): it decodes the pushed PushRequests"
command -v python3 >/dev/null || fail "python3 is missing (packaging/setup.sh installs it)"
export HOME=${HOME:-$T} GOCACHE=${GOCACHE:-$T/gocache} PPROF_TMPDIR=$T

# The PushRequest in body $1, through protoc (tools/pbtext.py), as lines
# "series N", "label NAME VALUE", one "sample N" per raw_profile, each
# saved to $1.N.pb.gz, and "id ID" per sample ID.
cat >"$T/decode.py" <<'EOP'
import sys
from pbtext import all_of, decode, one, parse, text
body, proto_dir = sys.argv[1], sys.argv[2]
req = parse(decode(proto_dir, "push.proto", "push.v1.PushRequest", open(body, "rb").read()).splitlines())
series = all_of(req, "series")
print("series", len(series))
samples = []
for s in series:
    for label in all_of(s, "labels"):
        print("label", text(one(label, "name")), text(one(label, "value")))
    samples += all_of(s, "samples")
for i, raw in enumerate(r for smp in samples for r in all_of(smp, "raw_profile")):
    with open("%s.%d.pb.gz" % (body, i), "wb") as f:
        f.write(raw)
    print("sample", i)
for uid in (u for smp in samples for u in all_of(smp, "ID")):
    print("id", text(uid))
EOP

"$PROFD" --help 2>&1 | grep -q -- '--push-protocol' || fail "profd has no --push-protocol option"

start_push_receiver "$T/recv" --fails 1 --ok-type application/proto \
	--fail-body '{"code":"unavailable","message":"ingester ring not ready"}'
run_bg "$WORKLOADS/cpu_split" 12
A=${CHILDREN[-1]}
RATE=199
HOST=$(hostname)
start_profd --pid "$A" --rate $RATE --push "http://127.0.0.1:$PORT/push.v1.PusherService/Push" \
	--push-interval 2s
sleep 6
ctl dump --pid "$A" -o "$T/dump.folded" || fail "dump failed"
retried=$(stat_of push_retried)
stop_profd # SIGTERM: the last window is flushed within the shutdown deadline
kill "$A" 2>/dev/null

ls "$T/recv/"*.req >/dev/null 2>&1 || fail "the receiver got nothing"
# The first attempt was answered 503: the same request comes again.
[ "$(sed -n 5p "$T/recv/001.req")" = 503 ] || fail "the first request was not the one answered 503"
cmp -s "$T/recv/001.body" "$T/recv/002.body" || fail "the request after the 503 is not the same request again"
[ "${retried:-0}" -ge 1 ] || fail "profctl stats: push_retried is '${retried}' after a 503"
ok "a 503 was retried with the same body (push_retried $retried)"

n=0
pushed=0
for req in $(push_accepted "$T/recv"); do
	body=${req%.req}.body
	n=$((n + 1))
	[ "$(sed -n 1p "$req")" = /push.v1.PusherService/Push ] || fail "$req: path $(sed -n 1p "$req")"
	[ "$(sed -n 2p "$req")" = application/proto ] || fail "$req: Content-Type $(sed -n 2p "$req")"
	[ "$(sed -n 4p "$req")" = 1 ] || fail "$req: Connect-Protocol-Version '$(sed -n 4p "$req")'"
	PYTHONPATH=$TOOLS python3 "$T/decode.py" "$body" "$PROTO_DIR" >"$body.txt" 2>"$body.err" ||
		fail "protoc --decode push.v1.PushRequest $body: $(cat "$body.err")"
	grep -qx 'series 1' "$body.txt" || fail "$body: not one series: $(cat "$body.txt")"
	grep -qx 'label __name__ process_cpu' "$body.txt" || fail "$body: __name__ is not process_cpu: $(cat "$body.txt")"
	grep -qx 'label service_name cpu_split' "$body.txt" || fail "$body: service_name is not cpu_split: $(cat "$body.txt")"
	grep -qxF "label hostname $HOST" "$body.txt" || fail "$body: hostname is not $HOST: $(cat "$body.txt")"
	grep -qE '^label (pid|comm) ' "$body.txt" && fail "$body: pid or comm is a series label"
	[ "$(grep -c '^sample ' "$body.txt")" = 1 ] || fail "$body: not one sample"
	grep -qE '^id [0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' "$body.txt" ||
		fail "$body: the sample's ID is not a UUID"
	pb=$body.0.pb.gz
	pprof_samples "$pb" "$A"
	total=$SAMPLES
	echo "  $(basename "$body"): $(grep '^label' "$body.txt" | cut -d' ' -f2- | tr '\n' ' ')samples=$total"
	pushed=$((pushed + total))
done
[ "$n" -ge 2 ] || fail "only $n request(s) accepted in 6 s at --push-interval 2s"
dumped=$(total_samples "$T/dump.folded")
# Windows neither overlap nor leave gaps: their sum is what the daemon
# counted (the dump was taken a moment before SIGTERM, whose final flush
# adds what came after), within 10%.
[ "$pushed" -ge $((dumped * 9 / 10)) ] || fail "pushed $pushed samples, the daemon counted $dumped"
[ "$pushed" -le $((dumped + RATE * 2)) ] ||
	fail "pushed $pushed samples, more than the daemon's $dumped: windows overlap?"
ok "$n PushRequests decoded by protoc, profiles read by go tool pprof: $pushed samples (dump: $dumped)"

# A bare server URL with --push-protocol push: the path is added.
start_push_receiver "$T/recv2" --ok-type application/proto
run_bg "$WORKLOADS/cpu_split" 4
B=${CHILDREN[-1]}
start_profd --pid "$B" --rate $RATE --push "http://127.0.0.1:$PORT" --push-protocol push \
	--push-interval 1s
sleep 2.5
stop_profd
kill "$B" 2>/dev/null
ls "$T/recv2/"*.req >/dev/null 2>&1 || fail "--push-protocol push: the receiver got nothing"
for req in "$T/recv2/"*.req; do
	[ "$(sed -n 1p "$req")" = /push.v1.PusherService/Push ] ||
		fail "--push-protocol push: path $(sed -n 1p "$req")"
	PYTHONPATH=$TOOLS python3 "$T/decode.py" "${req%.req}.body" "$PROTO_DIR" >"$req.txt" 2>"$req.err" ||
		fail "--push-protocol push: protoc: $(cat "$req.err")"
	grep -qx 'label __name__ process_cpu' "$req.txt" || fail "--push-protocol push: $(cat "$req.txt")"
done
ok "--push-protocol push on a bare URL: $(ls "$T/recv2/"*.req | wc -l) PushRequests to /push.v1.PusherService/Push"
