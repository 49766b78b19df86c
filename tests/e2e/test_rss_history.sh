# RSS over time: profd keeps a point of each running process's resident
# set per bucket (read on its worker, off the sample path), and `profctl
# list` shows how it moved (RSS_CHANGE) and, with --json, the points.  A
# Python program grows by 16 MiB a second for 6 s, computing in between,
# then holds still: its points must rise with it (within 30% of 16 MiB/s
# over their span), never fall by more than noise, and the last one match
# /proc's VmRSS once it stops growing.
. "$(dirname "$0")/lib.sh"

PY=$(command -v python3) || fail "python3 is missing (packaging/setup.sh installs it)"
start_profd --all-processes --rate 99 --bucket 1s

"$PY" -c '
import time
keep = []
for i in range(6):
    keep.append(bytearray(b"\x01") * (16 << 20))  # 16 MiB, every page written
    end = time.monotonic() + 1
    while time.monotonic() < end:
        pass
print("grown", flush=True)
end = time.monotonic() + 30
while time.monotonic() < end:
    sum(range(1000))
' >"$T/grow.out" &
W=$!
CHILDREN+=("$W")
for i in $(seq 1 150); do grep -q grown "$T/grow.out" && break; sleep 0.1; done
grep -q grown "$T/grow.out" || fail "the program did not finish growing"
sleep 3 # points after the growth
vmrss=$(awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$W/status")
ctl --json list >"$T/list.json" || fail "list --json failed"
ctl list >"$T/list.txt" || fail "list failed"

python3 - "$T/list.json" "$W" "$vmrss" <<'PYEOF' || fail "RSS history check failed (above)"
import json, sys
procs = json.load(open(sys.argv[1]))
pid, vmrss = int(sys.argv[2]), int(sys.argv[3])
p = next((x for x in procs if x["pid"] == pid), None)
if p is None:
    sys.exit(f"pid {pid} not listed")
h = p["rss_history"]
MiB = 1 << 20
print(f"{len(h)} points: " + ", ".join(f"{b / MiB:.0f}" for _, b in h) + " MiB")
if len(h) < 6:
    sys.exit(f"only {len(h)} RSS points over ~10 s with 1 s buckets")
ts = [t for t, _ in h]
if ts != sorted(ts):
    sys.exit("points out of time order")
for (t0, b0), (t1, b1) in zip(h, h[1:]):
    if b1 < b0 - 4 * MiB:
        sys.exit(f"RSS fell {((b0 - b1) / MiB):.1f} MiB while the program only grew")
# The growth: 16 MiB a second between the first point and the last one
# taken before the program stopped growing (96 MiB in all).
grew = h[-1][1] - h[0][1]
span = (h[-1][0] - h[0][0]) / 1e9
if not (0.5 * 96 * MiB <= grew <= 1.3 * 96 * MiB):
    sys.exit(f"grew {grew / MiB:.0f} MiB over {span:.1f} s; the program grew 96 MiB")
last = h[-1][1]
if abs(last - vmrss) > 0.05 * vmrss:
    sys.exit(f"last point {last / MiB:.1f} MiB, VmRSS {vmrss / MiB:.1f} MiB")
print(f"ok: grew {grew / MiB:.0f} MiB over {span:.1f} s; last point {last / MiB:.1f} MiB, VmRSS {vmrss / MiB:.1f} MiB")
PYEOF
grep -E "^ *$W " "$T/list.txt" | grep -qE ' \+[0-9.]+/[0-9]' ||
	{ cat "$T/list.txt" >&2; fail "profctl list shows no RSS_CHANGE for $W"; }
ok "profctl list: $(grep -E "^ *$W " "$T/list.txt" | awk '{ print "RSS " $3 " MiB, change " $4 }')"
kill "$W"
stop_profd
