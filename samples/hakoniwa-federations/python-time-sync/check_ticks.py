#!/usr/bin/env python3
"""The checks of the sample's expected/success.yaml, on the JSON lines of its two assets.

usage: check_ticks.py LOG_A LOG_B [--minimum-tick N] [--delta-usec D]

Each asset registered before its first tick; both reached the required tick; at every tick
both printed, the simulation time is the same for both (tick * delta); it never moved
backwards; both terminated normally. Exit 1 with the reason when a check fails.
"""
import argparse
import json
import sys


def read(path):
    events = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if line.startswith("{"):
                try:
                    events.append(json.loads(line))
                except ValueError as e:
                    raise SystemExit("check_ticks: %s:%d: not JSON: %s" % (path, n, e))
    return events


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs=2)
    ap.add_argument("--minimum-tick", type=int, default=20)
    ap.add_argument("--delta-usec", type=int, default=10000)
    args = ap.parse_args()
    ticks = []
    problems = []
    for path in args.logs:
        ev = read(path)
        kinds = [e.get("event") for e in ev]
        name = ev[0].get("asset", path) if ev else path
        if "REGISTERED" not in kinds or "TICK" not in kinds:
            problems.append("%s: no REGISTERED or no TICK line" % name)
            ticks.append({})
            continue
        if kinds.index("REGISTERED") > kinds.index("TICK"):
            problems.append("%s: ticked before it registered" % name)
        if "ERROR" in kinds:
            problems.append("%s: %s" % (name, ev[kinds.index("ERROR")]))
        if not kinds or kinds[-1] != "TERMINATED":
            problems.append("%s: did not terminate normally (last event %s)" %
                            (name, kinds[-1] if kinds else None))
        t = {e["tick"]: e["sim_time_usec"] for e in ev if e.get("event") == "TICK"}
        last = -1
        for k in sorted(t):
            if t[k] < last:
                problems.append("%s: time went backwards at tick %d" % (name, k))
            last = t[k]
        if max(t) < args.minimum_tick:
            problems.append("%s: reached tick %d, fewer than %d" % (name, max(t), args.minimum_tick))
        ticks.append(t)
    common = sorted(set(ticks[0]) & set(ticks[1]))
    for k in common:
        if ticks[0][k] != ticks[1][k] or ticks[0][k] != k * args.delta_usec:
            problems.append("tick %d: sim_time %d and %d (expected %d)" %
                            (k, ticks[0][k], ticks[1][k], k * args.delta_usec))
    if problems:
        for p in problems:
            print("check_ticks: FAILED: " + p, file=sys.stderr)
        return 1
    print("check_ticks: OK: both assets reached tick %d; at each of the %d ticks both printed "
          "(up to %d) the simulation time is the same for both and tick x %d us" %
          (min(max(ticks[0]), max(ticks[1])), len(common), common[-1], args.delta_usec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
