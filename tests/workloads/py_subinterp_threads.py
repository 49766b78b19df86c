# A thread started in a subinterpreter, named there ("SubThread"), and
# one in the main interpreter ("MainSide"), both blocked, for `profctl
# stacks` (tests/e2e/test_stacks_thread_names.sh): each interpreter has
# its own threading._active.  Exits 3 where this CPython has no
# subinterpreter module to start one with; before 3.12 one cannot start
# threads.  Prints the
# threads' "TID NAME" lines, then "ready".
import sys
import threading
import time

try:
    import _interpreters as interp  # 3.13+

    def run(i, code):
        interp.exec(i, code)

except ImportError:
    try:
        import _xxsubinterpreters as interp  # 3.12

        run = interp.run_string
    except ImportError:
        sys.exit(3)

CODE = """
import threading, time
t = threading.Thread(target=time.sleep, args=(3600,), name="SubThread")
t.start()
print(t.native_id, t.name, flush=True)
"""


def main():
    sub = interp.create()  # kept: 3.12 ends it with its last reference
    run(sub, CODE)
    t = threading.Thread(target=time.sleep, args=(3600,), name="MainSide", daemon=True)
    t.start()
    print(t.native_id, t.name, flush=True)
    print("ready", flush=True)
    time.sleep(3600)
    print(sub)


if __name__ == "__main__":
    main()
