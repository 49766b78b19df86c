"""Workloads for tests/gpu/on_gpu.sh, on a real CUDA GPU through PyTorch.

python3 gpu_work.py MODE SECONDS DONEFILE
  train  an MLP training loop: forward, backward, step, loss.item() (a
         synchronization) each step; prints the mean step time
  sync   known kernels (matmuls) then torch.cuda.synchronize(), in a loop
  alloc  tensors of changing large sizes through the caching allocator,
         empty_cache() each round (cudaMalloc/cudaFree underneath)
  compile  a torch.compile'd elementwise function (inductor makes Triton
         kernels, loaded with cuModuleLoadData + cuModuleGetFunction and
         launched with cuLaunchKernel); prints 'skip REASON' and exits
         when triton cannot be imported or the compile fails
Each prints 'ready PID' once CUDA is up and 'step_ms X' at the end, then
waits (at most 60 s) for DONEFILE so profd can be asked about it alive.
Lines on_gpu.sh looks for carry a 'CHECK:' comment.
"""
import os
import sys
import time

import torch


def train(seconds):
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
        torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
        torch.nn.Linear(4096, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 1024, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        total = loss.item()  # CHECK: train-sync
        steps += 1
    return (time.perf_counter() - t0) * 1000 / max(steps, 1), total


def sync(seconds):
    a = torch.randn(2048, 2048, device="cuda")
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        b = a @ a
        b = b @ a
        torch.cuda.synchronize()  # CHECK: sync-sync
        steps += 1
    return (time.perf_counter() - t0) * 1000 / max(steps, 1), float(b[0, 0])


def alloc(seconds):
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        mib = 64 + 32 * (steps % 8)
        t = torch.empty(mib << 18, device="cuda")  # CHECK: alloc-malloc
        t.fill_(1.0)
        del t
        torch.cuda.empty_cache()  # CHECK: alloc-free
        steps += 1
    return (time.perf_counter() - t0) * 1000 / max(steps, 1), steps


def fused(x, y):
    return torch.relu(x * 2.0 + y).sin()


def compiled(seconds):
    f = torch.compile(fused)
    x = torch.randn(1 << 20, device="cuda")
    y = torch.randn(1 << 20, device="cuda")
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        z = f(x, y)  # CHECK: compile-call
        steps += 1
    return (time.perf_counter() - t0) * 1000 / max(steps, 1), float(z[0])


def compile_ready():
    """None when torch.compile makes Triton kernels here, else why not.
    The first call compiles (tens of seconds): before 'ready'."""
    try:
        import triton  # noqa: F401
    except Exception as e:  # not installed, or no working build
        return "triton not importable: %s" % e
    try:
        torch.compile(fused)(torch.ones(8, device="cuda"), torch.ones(8, device="cuda"))
    except Exception as e:
        return "torch.compile failed: %s" % str(e).splitlines()[0][:200]
    return None


def main():
    mode, seconds, done = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    torch.zeros(1, device="cuda")
    if mode == "compile":
        why = compile_ready()
        if why:
            print("skip", why, flush=True)
            return
    torch.cuda.synchronize()
    print("ready", os.getpid(), flush=True)
    ms, _ = {"train": train, "sync": sync, "alloc": alloc,
              "compile": compiled}[mode](seconds)
    torch.cuda.synchronize()
    print("step_ms %.4f" % ms, flush=True)
    t0 = time.time()
    while not os.path.exists(done) and time.time() - t0 < 60:
        time.sleep(0.05)


if __name__ == "__main__":
    main()
