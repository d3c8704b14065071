"""python.killed: a Python asset in lock-step with py-peer is killed with SIGKILL mid-run. The
domain goes to Error naming it ("asset 'pyasset' is dead: ...": the conductor's liveness
check, within about 1 s of wall time; the time seen is printed, only the naming is asserted),
py-peer read nothing wrong up to then, and a reset removes the dead asset so that py-peer
leaves its run and exits."""
import signal
import sys
import time

import hakotest


class Killed(hakotest.HakoTest):
    label = "killed"

    def test_sigkill_mid_run(self):
        d = self.domain
        py, c = self.python_and_peer(__file__, progress_every=100)
        d.cmd("start")
        py.wait_line(r"^step 500$")  # well into the run
        killed_at = time.monotonic()
        py.kill()
        self.assertEqual(py.p.returncode, -signal.SIGKILL)

        def named():
            state, reason, _ = d.status()
            return state == "error" and reason.startswith("asset 'pyasset' is dead") and reason
        reason = hakotest.wait_until(named, "the domain to name the dead asset", timeout=5,
                                     report=d.report)
        print(f"\nthe domain named the dead asset {time.monotonic() - killed_at:.3f} s after "
              f"SIGKILL: {reason}", file=sys.stderr)
        self.assertRegex(reason, r"^asset 'pyasset' is dead: process \d+ died$")
        ls = {l.split()[0]: l.split()[3] for l in d.cmd("ls").splitlines()[1:]}
        self.assertEqual(ls, {"pyasset": "NO", "cpeer": "yes"})  # the ALIVE column
        d.cmd("reset")
        self.assertEqual(c.wait_exit(), 0, c.show())
        r = c.result()
        self.assertGreaterEqual(r["steps"], 500, c.show())
        self.assertEqual(r["mismatches"], 0, c.show())
        self.assertEqual(d.assets(), [])


if __name__ == "__main__":
    hakotest.main()
