# asyncio tasks suspended in known coroutine chains, for
# `profctl stacks --async`:
#   fetcher-0..2  fetch -> wait_for_data -> asyncio.sleep
#   consumer      consume -> Queue.get (a future no one completes)
#   parent        await_child, awaiting the task "child"
#   child         fetch -> wait_for_data -> asyncio.sleep
#   Task-1        main (asyncio.run's task, named by a counter)
# Prints "ready" once every task has started, then sleeps SECONDS.
import asyncio
import sys


async def wait_for_data(seconds):
    await asyncio.sleep(seconds)


async def fetch(seconds):
    await wait_for_data(seconds)


async def consume(queue):
    while True:
        await queue.get()


async def await_child(task):
    await task


async def main(seconds):
    queue = asyncio.Queue()
    tasks = [asyncio.create_task(fetch(seconds), name=f"fetcher-{i}") for i in range(3)]
    tasks.append(asyncio.create_task(consume(queue), name="consumer"))
    child = asyncio.create_task(fetch(seconds), name="child")
    tasks.append(asyncio.create_task(await_child(child), name="parent"))
    await asyncio.sleep(0.1)  # every task reaches its await
    print("ready", flush=True)
    await asyncio.wait(tasks, timeout=seconds)


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 30.0))
