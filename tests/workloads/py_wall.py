"""Wall-clock workload: one function computes, another sleeps, for equal
time each round (each round a little different in length, so the loop
cannot lock in phase with the sampling clock).  After the first second a
second thread blocks forever on a lock (later than profd takes to find
the interpreter: a thread that blocks before that and never runs again
keeps a stack without Python frames); with --gil N, N more threads
compute and contend for the GIL."""
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
    lock = threading.Lock()
    lock.acquire()
    for _ in range(gil):
        threading.Thread(target=gil_worker, name="gil", daemon=True).start()
    k = 0
    while True:
        step = 0.04 + 0.004 * (k % 5)
        compute(step)
        sleep_for(step)
        k += 1
        if k == 12:
            threading.Thread(target=wait_forever, args=(lock,), name="blocked", daemon=True).start()


if __name__ == "__main__":
    main()
