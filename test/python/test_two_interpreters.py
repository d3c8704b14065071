"""python.two_interpreters: two Python processes, each an asset of the same domain, in
lock-step for 10,000 steps to a stop time, each writing its test PDU every step and checking the
world time, its own time and the exact PDU it read from the other (hakotest.Lockstep: the
other's write of step n - 1 or n). Both run exactly 10,000 steps with no mismatch."""
import hakotest

STEPS = 10000


class TwoInterpreters(hakotest.HakoTest):
    label = "twopy"

    def test_two_python_assets(self):
        d = self.domain
        d.conductor()
        a = d.python("a", __file__, "lockstep", "pya", 0, 1)
        b = d.python("b", __file__, "lockstep", "pyb", 1, 0)
        d.wait_assets("pya", "pyb")
        self.run_to_stop(STEPS, a, b)
        self.assert_lockstep_clean(STEPS, a, b)


if __name__ == "__main__":
    hakotest.main()
