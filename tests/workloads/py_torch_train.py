"""A small PyTorch CPU training loop for tests/e2e/test_torch_unwind.sh:
an MLP, 4 intra-op threads, forward, backward and an optimizer step, for
the number of seconds given (default 8).  Prints "ready" once the first
step is done (the libraries are loaded and the thread pool is up)."""
import sys
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


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
    torch.manual_seed(0)
    torch.set_num_threads(4)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 64))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 512)
    y = torch.randn(256, 64)
    step(model, opt, x, y)
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        step(model, opt, x, y)


if __name__ == "__main__":
    main()
