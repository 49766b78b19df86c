# Threads with Python names for `profctl stacks` to show
# (tests/e2e/test_stacks_thread_names.sh), all blocked:
#   MainThread            the main thread, in Event.wait
#   CustomThreadName-3    named at creation
#   Thread-N (worker)     default-named with a target (3.10+; Thread-N before)
# Prints "ready", then one line per thread: "TID NAME" (TID: its
# threading.get_native_id(), as the process's namespace numbers it).
import sys
import threading
import time

started = threading.Barrier(3)


def worker():
    started.wait()
    time.sleep(3600)


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
    threading.Event().wait()


if __name__ == "__main__":
    main()
