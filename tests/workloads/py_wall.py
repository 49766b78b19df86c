"""Wall-clock workload: one function computes, another sleeps, for equal
time each round (each round a little different in length, so the loop
cannot lock in phase with the sampling clock).  After 2.5 s a second
thread blocks forever on a lock (well after profd finds the interpreter,
even on a loaded machine: a thread that blocks before that and never
runs again keeps a stack without Python frames); with --gil N, N more threads
compute and contend for the GIL.  With --truth FILE it keeps there the
wall seconds each of compute and sleep_for really took ("C S", rewritten
every round): on a busy machine a compute step overshoots its deadline
by however long the thread waited for a CPU, so the split drifts from
50/50 and the profile must follow the truth, not the plan."""
import os
import sys
import threading
import time


def compute(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        for i in range(200):
            x += i * i
    return x


def sleep_for(seconds):
    time.sleep(seconds)


def wait_forever(lock):
    lock.acquire()  # held by main: blocks forever


def gil_worker():
    x = 0
    while True:
        for i in range(1000):
            x += i


def main():
    gil = int(sys.argv[sys.argv.index("--gil") + 1]) if "--gil" in sys.argv else 0
    truth = sys.argv[sys.argv.index("--truth") + 1] if "--truth" in sys.argv else None
    spent = [0.0, 0.0]
    lock = threading.Lock()
    lock.acquire()
    for _ in range(gil):
        threading.Thread(target=gil_worker, name="gil", daemon=True).start()
    k = 0
    while True:
        step = 0.04 + 0.004 * (k % 5)
        t0 = time.monotonic()
        compute(step)
        t1 = time.monotonic()
        sleep_for(step)
        t2 = time.monotonic()
        spent[0] += t1 - t0
        spent[1] += t2 - t1
        if truth:
            with open(truth + ".tmp", "w") as f:
                f.write("%.6f %.6f\n" % (spent[0], spent[1]))
            os.replace(truth + ".tmp", truth)
        k += 1
        if k == 25:
            threading.Thread(target=wait_forever, args=(lock,), name="blocked", daemon=True).start()


if __name__ == "__main__":
    main()
