#!/usr/bin/env python3
"""The pipeline's stage graph: which stage folder of userspace/lib includes
which other's headers.  Prints one line per stage and exits 1 when the
includes form a cycle (userspace/lib/CMakeLists.txt enforces the declared
edges at build time; this keeps the declared graph acyclic and readable).

Usage: stage_graph.py [SOURCE_DIR]"""
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
lib = os.path.join(src, "userspace", "lib")
stages = sorted(d for d in os.listdir(lib) if os.path.isdir(os.path.join(lib, d)))
owner = {f: s for s in stages for f in os.listdir(os.path.join(lib, s)) if f.endswith(".h")}
edges = {s: set() for s in stages}
for s in stages:
    for f in os.listdir(os.path.join(lib, s)):
        if not f.endswith((".c", ".h")):
            continue
        with open(os.path.join(lib, s, f), encoding="utf-8") as fh:
            for h in re.findall(r'^#include "([^"]+)"', fh.read(), re.M):
                if owner.get(h, s) != s:
                    edges[s].add(owner[h])

for s in stages:
    print(f"{s:10s} -> {' '.join(sorted(edges[s])) or '-'}")

# Depth-first search for a back edge: a cycle, printed as a path.
state, path = {}, []


def visit(s):
    state[s] = "open"
    path.append(s)
    for t in sorted(edges[s]):
        if state.get(t) == "open":
            return path[path.index(t):] + [t]
        if t not in state:
            cycle = visit(t)
            if cycle:
                return cycle
    state[s] = "done"
    path.pop()
    return None


for s in stages:
    if s not in state:
        cycle = visit(s)
        if cycle:
            print("FAIL: include cycle between stages: " + " -> ".join(cycle))
            sys.exit(1)
print(f"PASS: {len(stages)} stages, no include cycle")
