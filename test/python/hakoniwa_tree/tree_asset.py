#!/usr/bin/env python3
"""A Python asset of the tree of test_hakoniwa_tree.py, on hakopy alone (Hakoniwa's API).

Shaped like the asset of Hakoniwa's python-time-sync sample: registers with the tree's pdudef
as a controller, runs hakopy.start() once, prints one JSON line per event:

  REGISTERED   {delta_usec}
  INITIALIZED  {sim_time_usec}
  TICK         {tick, sim_time_usec}            at tick 1 and every --log-every ticks
  ERROR        {reason, ...}                     the world time went backwards; or a bad read
  RESET        {sim_time_usec, last_tick, last_sim_time_usec}
  TERMINATED   {result, ticks, last_sim_time_usec, backwards, ...the PDU's counters}

With --write ROBOT/PDU it writes the PDU (std_msgs/UInt64, channel 0 of ROBOT here) every
tick: its data is the tick count. With --read ROBOT/PDU it reads it every tick and keeps the
last value seen, how many distinct values it saw, the tick it saw the first one, the largest
lag (its tick minus the value read, from the first value on) and how many times a value went
backwards (it never may: the bridges forward the latest value of a channel, in order).

The PDU is written in Hakoniwa's binary format by hand (no codec: hakopy moves bytes): the
24-byte meta header (magic 0x12345678, version 1, base at 24, heap and total at 32, epoch and
flags 0) and the uint64 `data`.
"""

import argparse
import json
import struct
import sys

import hakopy

PDU_SIZE = 32
META = struct.Struct("<6I")
MAGIC = 0x12345678


def encode(value):
    return META.pack(MAGIC, 1, 24, PDU_SIZE, PDU_SIZE, 0) + struct.pack("<Q", value)


def decode(buf):
    """The uint64 of a UInt64 PDU; None for a channel never written (zeros)."""
    buf = bytes(buf)
    if buf[:4] == b"\0\0\0\0":
        return None
    magic, version, base = META.unpack_from(buf)[:3]
    if magic != MAGIC or version != 1:
        raise ValueError(f"not a PDU: {buf.hex()}")
    return struct.unpack_from("<Q", buf, base)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--asset-name", required=True)
    ap.add_argument("--config", required=True, help="the tree's pdudef.json")
    ap.add_argument("--delta-usec", type=int, default=10_000)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--write", metavar="ROBOT/PDU")
    ap.add_argument("--read", metavar="ROBOT/PDU")
    args = ap.parse_args()

    st = {"tick": 0, "last_sim_time": -1, "backwards": 0, "written": 0, "write_errors": 0,
          "read_value": None, "distinct": 0, "went_back": 0, "read_errors": 0,
          "first_seen_tick": None, "max_lag": None,
          "final_tick": 0, "final_sim_time": -1}

    def emit(event, **values):
        print(json.dumps({"asset": args.asset_name, "event": event, **values},
                         separators=(",", ":")), flush=True)

    def channel(spec):
        robot, _, name = spec.partition("/")
        # Channel 0 of the robot: the one PDU of pdutypes_sensor.json (`name` is for the log).
        return robot, 0, name

    def on_initialize(_context):
        emit("INITIALIZED", sim_time_usec=int(hakopy.simulation_time()))
        return 0

    def on_reset(_context):
        emit("RESET", sim_time_usec=int(hakopy.simulation_time()), last_tick=st["tick"],
             last_sim_time_usec=st["last_sim_time"])
        st["final_tick"], st["final_sim_time"] = st["tick"], st["last_sim_time"]
        st["tick"], st["last_sim_time"] = 0, -1
        return 0

    def on_simulation_step(_context):
        sim_time = int(hakopy.simulation_time())
        if sim_time < st["last_sim_time"]:
            st["backwards"] += 1
            emit("ERROR", reason="simulation time moved backwards",
                 previous_sim_time_usec=st["last_sim_time"], sim_time_usec=sim_time)
            return -1
        st["tick"] += 1
        st["last_sim_time"] = sim_time
        if args.write:
            robot, ch, _ = channel(args.write)
            if hakopy.pdu_write(robot, ch, encode(st["tick"]), PDU_SIZE):
                st["written"] = st["tick"]
            else:
                st["write_errors"] += 1
        if args.read:
            robot, ch, _ = channel(args.read)
            try:
                v = decode(hakopy.pdu_read(robot, ch, PDU_SIZE))
            except (RuntimeError, ValueError) as e:
                st["read_errors"] += 1
                if st["read_errors"] == 1:
                    emit("ERROR", reason=f"read {args.read}: {e}", tick=st["tick"])
                v = None
            if v is not None and v != st["read_value"]:
                if st["read_value"] is not None and v < st["read_value"]:
                    st["went_back"] += 1
                    emit("ERROR", reason="the value read went backwards",
                         previous=st["read_value"], value=v, tick=st["tick"])
                st["distinct"] += 1
                st["read_value"] = v
                if st["first_seen_tick"] is None:
                    st["first_seen_tick"] = st["tick"]
            if st["read_value"] is not None:
                lag = st["tick"] - st["read_value"]
                if st["max_lag"] is None or lag > st["max_lag"]:
                    st["max_lag"] = lag
        if st["tick"] == 1 or st["tick"] % args.log_every == 0:
            emit("TICK", tick=st["tick"], sim_time_usec=sim_time)
        return 0

    callbacks = {"on_initialize": on_initialize, "on_simulation_step": on_simulation_step,
                 "on_manual_timing_control": None, "on_reset": on_reset}
    if not hakopy.asset_register(args.asset_name, args.config, callbacks, args.delta_usec,
                                 hakopy.HAKO_ASSET_MODEL_CONTROLLER):
        emit("ERROR", reason="asset registration failed", why=hakopy.last_error())
        return 1
    emit("REGISTERED", delta_usec=args.delta_usec)
    result = hakopy.start()
    if st["tick"]:  # start() returned without a reset (the run ended on its own)
        st["final_tick"], st["final_sim_time"] = st["tick"], st["last_sim_time"]
    out = {"result": int(result), "ticks": st["final_tick"],
           "last_sim_time_usec": st["final_sim_time"], "backwards": st["backwards"]}
    if args.write:
        out.update(pdu=args.write, written=st["written"], write_errors=st["write_errors"])
    if args.read:
        out.update(pdu=args.read, last_value=st["read_value"], distinct=st["distinct"],
                   first_seen_tick=st["first_seen_tick"], max_lag=st["max_lag"],
                   went_back=st["went_back"], read_errors=st["read_errors"])
    emit("TERMINATED", **out)
    bad = st["backwards"] or st["write_errors"] or st["went_back"] or st["read_errors"]
    return 1 if bad or result else 0


if __name__ == "__main__":
    sys.exit(main())
