# profctl stacks on a daemon left at its defaults (no --off-cpu): the
# native frames of threads blocked since before profd started, walked on
# request from the user pc and sp the kernel shows of a blocked thread
# (/proc/PID/task/TID/syscall) with profd's own unwind tables, and named
# from the files' symbols (Debian's python3.11 is stripped: its debug
# file by build-id).
#   c_sleep (no frame pointers): main -> nap -> nanosleep, and a thread
#     reader -> wait_pipe -> read, each root to leaf in order; a thread
#     blocked under a frame-pointer function cut there, saying why;
#   python3.11 py_hang.py: time.sleep's C function (time_sleep) under the
#     Python frame that called it, Py_BytesMain near the root (Debian's
#     main tail-calls it: no frame of its own);
#     the running spinner has no native frames (no registers to walk).
. "$(dirname "$0")/lib.sh"

SCRIPT=$SRC/tests/workloads/py_hang.py
PY=/usr/bin/python3.11

# check FILE PID WHAT: the JSON listing in FILE against the python check
# WHAT (below); prints what it found.
check() {
	python3 - "$1" "$2" "$3" "$SCRIPT" <<'PY'
import json, os, sys
threads = json.load(open(sys.argv[1]))
pid, what, script = int(sys.argv[2]), sys.argv[3], sys.argv[4]

def names(t, kinds=("native", "python", "unknown")):
    # Leaf first, as listed; ".lto_priv.0"-style suffixes dropped.
    return [f["name"].split(".lto_priv")[0] for f in t["frames"] if f["kind"] in kinds]

def in_order(got, want):
    """want's names appear in got, in this order (leaf first); a Python
    frame's name matches with or without its location."""
    at = 0
    for w in want:
        hits = [i for i in range(at, len(got)) if got[i] in w or got[i].split(" (")[0] in w]
        assert hits, (w, "not found after", got[:at], "in", got)
        at = hits[0] + 1
    return True

def show(t):
    print("  %s %s (%s): %s" % (t["tid"], t["name"], t["source"], " <- ".join(names(t))))

WAIT = ("clock_nanosleep", "__GI___clock_nanosleep", "__clock_nanosleep",
        "__nanosleep", "nanosleep", "__GI___nanosleep")
if what == "c":
    main = next(t for t in threads if t["tid"] == pid)
    reader = next(t for t in threads if t["name"] == "reader")
    for t in (main, reader):
        show(t)
        assert t["stack_from"] == "read-now" and t["state"] in "SD", t
        assert t["source"] == "blocked: native stack read now", t
        assert not any(n.startswith("[native stack cut") for n in names(t)), names(t)
    in_order(names(main), [WAIT, ("nap",), ("main",), ("__libc_start_main",), ("_start",)])
    in_order(names(reader), [("read", "__libc_read", "__GI___libc_read"), ("wait_pipe",),
                             ("reader",), ("start_thread",)])
    # A frame-pointer function blocked under read, walked from the pc and
    # sp the kernel shows.  x86-64: read does not save rbp, so there is
    # no rbp to find fp_wait's caller by: the walk stops there, cut, and
    # says why.  arm64: glibc's read keeps a frame record (x29, x30), so
    # the caller's x29 is found in it and the walk goes on whole.
    fp = next(t for t in threads if t["name"] == "fp_reader")
    show(fp)
    assert fp["source"] == "blocked: native stack read now", fp
    got = names(fp)
    if os.uname().machine == "aarch64":
        in_order(got, [("read", "__libc_read", "__GI___libc_read"), ("fp_wait",),
                       ("fp_reader",), ("start_thread",)])
        assert not any(n.startswith("[native stack cut") for n in got), got
    else:
        assert got[-1].startswith("[native stack cut: a frame needs rbp"), got
        in_order(got, [("read", "__libc_read", "__GI___libc_read"), ("fp_wait",)])
        assert "fp_reader" not in got and "start_thread" not in got, got
    # Kernel frames stay leafward of the native ones.
    kinds = [f["kind"] for f in main["frames"]]
    assert "kernel" not in kinds[kinds.index("native"):], kinds
else:
    def at(name, line):
        return "%s (%s:%d)" % (name, script, line)
    l_nap, l_hang, l_main, l_mod = map(int, what.split()[1:])
    nap = next(t for t in threads if at("nap", l_nap) in names(t))
    main = next(t for t in threads if t["tid"] == pid)
    spin = next(t for t in threads if any(n.startswith("spin (") for n in names(t)))
    for t in (nap, main, spin):
        show(t)
    # time.sleep's C function under the Python frame that called it.
    in_order(names(nap), [WAIT, ("time_sleep",), (at("nap", l_nap),),
                          ("Thread.run",), ("start_thread",)])
    # Two eval calls (Thread.run calls nap through C): each one's Python
    # frames in its eval frame's place, the C call between them.
    in_order(names(nap), [(at("nap", l_nap),), ("_PyFunction_Vectorcall",), ("Thread.run",),
                          ("Thread._bootstrap",), ("thread_run",)])
    assert "_PyEval_EvalFrameDefault" not in names(nap), names(nap)
    in_order(names(main), [("PyThread_acquire_lock_timed",), ("Condition.wait",),
                           (at("hang", l_hang),), (at("main", l_main),),
                           (at("<module>", l_mod),), ("Py_RunMain",), ("Py_BytesMain",),
                           ("__libc_start_main",)])  # main tail-calls Py_BytesMain
    assert nap["source"] == main["source"] == "blocked: Python stack read now", (nap, main)
    # Running: no registers to walk, its Python frames only.
    assert spin["state"] != "R" or not names(spin, ("native",)), names(spin)
PY
}

[ -x "$PY" ] || skip "no $PY (Debian's python3.11)"
start_ready "$WORKLOADS/c_sleep"
C=$W
start_ready nice -n 19 "$PY" "$SCRIPT"
P=$W
start_profd
ctl stacks --pid "$C" >"$T/c.txt" || fail "stacks of c_sleep failed"
cat "$T/c.txt"
ctl stacks --pid "$C" --json >"$T/c.json" || fail "stacks --json of c_sleep failed"
check "$T/c.json" "$C" c || fail "c_sleep's native frames wrong"
grep -A8 -x "    __nanosleep\|    clock_nanosleep" "$T/c.txt" | grep -qx "    main" ||
	fail "c_sleep's text listing lacks its native frames"
ok "c_sleep: main and its reader walked by their CFI, root to leaf; a frame-pointer frame cut"

ctl stacks --pid "$P" >"$T/p.txt" || fail "stacks of python failed"
cat "$T/p.txt"
ctl stacks --pid "$P" --json >"$T/p.json" || fail "stacks --json of python failed"
check "$T/p.json" "$P" "py $(grep -n 'the napper blocks here' "$SCRIPT" | cut -d: -f1) \
$(grep -n 'the main thread blocks here' "$SCRIPT" | cut -d: -f1) \
$(grep -n 'hang()  # called from main' "$SCRIPT" | cut -d: -f1) \
$(grep -n 'main()  # called from <module>' "$SCRIPT" | cut -d: -f1)" ||
	fail "python3.11's native frames wrong"
ok "python3.11: time_sleep under nap, the interpreter's frames around the Python ones"
stop_profd
