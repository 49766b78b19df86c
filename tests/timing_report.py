#!/usr/bin/env python3
"""timing_report.py JUNIT_XML [BUDGET_S]: each test group's time and
verdicts from ctest's JUnit output (ctest --output-junit), so that drift
in the suite's time budget is seen at every run.

A group is the test name's first part, with a variant's second (unit,
bpf, e2e, e2e.legacy, kernel, kernel.arm64, sanitize, ...); the slowest
tests are listed too.  The last line
is the plain closing line `tests: N passed, N failed, N skipped`.
Exit 0; the verdict is ctest's own exit status."""
import sys
import xml.etree.ElementTree as ET


def group_of(name):
    """unit, bpf, e2e, e2e.legacy, kernel, kernel.arm64, sanitize, ...:
    the first part of the name, and the second where it names a variant
    (not a test or a kernel version, as in kernel.6.1)."""
    parts = name.split(".")
    if len(parts) > 2 and parts[1] in ("legacy", "arm64"):
        return ".".join(parts[:2])
    return parts[0]


def main():
    path = sys.argv[1]
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 0
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"timing: no JUnit report ({e})")
        return 0
    groups, tests = {}, []
    for tc in root.iter("testcase"):
        name = tc.get("name", "?")
        t = float(tc.get("time", "0") or 0)
        status = tc.get("status", "")
        if tc.find("failure") is not None or tc.find("error") is not None or status == "fail":
            verdict = "failed"
        elif tc.find("skipped") is not None or status in ("notrun", "disabled"):
            verdict = "skipped"
        else:
            verdict = "passed"
        g = groups.setdefault(group_of(name), {"time": 0.0, "passed": 0, "failed": 0, "skipped": 0})
        g["time"] += t
        g[verdict] += 1
        tests.append((t, name, verdict))
    total = sum(g["time"] for g in groups.values())
    print("timing: test time per group (s)")
    for name, g in sorted(groups.items(), key=lambda kv: -kv[1]["time"]):
        print(f"  {name:<16} {g['time']:8.1f}  {g['passed']} passed, {g['failed']} failed, {g['skipped']} skipped")
    print(f"  {'all':<16} {total:8.1f}" + (f"  (budget {budget:.0f} s for the tests)" if budget else ""))
    print("timing: slowest tests (s)")
    for t, name, verdict in sorted(tests, reverse=True)[:12]:
        print(f"  {t:8.1f}  {name} ({verdict})")
    n = {k: sum(g[k] for g in groups.values()) for k in ("passed", "failed", "skipped")}
    print(f"tests: {n['passed']} passed, {n['failed']} failed, {n['skipped']} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
