"""forklift_python_check.py: checks what the Python controller of the forklift demo read and
wrote, against the forklift's own record of every model step.

    python3 forklift_python_check.py --dir LOG_DIR

Runs after the simulation (and after forklift-report, which checks that the hosts' step records
are the single-process run, bit for bit). It reads the hosts' records
(forklift-<N>.steps.csv: every model step with its x, y, yaw, lift, phase and epoch) and the
controller's reads (forklift-python.csv), and checks:

- mission: the model ran the mission the controller wrote (every value exact);
- steps: the controller ran a step for every model step;
- reads: every PDU it read is one the owner wrote: for pos, x, y, lift, yaw and the epoch byte
  of one model step; for height and phase, the value and epoch of one. The step must lie in the
  window the clock rules allow: no later than the controller's time + Dmax (the world is never
  further ahead), no earlier than its time - 3 Dmax (the owner is at most Dmax behind, and a
  hand-off leaves the old owner's last PDU in the channel for about Dmax more). Only the first
  Dmax may find a PDU not written yet.

Prints one line per check and PASS or FAIL; exits 1 on FAIL.
"""

import argparse
import csv
import glob
import os
import re
import sys


def fail(msg):
    print("forklift_python_check.py: " + msg, file=sys.stderr)
    sys.exit(1)


def read_steps(folder):
    """{model_usec: record}, the mission (a tuple), dmax_usec, delta_usec."""
    steps, mission, dmax, delta = {}, None, None, None
    files = sorted(glob.glob(os.path.join(folder, "forklift-*.steps.csv")))
    if not files:
        fail("no forklift-*.steps.csv in %s" % folder)
    for path in files:
        with open(path) as f:
            lines = f.read().splitlines()
        body = []
        for line in lines:
            m = re.match(r"# node=\d+ domain=\S+ delta_usec=(\d+) dmax_usec=(\d+)$", line)
            if m:
                delta, dmax = int(m.group(1)), int(m.group(2))
            m = re.match(r"# mission forward=(\S+) backward=(\S+) speed=(\S+) lift=(\S+) "
                         r"loops=(\d+)$", line)
            if m:
                mission = tuple(float(v) for v in m.groups()[:4]) + (int(m.group(5)),)
            if not line.startswith("#"):
                body.append(line)
        for r in csv.DictReader(body):
            steps[int(r["model_usec"])] = {
                "epoch": int(r["epoch"]), "phase": int(r["phase"]), "x": float(r["x"]),
                "y": float(r["y"]), "yaw": float(r["yaw"]), "lift": float(r["lift"])}
    if mission is None or dmax is None:
        fail("the step records in %s lack the mission or the header" % folder)
    return steps, mission, dmax, delta


def read_controller(folder):
    path = os.path.join(folder, "forklift-python.csv")
    if not os.path.exists(path):
        fail("no %s: did the Python controller finish?" % path)
    with open(path) as f:
        first = f.readline()
        m = re.match(r"# mission forward=(\S+) backward=(\S+) speed=(\S+) lift=(\S+) "
                     r"loops=(\d+)$", first.strip())
        if not m:
            fail("%s: no mission line" % path)
        mission = tuple(float(v) for v in m.groups()[:4]) + (int(m.group(5)),)
        rows = []
        for r in csv.DictReader(f):
            rows.append({k: (None if v == "" else (int(v) if k.endswith("epoch") or k in (
                "t_usec", "phase") else float(v))) for k, v in r.items()})
    return mission, rows


def main():
    ap = argparse.ArgumentParser(description="Check the Python controller's reads and writes.")
    ap.add_argument("--dir", default=os.environ.get("HAKO_LAUNCH_LOG_DIR", "."))
    args = ap.parse_args()
    steps, model_mission, dmax, delta = read_steps(args.dir)
    sent, rows = read_controller(args.dir)
    failures = []

    def say(name, ok, text):
        print("  %-9s %s %s" % (name, "ok  " if ok else "FAIL", text))
        if not ok:
            failures.append(name)

    print("forklift with a Python controller: %d model steps, Dmax %d ms" % (
        len(steps), dmax // 1000))
    say("mission", sent == model_mission,
        "the model ran forward %g m, back %g m, %g m/s, lift %g m, loops %d; the controller "
        "wrote forward %g m, back %g m, %g m/s, lift %g m, loops %d" % (model_mission + sent))
    last = max(steps)
    say("steps", len(rows) == last // delta and len(steps) == last // delta,
        "the controller ran %d steps, the model %d (last at %.3f s)" % (
            len(rows), len(steps), last / 1e6))

    # Each PDU: the model steps whose fields (and epoch) it equals, within the window.
    fields = {"pos": (("x", "x"), ("y", "y"), ("lift", "lift"), ("yaw", "yaw")),
              "height": (("height", "lift"),), "phase": (("phase", "phase"),)}
    lags = []
    bad, early, reads = [], 0, 0
    for r in rows:
        t = r["t_usec"]
        # the step that ends with the controller's step first, then older ones, then newer
        window = list(range(t + delta, max(t - 3 * dmax, delta) - 1, -delta)) + list(
            range(t + 2 * delta, t + dmax + 1, delta))
        for pdu, pairs in fields.items():
            epoch = r[pdu + "_epoch"]
            if epoch is None:
                if t >= dmax:
                    bad.append("t=%.3f s: %s not written yet" % (t / 1e6, pdu))
                early += pdu == "pos"
                continue
            reads += 1
            found = None
            for mt in window:
                s = steps.get(mt)
                if s is not None and s["epoch"] == epoch and all(
                        r[a] == s[b] for a, b in pairs):
                    found = mt
                    break
            if found is None:
                bad.append("t=%.3f s: %s (epoch %d, %s) is no model step within [%+d, %+d] ms" % (
                    t / 1e6, pdu, epoch, ", ".join("%s=%r" % (a, r[a]) for a, _ in pairs),
                    -3 * dmax // 1000, dmax // 1000))
            elif pdu == "pos":
                lags.append(t + delta - found)
    lags.sort()
    if lags:
        lag_text = ("the pos read was the model step that ends with the controller's own in %d "
                    "of %d steps, at most %d ms older, at most %d ms newer" % (
                        lags.count(0), len(lags), max(lags[-1], 0) // 1000,
                        max(-lags[0], 0) // 1000))
    else:
        lag_text = "nothing read"
    say("reads", not bad and bool(lags),
        "%d PDUs read (pos, height, phase), each one the owner wrote at a model step within the "
        "window; %d step%s before the first write" % (reads, early, "" if early == 1 else "s"))
    print("            " + lag_text)
    for b in bad[:5]:
        print("            " + b)
    if len(bad) > 5:
        print("            ... %d more" % (len(bad) - 5))
    epochs = sorted({r["pos_epoch"] for r in rows if r["pos_epoch"] is not None})
    print("  epochs    the controller saw the forklift's PDUs at epochs %s" % (
        ", ".join(str(e) for e in epochs)))
    if failures:
        print("FAIL: %s" % ", ".join(failures))
        return 1
    print("PASS: the Python controller's mission ran, and all it read was the forklift's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
