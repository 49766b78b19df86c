# A code object freed and its address reused by another: source A
# (first_file.py) runs work_a for a while, every reference to its code is
# dropped, and source B (second_file.py, the same shape) is compiled until
# work_b's code object sits where work_a's was; then work_b runs.
# Arguments: seconds per phase, and the period the phases must fit in
# (0: any): the daemon re-checks a name it holds once a period, which
# would hide a stale name, so both phases run in one period.
# Prints REUSED or NOT_REUSED (the address was never had again), then
# PHASE_B before B starts (A's samples are all taken by then) and DONE,
# then sleeps until killed.
import gc
import sys
import time

SHAPE = """\
import time


def {name}(end):
    x = 0
    while time.monotonic() < end:
        x += 1
    return x
"""
SRC_A = SHAPE.format(name="work_a")
SRC_B = SHAPE.format(name="work_b")
TRIES = 2000


def busy(fn, seconds):
    fn(time.monotonic() + seconds)


def load(src, filename, name):
    ns = {}
    exec(compile(src, filename, "exec"), ns)
    return ns[name]


def reuse(old_id):
    """work_b, loaded until its code object has old_id; None after TRIES.
    Missed tries are kept a while so the next one starts from another
    allocator state, then let go so their blocks come back."""
    kept = []
    for i in range(TRIES):
        fn = load(SRC_B, "second_file.py", "work_b")
        if id(fn.__code__) == old_id:
            return fn
        kept.append(fn)
        if i % 16 == 15:
            kept.clear()
            gc.collect()
    return None


def wait_period(period_ns, need_ns):
    """Sleep until the rest of the current period holds need_ns."""
    if not period_ns:
        return
    left = period_ns - time.monotonic_ns() % period_ns
    if left < need_ns:
        time.sleep(left / 1e9 + 0.05)


def main(seconds, period_ns):
    wait_period(period_ns, int((2 * seconds + 1.5) * 1e9))
    fn = load(SRC_A, "first_file.py", "work_a")
    old_id = id(fn.__code__)
    busy(fn, seconds)
    del fn
    gc.collect()
    fn = reuse(old_id)
    print("REUSED" if fn else "NOT_REUSED", flush=True)
    if fn:
        print("PHASE_B", flush=True)
        time.sleep(0.5)  # the test counts A's samples meanwhile
        busy(fn, seconds)
    print("DONE", flush=True)
    time.sleep(3600)


if __name__ == "__main__":
    main(float(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
