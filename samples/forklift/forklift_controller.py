"""forklift_controller.py: the forklift demo's controller written in Python with hakopy.

    python3 forklift_controller.py [--pdudef FILE] [--forward M] [--backward M] [--speed V]
                                   [--lift M] [--loops N] [--every-usec T] [--out DIR]

The asset "forklift-controller", as forklift-controller (the C one) is, through Hakoniwa's
Python API (hakopy, PYTHONPATH=build/python). Before the simulation starts it writes the
mission PDU (std_msgs/Float64MultiArray: forward_m, backward_m, speed, lift_height, loops) and
prints "mission sent"; hako-launch waits for that line. Then, every 1 ms step, it reads the
forklift's pos, height and phase PDUs as they are in the channels (the RD epoch byte of each
PDU's meta header included; no RD observer: it sees the old owner's last PDU during a hand-off),
prints a status line every simulated second and, at the end, writes every read to
<out>/forklift-python.csv for forklift_python_check.py.
"""

import argparse
import json
import os
import struct
import sys

import hakopy

ASSET = "forklift-controller"
ROBOT = "forklift"
DELTA_USEC = 1000
PHASES = ("forward", "lift-up", "backward", "lift-down", "done")

# The binary PDU: a 24-byte meta header (magic, version, base offset, heap offset, total size,
# epoch byte, flags, reserved), the base, the heap.
META = struct.Struct("<IIIIIBBH")
MAGIC = 0x12345678
BASE = 24
EPOCH = 20


def pdu_channels(pdudef):
    """{pdu name: (channel id, size)} of robot "forklift" in a pdudef of the compact form."""
    with open(pdudef) as f:
        d = json.load(f)
    folder = os.path.dirname(pdudef)
    paths = {p["id"]: p["path"] for p in d["paths"]}
    for robot in d["robots"]:
        if robot["name"] == ROBOT:
            with open(os.path.join(folder, paths[robot["pdutypes_id"]])) as f:
                return {p["name"]: (p["channel_id"], p["pdu_size"]) for p in json.load(f)}
    sys.exit("forklift_controller.py: %s has no robot %s" % (pdudef, ROBOT))


def mission_pdu(values):
    """std_msgs/Float64MultiArray with data = values and an empty layout."""
    # base: layout.dim {length, offset}, layout.data_offset, data {length, offset}; padded to 8
    base = struct.pack("<iiIii4x", 0, 0, 0, len(values), 0)
    heap = struct.pack("<%dd" % len(values), *values)
    heap_off = BASE + len(base)
    meta = META.pack(MAGIC, 1, BASE, heap_off, heap_off + len(heap), 0, 0, 0)
    return meta + base + heap


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="The forklift demo's controller, in Python.")
    ap.add_argument("--pdudef", default=os.path.join(here, "forklift_pdudef.json"))
    ap.add_argument("--forward", type=float, default=1.8, help="forward leg, m (default 1.8)")
    ap.add_argument("--backward", type=float, default=1.8, help="way back, m (default 1.8)")
    ap.add_argument("--speed", type=float, default=0.6, help="cruise speed, m/s (default 0.6)")
    ap.add_argument("--lift", type=float, default=0.3, help="fork height, m (default 0.3)")
    ap.add_argument("--loops", type=int, default=0, help="loops, 0 = forever (default)")
    ap.add_argument("--every-usec", type=int, default=1000000,
                    help="status line every T us of simulated time, 0 = none")
    ap.add_argument("--out", default=os.environ.get("HAKO_LAUNCH_LOG_DIR", "."),
                    help="folder of forklift-python.csv (default $HAKO_LAUNCH_LOG_DIR)")
    args = ap.parse_args()

    ch = pdu_channels(args.pdudef)
    mission_ch, mission_size = ch["mission"]
    pos_ch, pos_size = ch["pos"]
    height_ch, height_size = ch["height"]
    phase_ch, phase_size = ch["phase"]
    mission = (args.forward, args.backward, args.speed, args.lift, float(args.loops))
    pdu = mission_pdu(mission)
    if len(pdu) > mission_size:
        sys.exit("forklift_controller.py: the mission does not fit in %d bytes" % mission_size)

    rows = []
    read = hakopy.pdu_read
    now_usec = hakopy.asset_current_time
    every = args.every_usec

    def on_simulation_step(context):
        t = now_usec()  # this step covers [t, t + 1 ms]
        pos = read(ROBOT, pos_ch, pos_size)
        height = read(ROBOT, height_ch, height_size)
        phase = read(ROBOT, phase_ch, phase_size)
        row = [t]
        if struct.unpack_from("<I", pos)[0] == MAGIC:
            x, y, lift = struct.unpack_from("<3d", pos, BASE)
            yaw = struct.unpack_from("<d", pos, BASE + 40)[0]
            row += [pos[EPOCH], x, y, lift, yaw]
        else:
            row += [None] * 5  # the owner has not written it yet
        if struct.unpack_from("<I", height)[0] == MAGIC:
            row += [height[EPOCH], struct.unpack_from("<d", height, BASE)[0]]
        else:
            row += [None] * 2
        if struct.unpack_from("<I", phase)[0] == MAGIC:
            row += [phase[EPOCH], struct.unpack_from("<i", phase, BASE)[0]]
        else:
            row += [None] * 2
        rows.append(row)
        if every > 0 and (t + DELTA_USEC) % every == 0:
            if row[1] is None:
                print("t=%6.3f s  no PDU from the forklift yet" % ((t + DELTA_USEC) / 1e6))
            else:
                p = row[9]
                print("t=%6.3f s  x=%6.3f m  lift %.2f m  %-9s  epoch %d" % (
                    (t + DELTA_USEC) / 1e6, row[2], row[4],
                    PHASES[p] if p is not None and 0 <= p < len(PHASES) else "?", row[1]))
        return 0

    callbacks = {
        "on_initialize": None,
        "on_simulation_step": on_simulation_step,
        "on_manual_timing_control": None,
        "on_reset": None,
    }
    if not hakopy.asset_register(ASSET, args.pdudef, callbacks, DELTA_USEC,
                                 hakopy.HAKO_ASSET_MODEL_CONTROLLER):
        sys.exit("forklift_controller.py: cannot register: " + hakopy.last_error())
    if not hakopy.pdu_write(ROBOT, mission_ch, pdu, len(pdu)):
        sys.exit("forklift_controller.py: cannot write the mission: " + hakopy.last_error())
    print("mission sent: forward %.2f m, lift %.2f m, back %.2f m, lift down, %s (%.2f m/s)" % (
        args.forward, args.lift, args.backward,
        "repeat" if args.loops == 0 else "%d times" % args.loops, args.speed), flush=True)

    hakopy.start()  # one run: returns after the stop and the reset

    path = os.path.join(args.out, "forklift-python.csv")
    with open(path, "w") as f:
        f.write("# mission forward=%r backward=%r speed=%r lift=%r loops=%d\n" % (
            args.forward, args.backward, args.speed, args.lift, args.loops))
        f.write("t_usec,pos_epoch,x,y,lift,yaw,height_epoch,height,phase_epoch,phase\n")
        for r in rows:
            f.write(",".join("" if v is None else repr(v) for v in r) + "\n")
    unwritten = sum(1 for r in rows if r[1] is None)
    print("done: %d steps, %d before the forklift's first PDU; reads in %s" % (
        len(rows), unwritten, path))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
