# A known Python profile: <module> -> main -> mid -> leaf_heavy / leaf_light,
# 3:1 by iterations of the same loop.  Optional arguments: seconds, threads.
# Each spin runs up to a tenth longer, by a random draw (random.random is
# C code: no Python frame): iterations of one regular length can lock in
# phase with a regular sampling clock and skew the split; varying ones
# cannot, and the expected ratio stays 3:1.  (The draw used to be the
# clock's low bits, which move with the sampling clock itself: the split
# read 74-78% over 3 s at 999 Hz, against 74.6-75.8% with random draws.)
import random
import sys
import threading
import time


def spin(n):
    x = 0
    for i in range(n + int(random.random() * (n // 10))):
        x += i * i
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
