"""python.lockstep: a Python asset and the C asset py-peer in lock-step (world step, asset steps
and max delay 1 ms) for 10,000 steps, to a stop time. Each writes a 64-byte PDU every step and
checks, every step, the world time, its own time and the exact PDU it read from the other: the
other's write of step n - 1 or n, never older than the last (hakotest.Lockstep; py_peer.c says
why). Both must run exactly 10,000 steps with no mismatch."""
import hakotest

STEPS = 10000


class Lockstep(hakotest.HakoTest):
    label = "lockstep"

    def test_python_and_c_10000_steps(self):
        py, c = self.python_and_peer(__file__)
        self.run_to_stop(STEPS, py, c)
        self.assert_lockstep_clean(STEPS, py, c)
        # A completed start -> stop -> reset cycle: start() returns False, as Hakoniwa's does
        # (hako_asset_start_no_wait answers EINTR after the reset).
        self.assertEqual(py.result()["start"], "False", py.show())


if __name__ == "__main__":
    hakotest.main()
