"""What the pyhako tests share: a domain of their own per test (its conductor in this process,
removed even when the test fails), hako-cmd to drive it, and a run of an asset driven from a
thread (start, wait for what the test observes, stop, reset)."""

import os
import subprocess
import sys
import threading
import unittest

import hako

HERE = os.path.dirname(os.path.abspath(__file__))
PDUDEF = os.path.join(HERE, "pdudef.json")

# argv[1] of the tests that drive a domain: the hako-cmd program.
HAKO_CMD = ""


def main() -> None:
    """unittest.main, after taking hako-cmd's path off the arguments."""
    global HAKO_CMD
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        HAKO_CMD = sys.argv.pop(1)
    unittest.main(verbosity=2)


class DomainTest(unittest.TestCase):
    """Each test in a domain named for it and this process, with a conductor of its own."""

    delta_usec = 1000
    max_delay_usec = 20000

    def setUp(self) -> None:
        name = self.id().rsplit(".", 1)[-1].replace("test_", "")[:40]
        self.domain = f"pyh_{name}_{os.getpid()}"
        os.environ["HAKO_DOMAIN"] = self.domain
        # run last to first: leave the domain, stop the conductor, remove what is left
        self.addCleanup(self.remove_domain)
        self.conductor = hako.Conductor(self.delta_usec, self.max_delay_usec).start()
        self.addCleanup(self.conductor.stop)
        self.addCleanup(hako.detach)

    def remove_domain(self) -> None:
        if HAKO_CMD:
            subprocess.run([HAKO_CMD, "-d", self.domain, "clean", "--force"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)

    def cmd(self, *args: str, check: bool = True, stdin: str = "") -> str:
        """hako-cmd on this test's domain; its output. Fails the test if it fails (check)."""
        self.assertTrue(HAKO_CMD, "the hako-cmd path is the first argument")
        p = subprocess.run([HAKO_CMD, "-d", self.domain, *args], input=stdin,
                           capture_output=True, text=True, check=False)
        if check and p.returncode != 0:
            self.fail(f"hako-cmd {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
        return p.stdout

    def run_asset(self, asset: hako.Asset, reached: threading.Event,
                  timeout: float = 30.0) -> None:
        """asset.run() here, driven from a thread: start the simulation, wait for `reached`
        (set by the test's callbacks), then stop and reset it, which ends the run. Whatever
        run() raises is raised here."""
        failures = []

        def drive() -> None:
            try:
                self.cmd("start", "--timeout-ms", "20000", check=False)
                if not reached.wait(timeout):
                    failures.append(f"not reached within {timeout} s")
            finally:
                self.cmd("stop", "--timeout-ms", "20000", check=False)
                self.cmd("reset", "--timeout-ms", "20000", check=False)

        driver = threading.Thread(target=drive, name="driver")
        driver.start()
        try:
            asset.run()
        finally:
            reached.set()  # a run() that raised early: the driver stops waiting
            driver.join()
        self.assertEqual(failures, [])
