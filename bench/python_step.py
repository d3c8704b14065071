"""The Python side of bench/python_step (the C driver runs it; not meant to be run by hand).

    python_step.py probe
    python_step.py calls BATCHES CALLS_PER_BATCH
    python_step.py lockstep PDUDEF STEPS IN OUT

HAKO_DOMAIN names the driver's domain, which holds robot "bench" with channels 0 and 1 of 64
bytes. Results go to stdout, one line each, for the driver to read:

    calls:    "sample <variant> <ns of the batch>" per batch, then "done"
    lockstep: "ready" once registered, then after the run "result steps=<n> bad=<reads out
              of [k-1, k]> user=<s> sys=<s> first=<ns> last=<ns>" (the clock at its first
              and last step; reads channel IN, writes OUT)
"""

import os
import struct
import sys
import time

ROBOT = "bench"
PDU_BYTES = 64


def fail(msg):
    print("python_step.py: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


def probe():
    import hakopy  # noqa: F401  (the import is the probe)

    print("ok", flush=True)


def calls(batches, n):
    import hakopy

    if not hakopy.init_for_external():
        fail("init_for_external: " + hakopy.last_error())
    buf = bytearray(PDU_BYTES)
    src = bytes(range(PDU_BYTES))
    if not hakopy.pdu_write(ROBOT, 0, buf, PDU_BYTES):
        fail("pdu_write: " + hakopy.last_error())

    def empty(robot, channel, data, length):
        pass

    # Each callable bound to a local name once, so every variant's loop costs the same and the
    # floors compare like with like.
    write = hakopy.pdu_write
    read = hakopy.pdu_read
    clock = time.perf_counter_ns
    r = range(n)

    def b_write():
        t0 = clock()
        for _ in r:
            write(ROBOT, 0, buf, PDU_BYTES)
        return clock() - t0

    def b_read():
        t0 = clock()
        for _ in r:
            read(ROBOT, 0, PDU_BYTES)
        return clock() - t0

    def b_empty():
        t0 = clock()
        for _ in r:
            empty(ROBOT, 0, buf, PDU_BYTES)
        return clock() - t0

    def b_copy():
        t0 = clock()
        for _ in r:
            bytearray(src)
        return clock() - t0

    variants = (
        ("py-pdu-write", b_write),
        ("py-pdu-read", b_read),
        ("py-empty-call", b_empty),
        ("py-bytearray-copy", b_copy),
    )
    for _, f in variants:  # warm-up, discarded
        f()
    out = []
    for _ in range(batches):
        for name, f in variants:
            out.append("sample %s %d" % (name, f()))
    print("\n".join(out), flush=True)
    print("done", flush=True)


def lockstep(pdudef, steps, ch_in, ch_out):
    import hakopy

    out = bytearray(PDU_BYTES)
    count = 0
    bad = 0
    first = last = 0
    read = hakopy.pdu_read
    write = hakopy.pdu_write
    unpack = struct.unpack_from
    pack = struct.pack_into
    clock = time.perf_counter_ns  # CLOCK_MONOTONIC, as the driver's

    # The same step as the C assets': read a PDU, check that it holds step number k-1 or k (of
    # the other asset, lock-step with delta = Dmax; or this one's own of the step before),
    # write this asset's step number. The clock only at the first and the last step.
    def on_step(context):
        nonlocal count, bad, first, last
        count += 1
        if count == 1:
            first = clock()
        elif count == steps:
            last = clock()
        v = unpack("<Q", read(ROBOT, ch_in, PDU_BYTES))[0]
        if v != count and v != count - 1:
            bad += 1
        pack("<Q", out, 0, count)
        write(ROBOT, ch_out, out, PDU_BYTES)
        return 0

    def on_other(context):
        return 0

    callbacks = {
        "on_initialize": on_other,
        "on_simulation_step": on_step,
        "on_manual_timing_control": None,
        "on_reset": on_other,
    }
    if not hakopy.asset_register("py", pdudef, callbacks, 1000, hakopy.HAKO_ASSET_MODEL_CONTROLLER):
        fail("asset_register: " + hakopy.last_error())
    print("ready", flush=True)
    t0 = os.times()
    hakopy.start()  # returns after the stop time and the driver's reset
    t1 = os.times()
    if count != steps:
        fail("ran %d steps, not %d (%s)" % (count, steps, hakopy.last_error()))
    print(
        "result steps=%d bad=%d user=%.3f sys=%.3f first=%d last=%d"
        % (count, bad, t1.user - t0.user, t1.system - t0.system, first, last),
        flush=True,
    )


def main(argv):
    if len(argv) == 2 and argv[1] == "probe":
        probe()
    elif len(argv) == 4 and argv[1] == "calls":
        calls(int(argv[2]), int(argv[3]))
    elif len(argv) == 6 and argv[1] == "lockstep":
        lockstep(argv[2], int(argv[3]), int(argv[4]), int(argv[5]))
    else:
        fail("usage: python_step.py probe | calls BATCHES CALLS | lockstep PDUDEF STEPS IN OUT")


if __name__ == "__main__":
    main(sys.argv)
