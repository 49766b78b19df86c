# A Python stack of as many distinct functions as asked, each its own code
# object: <module> -> main -> f0 -> f1 -> ... -> f(DEPTH-1), the innermost
# spinning (py_deep.py's recursion repeats one code object instead).
# Arguments: seconds, depth.
import sys
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def chain(depth):
    """f0..f(depth-1), each calling the next; the last spins until end."""
    src = [f"def f{i}(end):\n    return f{i + 1}(end)\n" for i in range(depth - 1)]
    src.append(f"def f{depth - 1}(end):\n"
               "    while time.monotonic() < end:\n"
               "        spin(2000)\n")
    ns = {"time": time, "spin": spin}
    exec(compile("".join(src), "py_chain_generated.py", "exec"), ns)
    return ns["f0"]


def main(seconds, depth):
    chain(depth)(time.monotonic() + seconds)


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    main(float(sys.argv[1]), int(sys.argv[2]))
