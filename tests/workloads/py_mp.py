# multiprocessing workers running a known chain: <module> -> main ->
# pool.map -> work -> burn.  Prints the worker pids, one per line.
import multiprocessing as mp
import os
import sys
import time


def burn(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        for i in range(1000):
            x += i
    return x


def work(seconds):
    # One write: two workers' lines must not interleave.
    os.write(1, b"%d\n" % os.getpid())
    burn(seconds)
    return os.getpid()


def main(seconds):
    with mp.get_context("fork").Pool(2) as pool:
        pool.map(work, [seconds, seconds], chunksize=1)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0)
