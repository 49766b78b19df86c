# A known Python profile: <module> -> main -> mid -> leaf_heavy / leaf_light,
# 3:1 by iterations of the same loop.  Optional arguments: seconds, threads.
# Each spin runs between n and 2n iterations, by a random draw
# (random.random is C code: no Python frame): a cycle of heavy + light
# close to the sampling period locks in phase with the sampling clock and
# skews the split; lengths that vary by a whole phase cannot, and the
# expected ratio stays 3:1.  The loop adds small ints only: products past
# 2**30 are slower bigint steps heavy would take and light would not.
# (With up to a tenth more, Python 3.11 read 71.3-80.2% over 2 s windows
# at 999 Hz beside a busy loop; with this draw 73.8-76.1%.)
import random
import sys
import threading
import time


def spin(n):
    x = 0
    for i in range(n + int(random.random() * n)):
        x += i & 0xff
    return x


def leaf_heavy():
    return spin(30000)


def leaf_light():
    return spin(10000)


def mid():
    leaf_heavy()
    leaf_light()


def main(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        mid()


def worker(seconds):
    main(seconds)


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    nthreads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    threads = [threading.Thread(target=worker, args=(seconds,), name=f"worker-{i}")
               for i in range(nthreads - 1)]
    for t in threads:
        t.start()
    main(seconds)  # called from <module>
    for t in threads:
        t.join()
