# asyncio tasks that compute, for `profctl dump --by-task`:
#   "hasher"      hash_work, a slice at a time
#   "sorter"      sort_work, a slice at a time
#   two unnamed   unnamed_work
# Each yields to the event loop between slices.  argv: SECONDS to run,
# then DELAY: seconds to wait before importing asyncio (so a profiler
# that found the interpreter first must notice _asyncio arrive).
import sys
import time

time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0)
import asyncio  # noqa: E402


def hash_work():
    h = 0
    for i in range(20000):
        h = (h * 31 + i) % 1000003
    return h


def sort_work():
    return sorted(range(20000, 0, -1))[0]


def unnamed_work():
    return sum(i * i for i in range(20000))


async def run(fn, end):
    while time.monotonic() < end:
        fn()
        await asyncio.sleep(0)


async def main(seconds):
    end = time.monotonic() + seconds
    print("ready", flush=True)
    await asyncio.gather(
        asyncio.create_task(run(hash_work, end), name="hasher"),
        asyncio.create_task(run(sort_work, end), name="sorter"),
        asyncio.create_task(run(unnamed_work, end)),
        asyncio.create_task(run(unnamed_work, end)),
    )


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 10.0))
