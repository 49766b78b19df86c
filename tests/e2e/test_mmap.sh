# --type mmap: which function maps and unmaps memory.  A C workload maps
# 4 x 64 MiB in alloc_big and 32 x 1 MiB in alloc_small, unmaps two of
# the big ones in free_some, grows a mapping 4 -> 12 MiB with mremap in
# remap_grow and moves the heap's end up 16 MiB with sbrk in heap_grow,
# touching none of it, and writes the true signed bytes per function.  The
# mmap profile must give each function its bytes within 1% (calls are not
# sampled: every one is an event), free_some's negative; the renderers
# must keep the sign: folded and json print it, pprof's values go
# negative, svg draws "[mapped]" and "[unmapped]" side by side.
. "$(dirname "$0")/lib.sh"

# On failure: the profile's stacks, their last four frames.
leaves() { sed -E 's/^.*;([^;]*;[^;]*;[^;]*;[^;]*) /\1 /' "$1" | sort -k2 -n >&2; }

# The workload spins until told to go, profd (for it alone, so the
# machine's other processes cannot crowd its unwind tables out: libc's
# mmap and brk have no frame pointers) has read its tables by then.
truth=$T/truth
"$WORKLOADS/mmap_sizes" "$truth" "$T/go" &
pid=$!
CHILDREN+=("$pid")
start_profd --mmap --pid "$pid"
ctl stats | grep -q '^mmap_uprobes *[1-9]' || fail "no uprobe on the C library: $(ctl stats | grep mmap)"
sleep 3
touch "$T/go"
for i in $(seq 1 200); do [ -s "$truth" ] && break; sleep 0.1; done
[ -s "$truth" ] || fail "the workload did not finish mapping"
sleep 1 # its last events reach profd
ctl dump --pid "$pid" --type mmap -o "$T/m.folded" || fail "dump --type mmap failed"

# Bytes per function, from the folded lines whose stack names it (a line
# names one of them at most: each calls the C library directly or through
# map_anon).
for fn in alloc_big alloc_small free_some remap_grow heap_grow; do
	want=$(awk -v f="$fn" '$1 == f { print $2 }' "$truth")
	got=$(awk -v f="$fn" '$0 ~ ("(^|;)" f "(;| )") { s += $NF } END { printf "%d", s }' "$T/m.folded")
	echo "$fn: $((got / 1048576)) MiB (true $((want / 1048576)) MiB)"
	awk -v g="$got" -v t="$want" 'BEGIN { d = g - t; if (d < 0) d = -d; if (t < 0) t = -t
		exit !(d <= 0.01 * t) }' || { leaves "$T/m.folded"; fail "$fn: $got bytes, true $want (1% allowed)"; }
done
ok "bytes mapped per function, frees negative"

ctl dump --pid "$pid" --type mmap -f json -o "$T/m.json" || fail "json dump failed"
grep -qE '"count": -[0-9]+' "$T/m.json" || fail "json has no negative count"
grep -q '"type": "mmap"' "$T/m.json" || fail "json type is not mmap"
ctl dump --pid "$pid" --type mmap -f svg -o "$T/m.svg" || fail "svg dump failed"
grep -q '\[mapped\]' "$T/m.svg" && grep -q '\[unmapped\]' "$T/m.svg" ||
	fail "the svg does not draw [mapped] and [unmapped]"
grep -q "MiB" "$T/m.svg" || fail "the mmap SVG does not say MiB"
ctl dump --pid "$pid" --type mmap -f speedscope -o "$T/m.ss.json" || fail "speedscope dump failed"
grep -q '\[unmapped\]' "$T/m.ss.json" || fail "speedscope has no [unmapped] frame"
# Frees go to [unmapped] frames: every weight positive, none a negative
# count printed as unsigned (2^64 - n).
python3 -c '
import json, sys
w = [x for p in json.load(open(sys.argv[1]))["profiles"] for x in p["weights"]]
sys.exit(0 if w and all(0 < x < 2**63 for x in w) else 1)' "$T/m.ss.json" ||
	fail "speedscope has no weights, or a negative or wrapped one"
ctl dump --pid "$pid" --type mmap -f pprof -o "$T/m.pb.gz" || fail "pprof dump failed"
if command -v go >/dev/null; then
	raw=$(go tool pprof -raw "$T/m.pb.gz" 2>&1) || fail "go tool pprof -raw: $raw"
	grep -q "space/bytes" <<<"$raw" || fail "pprof sample type is not space/bytes"
	grep -qE '^ +-[0-9]+: ' <<<"$raw" || fail "pprof has no negative value: $(head -20 <<<"$raw")"
	ok "pprof: space/bytes, frees negative"
fi
ok "json signed, svg and speedscope split into [mapped] and [unmapped]"

# The same after a restart: history keeps the negative counts.
stop_profd
start_profd --mmap --pid "$pid"
ctl dump --pid "$pid" --type mmap -o "$T/h.folded" || fail "dump from history failed"
want=$(awk '$1 == "free_some" { print $2 }' "$truth")
got=$(awk '/free_some/ { s += $NF } END { printf "%d", s }' "$T/h.folded")
[ "$got" = "$want" ] || fail "history: free_some $got bytes, true $want"
ok "history keeps frees negative ($((got / 1048576)) MiB)"
stop_profd
