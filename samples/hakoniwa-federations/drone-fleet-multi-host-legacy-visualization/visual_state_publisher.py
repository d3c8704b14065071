#!/usr/bin/env python3
"""Stand-in for Hakoniwa's VisualStatePublisher execution unit (vsp-<node>).

Every step it reads the `pos` PDU (channel 1, geometry_msgs/Twist) of the drones this node
hosts (Drone-<first+1> .. Drone-<first+count>, written by fleet-host) and writes them, as one
chunk of hako_msgs/DroneVisualStateArray, to DroneVisualStatePublisher's
drone_visual_state_array_<chunk>: the PDU the legacy viewer reads, one chunk per host.
Hakoniwa's publisher program is not public; this one keeps the fields and the chunk layout
(sequence_id, chunk_index, chunk_count, start_index, valid_count, drones[]).
"""
import argparse
import json
import sys

import hako

ROBOT = "DroneVisualStatePublisher"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdudef", required=True, help="the tree's pdudef_visual_state.json")
    ap.add_argument("--asset", required=True, help="asset name (the EU's, e.g. vsp-cli-01)")
    ap.add_argument("--chunk", type=int, required=True, help="chunk index = PDU suffix")
    ap.add_argument("--chunks", type=int, required=True, help="chunk count of the fleet")
    ap.add_argument("--first", type=int, required=True, help="drones before this host's")
    ap.add_argument("--count", type=int, required=True, help="drones of this host")
    ap.add_argument("--delta-usec", type=int, default=10000)
    args = ap.parse_args()

    asset = hako.Asset(args.asset, args.pdudef, delta_usec=args.delta_usec,
                       model=hako.CONTROLLER)
    out = None
    drones = []
    sequence = 0

    @asset.on_initialize
    def initialize():
        nonlocal out, drones
        out = asset.pdu(ROBOT, "drone_visual_state_array_%d" % args.chunk)
        drones = [asset.pdu("Drone-%d" % (args.first + i + 1), 1, type="geometry_msgs/Twist")
                  for i in range(args.count)]

    @asset.on_step
    def step():
        nonlocal sequence
        sequence += 1
        states = []
        for d in drones:
            p = d.read()
            states.append({"x": p["linear"]["x"], "y": p["linear"]["y"], "z": p["linear"]["z"],
                           "roll": p["angular"]["x"], "pitch": p["angular"]["y"],
                           "yaw": p["angular"]["z"], "pwm_duty": []})
        out.write({"sequence_id": sequence, "chunk_index": args.chunk,
                   "chunk_count": args.chunks, "start_index": args.first,
                   "valid_count": len(states), "drones": states})

    with asset:
        print(json.dumps({"asset": args.asset, "event": "REGISTERED", "chunk": args.chunk,
                          "drones": [args.first + 1, args.first + args.count]}), flush=True)
        asset.run()
    print(json.dumps({"asset": args.asset, "event": "DONE", "chunks_written": sequence}),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
