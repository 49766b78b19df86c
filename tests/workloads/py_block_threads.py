# Threads that block for good the moment they start: N of them, 2 ms
# apart, after 1.5 s of work (profd finds the interpreter meanwhile).
# Each one's only off-CPU stack is the one it had as it blocked, a few
# milliseconds into its life; prints "started" when all are.
import sys
import threading
import time

lock = threading.Lock()
lock.acquire()


def wait_forever():
    lock.acquire()  # held by the main thread: blocks for good


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


if __name__ == "__main__":
    spin(1.5)
    for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 300):
        threading.Thread(target=wait_forever, daemon=True).start()
        spin(0.002)
    print("started", flush=True)
    time.sleep(600)
