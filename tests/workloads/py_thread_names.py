# Threads with Python names for `profctl stacks` to show
# (tests/e2e/test_stacks_thread_names.sh), all blocked:
#   MainThread            the main thread, in Event.wait
#   CustomThreadName-3    named at creation
#   Thread-N (worker)     default-named with a target (3.10+; Thread-N before)
# With "spin": every thread computes instead (for dump --by-thread).
# Prints "ready", then one line per thread: "TID NAME" (TID: its
# threading.get_native_id(), as the process's namespace numbers it).
import sys
import threading
import time

started = threading.Barrier(3)
SPIN = sys.argv[1:] == ["spin"]


def block_or_spin():
    if not SPIN:
        time.sleep(3600)
    while True:
        sum(range(1000))


def worker():
    started.wait()
    block_or_spin()


def main():
    named = threading.Thread(target=worker, name="CustomThreadName-3", daemon=True)
    default = threading.Thread(target=worker, daemon=True)
    named.start()
    default.start()
    started.wait()
    time.sleep(0.2)
    print("ready", flush=True)
    for t in threading.enumerate():
        print(t.native_id, t.name, flush=True)
    if SPIN:
        block_or_spin()
    threading.Event().wait()


if __name__ == "__main__":
    main()
