# Many Python threads, each running Python in turn: half are started
# before GO_FILE exists, half after, then a relay lets each thread run
# relay -> work for SLICE seconds of its own CPU time, one at a time, so
# every thread is on a CPU long enough to be sampled.
# Arguments: threads, go_file, slice_seconds.
import os
import sys
import threading
import time


def work(slice_s):
    end = time.thread_time() + slice_s
    x = 0
    while time.thread_time() < end:
        x += 1
    return x


def relay(mine, nxt, slice_s):
    mine.wait()
    work(slice_s)  # this thread's turn
    nxt.set()


def main(n, go_file, slice_s):
    threading.stack_size(256 * 1024)
    batons = [threading.Event() for _ in range(n + 1)]
    threads = []
    for i in range(n):
        if i == n // 2:
            print("ready", flush=True)
            while not os.path.exists(go_file):
                time.sleep(0.02)
        t = threading.Thread(target=relay, args=(batons[i], batons[i + 1], slice_s))
        t.start()
        threads.append(t)
    batons[0].set()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], float(sys.argv[3]))
