"""python.callback_exception: a Python callback that raises, for each of on_initialize,
on_simulation_step, on_manual_timing_control, on_reset and a data receive callback, with the C
asset py-peer stepping in the same domain (and writing the channel the receive callback is on).

Each time: the asset stops; stderr has hakopy's line naming the asset and the callback, then
Python's traceback with the exception; start() returns False and last_error() names the asset,
the callback and the exception; the domain goes to Error with the reason naming them
(hako-cmd status); the asset is unregistered while its process still lives (hako-cmd ls), so a
reset completes and the C asset leaves its run and exits; the Python process exits.

on_reset runs while the domain is resetting: the reset fails, the domain goes to Error all the
same, and a second reset clears it (py-peer has acknowledged the first reset and left its run,
or it was given the error first and leaves its run at the second).

SystemExit in a callback is the user's way out: no traceback, start() raises it again (the
process exits with its code), and the domain, which was running, goes to Error naming it.
"""
import sys

import hakotest

ROBOT = hakotest.ROBOT


def role_raiser(which, name):
    """An asset whose callback `which` raises ValueError("boom in <which>") (or, for
    "SystemExit", whose on_simulation_step calls sys.exit(3)). After start() returns it prints
    what start() and last_error() said and waits for its stdin to close."""
    import hakopy

    def boom():
        raise ValueError(f"boom in {which}")

    steps = [0]
    recvs = [0]

    def on_initialize(context):
        if which == "on_initialize":
            boom()
        return 0

    def on_simulation_step(context):
        steps[0] += 1
        if steps[0] == 5 and which == "on_simulation_step":
            boom()
        if steps[0] == 5 and which == "SystemExit":
            sys.exit(3)
        return 0

    def on_manual_timing_control(context):
        n = 0
        while hakopy.usleep(hakotest.DELTA_USEC):
            n += 1
            if n == 5:
                boom()
        return 0

    def on_reset(context):
        if which == "on_reset":
            boom()
        return 0

    def on_recv(recv_event_id):
        recvs[0] += 1
        if recvs[0] == 3:
            boom()

    manual = which == "on_manual_timing_control"
    if not hakotest.register(name, on_initialize=on_initialize,
                             on_simulation_step=None if manual else on_simulation_step,
                             on_manual_timing_control=on_manual_timing_control if manual else None,
                             on_reset=on_reset):
        return 1
    if which == "data receive callback":
        hakopy.register_data_recv_event(ROBOT, 1, on_recv)  # py-peer writes channel 1
    print("registered")
    r = hakopy.start()
    print(f"start returned {r!r}")
    print(f"last_error {hakopy.last_error()}")
    sys.stdin.read()
    return 0


class CallbackException(hakotest.HakoTest):
    label = "cbexc"

    def begin(self, which):
        d = self.domain
        d.conductor()
        self.py = d.python("py", __file__, "raiser", which, "pyasset")
        self.c = d.peer("peer", "lockstep", "cpeer", hakotest.PDUDEF, 1, -1)
        d.wait_assets("pyasset", "cpeer")
        d.cmd("start", "--no-wait")

    def check_failed(self, where, what):
        """The asset stopped, said why, failed the domain and left it."""
        d, py = self.domain, self.py
        py.wait_line(r"^last_error ")
        self.assertIn("start returned False\n", py.out())
        self.assertIn(f"last_error asset 'pyasset': {where} raised {what}\n", py.out())
        err = py.err()
        line = f"hakopy: asset 'pyasset': {where} raised; the asset stops\n"
        self.assertIn(line, err)
        tb = err[err.index(line):]
        self.assertRegex(tb, r"^[^\n]*\nTraceback \(most recent call last\):\n")
        self.assertIn(f"\n{what}\n", tb)
        d.wait_state("error")
        self.assertEqual(d.status()[1], f"asset 'pyasset' failed: {where} raised {what}")
        # Still alive, and no longer an asset of the domain: nothing waits for it.
        self.assertIsNone(py.p.poll())
        self.assertNotIn("pyasset", d.assets())

    def finish(self):
        """A reset completes; the C asset leaves its run and exits; then the Python process."""
        d = self.domain
        d.cmd("reset")
        self.assertEqual(self.c.wait_exit(), 0, self.c.show())
        self.assertIn("on_reset\n", self.c.out())
        self.py.close_stdin()
        self.assertEqual(self.py.wait_exit(), 0, self.py.show())
        self.assertEqual(d.state(), "stopped")

    def check_raise(self, which, where=None):
        where = where or which
        self.begin(which)
        self.check_failed(where, f"ValueError: boom in {which}")
        self.finish()

    def test_on_initialize(self):
        self.check_raise("on_initialize")

    def test_on_simulation_step(self):
        self.check_raise("on_simulation_step")
        # Lock-step: py-peer did its step 5 or not (the domain failed in the Python step 5),
        # never step 6.
        self.assertIn(self.c.result()["steps"], (4, 5), self.c.show())

    def test_on_manual_timing_control(self):
        self.check_raise("on_manual_timing_control")

    def test_data_receive_callback(self):
        self.check_raise("data receive callback")

    def test_on_reset(self):
        d = self.domain
        self.begin("on_reset")
        d.wait_state("running")
        d.cmd("stop")
        out = d.cmd("reset", check=False)
        self.assertIn("reset failed: domain '%s' went to error" % d.name, out)
        self.check_failed("on_reset", "ValueError: boom in on_reset")
        # py-peer acknowledged the reset and left its run, or the error reached it first and
        # it waits for the next reset: finish() resets again.
        self.finish()

    def test_system_exit(self):
        d = self.domain
        self.begin("SystemExit")
        py = self.py
        self.assertEqual(py.wait_exit(), 3, py.show())
        self.assertNotIn("Traceback", py.err())
        self.assertNotIn("start returned", py.out())
        d.wait_state("error")
        self.assertEqual(d.status()[1],
                         "asset 'pyasset' failed: on_simulation_step raised SystemExit: 3")
        d.cmd("reset")
        self.assertEqual(self.c.wait_exit(), 0, self.c.show())


if __name__ == "__main__":
    hakotest.main({"raiser": role_raiser})
