# A fleet arrives as one series per service, through Pyroscope's push
# API and OTLP alike.  Cgroups made by hand (cgroups.sh, as in test_identity.sh) stand
# in for a systemd unit and a docker container:
#  - a worker pool: two `python3 -m MOD` in system.slice/UNIT.service at
#    once, and a third started after the first exits (a restart);
#  - a job: a Python script in docker/<64 hex>.
# The real daemon pushes to a loopback receiver, once per protocol; every
# request is decoded with protoc against our own .proto files
# (tests/data/pyroscope, tests/data/otlp), and:
#  - every window of the pool is the same series (the same labels, or the
#    same resource attributes): service UNIT, unit UNIT.service, host;
#    the pid is no label, yet each window says whose samples it holds
#    (pprof's numeric label pid; OTLP's sample attribute process.pid),
#    and the three workers' pids are all among them;
#  - the job's windows are another series: its script as service and its
#    container id.
# Loopback only.
. "$(dirname "$0")/lib.sh"

: "${SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
command -v python3 >/dev/null || fail "python3 is missing (packaging/setup.sh installs it)"
command -v protoc >/dev/null ||
	fail "protoc is missing (packaging/setup.sh installs protobuf-compiler): it decodes the pushed requests"
command -v go >/dev/null || fail "go is missing (packaging/setup.sh installs golang-go): go tool pprof reads the pushed profiles' pid labels"
export HOME=${HOME:-$T} GOCACHE=${GOCACHE:-$T/gocache} PPROF_TMPDIR=$T
PY=$(python3 -c 'import sys; print(sys.executable)')
. "$(dirname "$0")/cgroups.sh"

UNIT=profdfleet$$
DOCKER_ID=$(hex64)
MOD=profd_fleetmod$$
SCRIPT=profd_fleetjob$$.py
HOST=$(hostname)

make_cg "/system.slice/$UNIT.service"
make_cg "/docker/$DOCKER_ID"

mkdir -p "$T/py"
spin_py "$T/py/$MOD.py" serve_request
spin_py "$T/py/$SCRIPT" train_step
export PYTHONPATH=$T/py

# series.py PROTO DIR: every request in DIR decoded with protoc, one line
# per window: "SERVICE<TAB>SERIES<TAB>PIDS" (SERIES: the sorted labels or
# resource attributes and the profile type, PIDS: the pids its samples
# carry).
cat >"$T/series.py" <<'EOP'
import glob, gzip, os, re, subprocess, sys
from pbtext import all_of, decode, one, parse, text
proto, d, src = sys.argv[1], sys.argv[2], sys.argv[3]

def pprof_pids(raw):
    path = os.path.join(d, "p.pb.gz")
    open(path, "wb").write(raw)
    out = subprocess.run(["go", "tool", "pprof", "-raw", path], capture_output=True,
                         check=True).stdout.decode("latin-1")
    return set(int(p) for p in re.findall(r"pid:\[(\d+)\]", out))

def connect(body):
    req = parse(decode(src + "/tests/data/pyroscope", "push.proto", "push.v1.PushRequest", body).splitlines())
    for s in all_of(req, "series"):
        labels = {text(one(l, "name")): text(one(l, "value")) for l in all_of(s, "labels")}
        pids = set()
        for smp in all_of(s, "samples"):
            pids |= pprof_pids(one(smp, "raw_profile"))
        yield labels.get("service_name", ""), sorted(labels.items()), pids

def otlp(body):
    req = parse(decode(src + "/tests/data/otlp", "profiles.proto",
                       "opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest",
                       gzip.decompress(body)).splitlines())
    dic = one(req, "dictionary")
    strs = [text(s) for s in all_of(dic, "string_table")]
    attrs = all_of(dic, "attribute_table")
    for rp in all_of(req, "resource_profiles"):
        res = {}
        for kv in all_of(one(rp, "resource"), "attributes"):
            v = one(kv, "value")
            res[text(one(kv, "key"))] = text(one(v, "string_value", b""))
        for sp in all_of(rp, "scope_profiles"):
            for p in all_of(sp, "profiles"):
                st = one(p, "sample_type")
                kind = strs[one(st, "type_strindex", 0)] + "/" + strs[one(st, "unit_strindex", 0)]
                pids = set()
                for smp in all_of(p, "samples"):
                    for ai in all_of(smp, "attribute_indices"):
                        kv = attrs[ai]
                        if strs[one(kv, "key_strindex", 0)] == "process.pid":
                            pids.add(one(one(kv, "value"), "int_value"))
                yield res.get("service.name", ""), sorted(res.items()) + [("type", kind)], pids

for req in sorted(glob.glob(os.path.join(d, "*.req"))):
    body = open(req[:-4] + ".body", "rb").read()
    for service, series, pids in (connect if proto == "push" else otlp)(body):
        print("%s\t%s\t%s" % (service, series, " ".join(map(str, sorted(pids)))))
EOP

# fleet PROTO URL: the workloads under profd pushing to URL; sets P1 P2 P3
# (the pool) and J (the job).
fleet() {
	local dir=$T/recv-$1
	start_push_receiver "$dir"
	start_profd --all-processes --push "${2/PORT/$PORT}" --push-interval 2s
	in_cg "/system.slice/$UNIT.service" "$PY" -m "$MOD" 3
	P1=${CHILDREN[-1]}
	in_cg "/system.slice/$UNIT.service" "$PY" -m "$MOD" 7
	P2=${CHILDREN[-1]}
	in_cg "/docker/$DOCKER_ID" "$PY" "$T/py/$SCRIPT" 7
	J=${CHILDREN[-1]}
	wait "$P1" || fail "pool worker $P1 failed"
	in_cg "/system.slice/$UNIT.service" "$PY" -m "$MOD" 3
	P3=${CHILDREN[-1]}
	wait "$P2" "$P3" "$J" || fail "a workload failed"
	sleep 2.5 # the next push takes their last window
	stop_profd
	PYTHONPATH=$TOOLS python3 "$T/series.py" "$1" "$dir" "$SRC" >"$T/$1.series" 2>"$T/$1.err" ||
		fail "decoding the $1 requests: $(tail -5 "$T/$1.err")"
	echo "$1: $(wc -l <"$T/$1.series") windows; series:"
	cut -f1,2 "$T/$1.series" | sort | uniq -c | sed 's/^/  /'
}

# check PROTO UNIT_LABEL CONTAINER_LABEL SERVICE_KEY
check() {
	local s=$T/$1.series pool job
	pool=$(awk -F'\t' -v u="$UNIT" '$1 == u && $2 ~ /cpu|samples/' "$s" | cut -f2 | sort -u)
	[ -n "$pool" ] || fail "$1: no window of service $UNIT"
	[ "$(echo "$pool" | wc -l)" = 1 ] || fail "$1: the pool is $(echo "$pool" | wc -l) series: $pool"
	echo "$pool" | grep -qF "('$2', '$UNIT.service')" || fail "$1: the pool's series has no unit: $pool"
	echo "$pool" | grep -qF "'$HOST')" || fail "$1: the pool's series has no host $HOST: $pool"
	echo "$pool" | grep -qE "pid'" && fail "$1: a pid is a series label: $pool"
	for p in $P1 $P2 $P3; do
		awk -F'\t' -v u="$UNIT" '$1 == u { print " " $3 " " }' "$s" | grep -q " $p " ||
			fail "$1: no window of the pool carries worker $p's pid"
	done
	job=$(awk -F'\t' -v j="$SCRIPT" '$1 == j' "$s" | cut -f2 | sort -u)
	[ -n "$job" ] || fail "$1: no window of service $SCRIPT (the job)"
	echo "$job" | grep -qF "('$3', '$DOCKER_ID')" || fail "$1: the job's series has no container id: $job"
	awk -F'\t' -v j="$SCRIPT" '$1 == j { print " " $3 " " }' "$s" | grep -q " $J " ||
		fail "$1: no window of the job carries its pid $J"
	ok "$1: workers $P1 $P2 $P3 are one series of $UNIT ($2=$UNIT.service), the job $J another ($3=${DOCKER_ID:0:12}...)"
}

fleet push "http://127.0.0.1:PORT/push.v1.PusherService/Push"
check push unit container
fleet otlp "otlp+http://127.0.0.1:PORT"
check otlp unit container.id
