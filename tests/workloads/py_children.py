# A parent that works, then starts children three ways (multiprocessing
# fork and spawn, subprocess.run of another interpreter), each working in
# a function of its own, and exits 3: for `profctl record --subprocesses`.
import multiprocessing as mp, subprocess, sys, time
def burn(sec):
    e = time.monotonic() + sec
    while time.monotonic() < e: pass
def child_fork_work():
    burn(1.5)
def child_spawn_work():
    burn(1.5)
def parent_work():
    burn(1.0)
if __name__ == "__main__":
    parent_work()
    p1 = mp.get_context("fork").Process(target=child_fork_work); p1.start()
    p2 = mp.get_context("spawn").Process(target=child_spawn_work); p2.start()
    subprocess.run([sys.executable, "-c", "import time\ndef grandchild_run_work():\n e=time.monotonic()+1.5\n while time.monotonic()<e: pass\ngrandchild_run_work()"])
    p1.join(); p2.join()
    sys.exit(3)
