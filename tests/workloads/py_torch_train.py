"""A small PyTorch CPU training loop for tests/e2e/test_torch_unwind.sh
and docs/make_pictures.sh: an MLP, 4 intra-op threads, forward, backward
and an optimizer step, for the number of seconds given (default 8).
Prints "ready" once the first step is done (the libraries are loaded and
the thread pool is up).  With --loader a second Python thread, "loader",
feeds the steps as a data loader would: it reads (a sleep stands for the
I/O), decodes in pure Python and augments with torch, and hands batches
over a queue of one; the main thread then waits in next_batch whenever
the loader falls behind, and PyTorch computes on the main thread alone
(intra-op threads would sync with it through every step in blocks of a
millisecond or so, and chop its timeline, docs/img/timeline.png, into
slivers)."""
import queue
import random
import sys
import threading
import time

import torch


def forward(model, x, y):
    return torch.nn.functional.mse_loss(model(x), y)


def backward(loss):
    loss.backward()


def step(model, opt, x, y):
    opt.zero_grad()
    loss = forward(model, x, y)
    backward(loss)
    opt.step()


def read_shard(rng, n):
    # The disk or the network: mostly quick, every fourth read slow.
    time.sleep(1.0 if n % 4 == 3 else rng.uniform(0.02, 0.05))
    return [rng.random() for _ in range(64 * 512)]


def decode(raw):
    return [[v * 2.0 - 1.0 for v in raw[i:i + 512]] for i in range(0, len(raw), 512)]


def augment(rows):
    x = torch.tensor(rows)
    return x + 0.01 * torch.randn_like(x), x[:, :64].clone()


def loader(batches, end):
    rng, n = random.Random(0), 0
    while time.monotonic() < end:
        batches.put(augment(decode(read_shard(rng, n))))
        n += 1


def next_batch(batches):
    return batches.get()


def main():
    args = [a for a in sys.argv[1:] if a != "--loader"]
    seconds = float(args[0]) if args else 8.0
    loading = "--loader" in sys.argv[1:]
    torch.manual_seed(0)
    torch.set_num_threads(1 if loading else 4)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 64))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 512)
    y = torch.randn(256, 64)
    step(model, opt, x, y)
    end = time.monotonic() + seconds
    batches = None
    if loading:
        batches = queue.Queue(maxsize=1)
        threading.Thread(target=loader, args=(batches, end), name="loader", daemon=True).start()
    print("ready", flush=True)
    while time.monotonic() < end:
        if batches is not None:
            x, y = next_batch(batches)
        step(model, opt, x, y)


if __name__ == "__main__":
    main()
