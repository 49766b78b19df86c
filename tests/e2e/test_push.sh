#!/bin/bash
# profd --push: the real daemon sends each window as gzipped pprof to a
# Pyroscope-style /ingest endpoint.  The receiver, tools/push_receiver.py on
# 127.0.0.1 (ephemeral port), saves every request; each profile must read
# in `go tool pprof -raw`, name the workload's functions, carry sane counts
# and the pid as a sample label, and the query must carry name (with the
# host label and no pid: one series per workload), from, until,
# format=pprof and spyName.  A rank of a job (its launcher's variables)
# carries the job and the rank as labels.  Loopback only.
. "$(dirname "$0")/lib.sh"

command -v go >/dev/null || fail "go is missing (packaging/setup.sh installs golang-go): go tool pprof reads the pushed profiles"
command -v python3 >/dev/null || fail "python3 is missing (packaging/setup.sh installs it)"
export HOME=${HOME:-$T} GOCACHE=${GOCACHE:-$T/gocache} PPROF_TMPDIR=$T
start_push_receiver "$T/recv"

"$PROFD" --help 2>&1 | grep -q -- '--push' ||
	fail "profd has no --push option yet (main.c must wire push.h; see push.h)"

# As srun starts task 3 of step 1 of job 77.
run_bg env SLURM_JOB_ID=77 SLURM_STEP_ID=1 SLURM_PROCID=3 "$WORKLOADS/cpu_split" 12
A=${CHILDREN[-1]}
RATE=199
start_profd --pid "$A" --rate $RATE --push "http://127.0.0.1:$PORT" --push-interval 2s
sleep 6
ctl dump --pid "$A" -o "$T/dump.folded" || fail "dump failed"
stop_profd # SIGTERM: the last window is flushed within the shutdown deadline
kill "$A" 2>/dev/null

ls "$T/recv/"*.req >/dev/null 2>&1 || fail "the receiver got nothing"
n=$(ls "$T/recv/"*.req | wc -l)
[ "$n" -ge 2 ] || fail "only $n profile(s) pushed in 6 s at --push-interval 2s"
ok "$n profiles pushed"

# url_decode STRING
url_decode() { python3 -c 'import sys, urllib.parse; print(urllib.parse.unquote(sys.argv[1]))' "$1"; }
# qparam REQFILE KEY: the decoded value of a query parameter
qparam() {
	python3 -c 'import sys, urllib.parse
q = urllib.parse.urlsplit(open(sys.argv[1]).readline().strip()).query
print(urllib.parse.parse_qs(q).get(sys.argv[2], [""])[0])' "$1" "$2"
}

pushed=0
prev_until=0
for req in "$T/recv/"*.req; do
	pb=${req%.req}.body
	path=$(head -1 "$req")
	case $path in /ingest\?*) ;; *) fail "$req: request path is not /ingest?...: $path" ;; esac
	sed -n 2p "$req" | grep -qx 'application/octet-stream' || fail "$req: Content-Type $(sed -n 2p "$req")"
	name=$(qparam "$req" name)
	from=$(qparam "$req" from)
	until=$(qparam "$req" until)
	# The workload's labels (unit ...) may follow host; never pid or comm.
	[[ $name =~ ^cpu_split\.cpu\{host=[^,}]+(,[A-Za-z_][A-Za-z0-9_]*=[^,}]+)*\}$ ]] ||
		fail "$req: name '$name' is not cpu_split.cpu{host=...[,label=value...]}"
	[[ $name =~ [{,](pid|comm)= ]] && fail "$req: name '$name' carries pid or comm"
	[[ $name =~ [{,]job=slurm:77\.1[,}] && $name =~ [{,]rank=3[,}] ]] ||
		fail "$req: name '$name' does not carry job=slurm:77.1 and rank=3"
	[[ $from =~ ^[0-9]{10}$ && $until =~ ^[0-9]{10}$ ]] || fail "$req: from '$from' until '$until'"
	[ "$until" -ge "$from" ] || fail "$req: until $until before from $from"
	[ "$(qparam "$req" format)" = pprof ] || fail "$req: format is not pprof"
	[ "$(qparam "$req" spyName)" = profd ] || fail "$req: spyName is not profd"
	[ "$(qparam "$req" sampleRate)" = $RATE ] || fail "$req: sampleRate is not $RATE"
	[ "$(qparam "$req" units)" = samples ] || fail "$req: units is not samples"
	pprof_samples "$pb" "$A"
	total=$SAMPLES
	span=$((until - from + 2))
	# One busy thread: at most RATE per second of the window (+ slack).
	[ "$total" -le $((RATE * span + RATE / 2)) ] ||
		fail "$pb: $total samples in a window of ${span}s at $RATE Hz"
	echo "  $(basename "$pb"): $name from=$from until=$until samples=$total"
	pushed=$((pushed + total))
done
dumped=$(total_samples "$T/dump.folded")
# Windows do not overlap: their sum is about what the daemon counted (the
# dump was taken a moment before SIGTERM, whose final flush adds a bit).
[ "$pushed" -ge $((dumped / 2)) ] || fail "pushed $pushed samples, the daemon counted $dumped"
[ "$pushed" -le $((dumped + RATE * 2)) ] ||
	fail "pushed $pushed samples, more than the daemon's $dumped: windows overlap?"
ok "pushed profiles read by go tool pprof: $pushed samples in all (dump: $dumped)"
