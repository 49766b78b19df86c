#!/usr/bin/env python3
"""Structural check of a Gecko profile written by profd (render_gecko.h).

usage: gecko_check.py FILE [--expect-threads N] [--expect-markers TYPE...]
Prints a one-line JSON summary on success: per thread its name, tid,
sample count, marker types, and the leaf frames of its samples.
Exits 1 with the reason on the first violation."""
import json
import sys


def fail(msg):
    print("gecko_check: " + msg, file=sys.stderr)
    sys.exit(1)


def table(th, key, cols):
    t = th.get(key)
    if not isinstance(t, dict) or "schema" not in t or "data" not in t:
        fail("thread %s: %s is not {schema, data}" % (th.get("tid"), key))
    for c in cols:
        if c not in t["schema"]:
            fail("thread %s: %s schema lacks %s" % (th.get("tid"), key, c))
    return t["schema"], t["data"]


def check_thread(th):
    tid = th.get("tid")
    for k in ("name", "pid", "tid", "processType", "stringTable"):
        if k not in th:
            fail("thread without %s" % k)
    strings = th["stringTable"]
    fs, frames = table(th, "frameTable", ["location", "line", "category"])
    ss, stacks = table(th, "stackTable", ["prefix", "frame"])
    sm, samples = table(th, "samples", ["stack", "time"])
    ms, markers = table(th, "markers", ["name", "startTime", "endTime", "phase", "data"])
    for f in frames:
        if not 0 <= f[fs["location"]] < len(strings):
            fail("thread %s: frame location out of range" % tid)
    for i, s in enumerate(stacks):
        p = s[ss["prefix"]]
        if p is not None and not 0 <= p < i:
            fail("thread %s: stack %d prefix %s not earlier" % (tid, i, p))
        if not 0 <= s[ss["frame"]] < len(frames):
            fail("thread %s: stack %d frame out of range" % (tid, i))

    def names(stack):
        out = []
        while stack is not None:
            row = stacks[stack]
            out.append(strings[frames[row[ss["frame"]]][fs["location"]]])
            stack = row[ss["prefix"]]
        return out[::-1]

    last = None
    leaves = {}
    for s in samples:
        t = s[sm["time"]]
        if last is not None and t < last:
            fail("thread %s: sample times go back (%s after %s)" % (tid, t, last))
        last = t
        st = s[sm["stack"]]
        if st is not None and not 0 <= st < len(stacks):
            fail("thread %s: sample stack out of range" % tid)
        for n in names(st):
            leaves[n] = leaves.get(n, 0) + 1
    types = {}
    for m in markers:
        if not 0 <= m[ms["name"]] < len(strings):
            fail("thread %s: marker name out of range" % tid)
        d = m[ms["data"]]
        if m[ms["phase"]] == 1 and m[ms["endTime"]] < m[ms["startTime"]]:
            fail("thread %s: marker ends before it starts" % tid)
        c = None
        if "stack" in d:  # a one-sample SyncProfile indexing this stackTable
            sp = d["stack"]
            if sp.get("name") != "SyncProfile" or sp.get("tid") != tid:
                fail("thread %s: marker stack is not this thread's SyncProfile" % tid)
            row = sp["samples"]["data"][0]
            c = {"stack": row[sp["samples"]["schema"]["stack"]]}
            if not 0 <= c["stack"] < len(stacks):
                fail("thread %s: marker stack out of range" % tid)
        ent = types.setdefault(d["type"], {"n": 0, "ms": 0.0, "frames": {}})
        ent["n"] += 1
        if m[ms["phase"]] == 1:
            ent["ms"] += m[ms["endTime"]] - m[ms["startTime"]]
        for n in names(c["stack"]) if c else []:
            ent["frames"][n] = 1
    return {"name": th["name"], "tid": tid, "pid": th["pid"], "samples": len(samples),
            "first": samples[0][sm["time"]] if samples else None,
            "last": last, "frames": leaves, "markers": types}


def main():
    if len(sys.argv) < 2:
        fail(__doc__)
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    meta = doc.get("meta")
    if not isinstance(meta, dict):
        fail("no meta")
    for k in ("version", "startTime", "interval", "categories"):
        if k not in meta:
            fail("meta without %s" % k)
    threads = doc.get("threads")
    if not isinstance(threads, list):
        fail("no threads")
    tids = [t.get("tid") for t in threads]
    if len(set(tids)) != len(tids):
        fail("a tid has several threads: %s" % tids)
    out = [check_thread(t) for t in threads]
    print(json.dumps({"startTime": meta["startTime"], "threads": out}))


main()
