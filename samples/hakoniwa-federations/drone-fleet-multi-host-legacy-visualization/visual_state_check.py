#!/usr/bin/env python3
"""Stand-in for the legacy viewer of Hakoniwa's 256-UAV visualization check.

An asset on the server node that reads every chunk of DroneVisualStatePublisher's
drone_visual_state_array_<k> each step, the local ones and those the bridge brings from the
clients, and checks what a viewer needs: every chunk arrives, the chunks together cover every
drone once, each chunk's sequence_id only goes up, and the drones are where the fleet flies
them (above the floor while the mission holds them in the air). It prints a line per simulated
second and a summary; exit 1 when a check fails.
"""
import argparse
import json
import statistics
import sys

import hako

ROBOT = "DroneVisualStatePublisher"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdudef", required=True, help="the tree's pdudef_visual_state.json")
    ap.add_argument("--asset", default="legacy-viewer")
    ap.add_argument("--chunks", type=int, required=True)
    ap.add_argument("--drones", type=int, required=True)
    ap.add_argument("--delta-usec", type=int, default=10000)
    ap.add_argument("--airborne-usec", default="10000000,30000000",
                    help="world times (us) when every drone must be above 1 m")
    args = ap.parse_args()
    airborne = [int(t) for t in args.airborne_usec.split(",") if t]

    asset = hako.Asset(args.asset, args.pdudef, delta_usec=args.delta_usec,
                       model=hako.CONTROLLER)
    chunks = []
    last_seq = [0] * args.chunks
    updates = [0] * args.chunks
    covered = {}
    lag = []          # steps the newest chunk of each client lags the server's own (chunk 0)
    errors = []
    checked = []

    def fail(msg):
        if len(errors) < 20:
            errors.append("world %.3f s: %s" % (asset.world_time / 1e6, msg))

    @asset.on_initialize
    def initialize():
        chunks.clear()
        chunks.extend(asset.pdu(ROBOT, "drone_visual_state_array_%d" % k)
                      for k in range(args.chunks))

    @asset.on_step
    def step():
        now = asset.world_time
        seen = []
        for k, pdu in enumerate(chunks):
            v = pdu.read()
            seq = v["sequence_id"]
            seen.append(seq)
            if seq == 0:
                continue            # nothing arrived yet
            if seq < last_seq[k]:
                fail("chunk %d: sequence_id %d after %d" % (k, seq, last_seq[k]))
            if seq != last_seq[k]:
                updates[k] += 1
            last_seq[k] = seq
            if v["chunk_index"] != k or v["chunk_count"] != args.chunks:
                fail("chunk %d says chunk_index %d of %d" % (k, v["chunk_index"], v["chunk_count"]))
            if v["valid_count"] != len(v["drones"]):
                fail("chunk %d: valid_count %d, %d drones" % (k, v["valid_count"], len(v["drones"])))
            for i in range(v["valid_count"]):
                covered[v["start_index"] + i] = k
        if seen[0] > 0:
            lag.extend(seen[0] - s for s in seen[1:] if s > 0)
        for t in airborne:
            if t not in checked and now >= t:
                checked.append(t)
                low = [(k, d["z"]) for k, pdu in enumerate(chunks)
                       for d in pdu.read()["drones"] if d["z"] < 1.0]
                if low or len(covered) != args.drones:
                    fail("%d drone(s) below 1 m, %d of %d drones seen" %
                         (len(low), len(covered), args.drones))
                else:
                    print("world %.1f s: all %d drones in the air (lowest %.2f m)" %
                          (now / 1e6, args.drones,
                           min(d["z"] for pdu in chunks for d in pdu.read()["drones"])),
                          flush=True)
        if now % 1000000 == 0:
            print("world %.1f s: chunks %s, %d drones seen" %
                  (now / 1e6, " ".join("%d:seq %d" % (k, s) for k, s in enumerate(seen)),
                   len(covered)), flush=True)

    with asset:
        asset.run()

    if any(u == 0 for u in updates):
        fail("chunk(s) %s never arrived" % [k for k, u in enumerate(updates) if u == 0])
    if len(covered) != args.drones:
        fail("%d of %d drones seen" % (len(covered), args.drones))
    summary = {"event": "SUMMARY", "updates_per_chunk": updates, "drones_seen": len(covered),
               "airborne_checks": len(checked),
               "client_lag_steps_p50": statistics.median(lag) if lag else None,
               "client_lag_steps_max": max(lag) if lag else None, "errors": errors}
    print(json.dumps(summary), flush=True)
    for e in errors:
        print("visual_state_check: FAILED: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
