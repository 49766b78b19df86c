# A named thread that computes for a few seconds and exits while the main
# thread computes on, for `profctl record --by-thread` across the exit
# (tests/e2e/test_stacks_thread_names.sh).  Prints "TID Short" once the
# thread runs.
import sys
import threading
import time


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(1000))


def main():
    t = threading.Thread(target=spin, args=(float(sys.argv[1]),), name="Short", daemon=True)
    t.start()
    time.sleep(0.1)
    print(t.native_id, t.name, flush=True)
    spin(3600)


if __name__ == "__main__":
    main()
