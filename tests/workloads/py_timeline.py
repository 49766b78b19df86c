# Three threads with different timelines (test_gecko.sh): "alpha" and
# "beta" burn CPU in functions of their own, "sleeper" blocks in
# time.sleep in short naps.  Prints "ROLE TID" for each, then "ready",
# and runs for argv[1] seconds (default 30).
import sys
import threading
import time


def alpha_work(end):
    x = 0
    while time.monotonic() < end:
        for i in range(1000):
            x += i * i
    return x


def beta_work(end):
    s = ""
    while time.monotonic() < end:
        s = "".join(str(i) for i in range(200))
    return s


def sleeper_wait(end):
    while time.monotonic() < end:
        time.sleep(0.05)


PRINT = threading.Lock()  # one whole line at a time


def say(*words):
    with PRINT:
        print(*words, flush=True)


def run(role, fn, end, ready):
    say(role, threading.get_native_id())
    ready.release()
    fn(end)


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    end = time.monotonic() + seconds
    ready = threading.Semaphore(0)
    roles = [("alpha", alpha_work), ("beta", beta_work), ("sleeper", sleeper_wait)]
    threads = [threading.Thread(target=run, args=(r, f, end, ready)) for r, f in roles]
    for t in threads:
        t.start()
    for _ in threads:
        ready.acquire()
    say("main", threading.get_native_id())
    say("ready")
    for t in threads:
        t.join()
