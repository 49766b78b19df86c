# A job hung before anyone thought to profile it, for `profctl stacks` on
# a daemon started after it (tests/e2e/test_stacks_default.sh):
#   main thread  <module> -> main -> hang -> Event.wait (blocked for good)
#   "napper"     nap -> time.sleep (blocked for an hour)
#   "spinner"    spin, computing
# Prints "ready" once the threads have started.
import threading
import time


def nap():
    time.sleep(3600)  # the napper blocks here


def spin():
    while True:
        sum(range(100))  # the spinner runs here


def hang():
    threading.Event().wait()  # the main thread blocks here


def main():
    threading.Thread(target=nap, name="napper", daemon=True).start()
    threading.Thread(target=spin, name="spinner", daemon=True).start()
    time.sleep(0.2)
    print("ready", flush=True)
    hang()  # called from main


if __name__ == "__main__":
    main()  # called from <module>
