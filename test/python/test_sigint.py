"""python.sigint: Ctrl-C (SIGINT) reaches a Python asset blocked in start(): hakopy looks at
Python's signals every 50 ms while it waits, and start() raises KeyboardInterrupt. Uncaught, it
ends the process as Python ends it (the traceback, through the start() call, then death by
SIGINT).

- waiting for START: the domain stays stopped, and the dead asset is removed from it;
- in a run, in lock-step with py-peer: the domain goes to Error naming the asset (it failed in
  a callback, or it is dead, depending on where the signal found it), and a reset lets py-peer
  leave its run and exit.
"""
import signal

import hakotest


def role_waiter(name):
    import hakopy
    if not hakotest.register(name, on_simulation_step=lambda c: 0):
        return 1
    print("calling start")
    r = hakopy.start()
    print(f"start returned {r!r}")
    return 0


def proc_state(pid):
    """The state letter of /proc/PID/stat (R, S, ...)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


class Sigint(hakotest.HakoTest):
    label = "sigint"

    def check_interrupted(self, py):
        self.assertEqual(py.wait_exit(), -signal.SIGINT, py.show())
        err = py.err()
        self.assertIn("Traceback (most recent call last):", err)
        self.assertIn("hakopy.start()", err)
        self.assertRegex(err, r"(?m)^KeyboardInterrupt$")
        self.assertNotIn("start returned", py.out())
        self.assertNotIn("result ", py.out())

    def test_waiting_for_start(self):
        d = self.domain
        d.conductor()
        py = d.python("py", __file__, "waiter", "pyasset")
        d.wait_assets("pyasset")
        py.wait_line(r"^calling start$")
        # Asleep in start() (after its last line nothing else blocks).
        hakotest.wait_until(lambda: proc_state(py.pid) == "S", "the asset to block in start()",
                            report=py.show)
        py.p.send_signal(signal.SIGINT)
        self.check_interrupted(py)
        hakotest.wait_until(lambda: d.assets() == [], "the dead asset to be removed",
                            report=d.report)
        self.assertEqual(d.state(), "stopped")

    def test_in_a_run(self):
        d = self.domain
        py, c = self.python_and_peer(__file__, progress_every=100)
        d.cmd("start")
        py.wait_line(r"^step 300$")
        py.p.send_signal(signal.SIGINT)
        self.check_interrupted(py)
        d.wait_state("error")
        self.assertRegex(d.status()[1], r"^asset 'pyasset' (is dead: process \d+ died|"
                                        r"failed: on_simulation_step raised KeyboardInterrupt|"
                                        r"failed: start\(\) interrupted by KeyboardInterrupt)$")
        d.cmd("reset")
        self.assertEqual(c.wait_exit(), 0, c.show())
        self.assertEqual(c.result()["mismatches"], 0, c.show())


if __name__ == "__main__":
    hakotest.main({"waiter": role_waiter})
