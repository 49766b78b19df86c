# A job blocked in a frame whose variables are of every kind that
# `profctl stacks --locals` shows by value (tests/e2e/test_stacks_locals.sh):
# arguments of each sort, a cell captured by an inner function, ints small,
# negative and big, a float, str of each width, bytes, None, bools, short and
# long lists, a tuple, dicts small, long and split (an instance's attributes),
# containers nested (and a list that holds itself) and an instance of a class.  Prints "ready" just before it blocks.
import threading


class Widget:
    pass


def blocked(count, *rest, flag=True, **extra):
    small = 42
    negative = -7
    big = 2**100
    ratio = 0.25
    text = "h\u00e9llo\tworld"
    wide = "\u65e5\u672c"
    astral = "py\U0001f40d"
    long_text = "x" * 300
    quoted = "it's"
    data = b"\x00ab\xff"
    nothing = None
    no = False
    items = [1, "two", 3.5]
    many = list(range(10))
    pair = (1, 2)
    table = {"a": 1}
    numbers = {i: str(i) for i in range(10)}
    widget = Widget()
    widget.name = "w"
    attrs = widget.__dict__
    nested = {"a": False, "b": (1, 2, 3), "c": [[1, [2, [3, [4]]]]]}
    loop = [1]
    loop.append(loop)

    def inner():
        return small

    print("ready", flush=True)
    threading.Event().wait()  # blocked here


if __name__ == "__main__":
    blocked(5, "x", extra_key=1)
