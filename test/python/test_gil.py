"""python.gil: the calls that block give the GIL up. A thread of the Python asset counts in a
tight loop and prints its count every 5 ms, then sleeps 1 ms. The asset sets Python's switch
interval to 1000 s: the interpreter never takes the GIL from a thread, a thread lets it go only
in a call that releases it (the counting thread in its sleep, the main thread in hakopy's
blocking calls if they release it). So the counting thread runs while the main thread is in a
hakopy call only if that call released the GIL:

- while the main thread is blocked in start(), waiting for START (the domain is not started
  yet), the thread keeps counting and printing (without the release it would print one line at
  most after "calling start");
- in on_manual_timing_control the main thread asks the counting thread to stop the run and
  calls usleep(10 s) (10 s of wall time too: the conductor keeps wall-clock pace). Only the
  counting thread stops the run, and it can do so only once usleep released the GIL: usleep
  must return False (not True after 10 s), with the reason of a stopped run.
"""
import re
import sys
import threading
import time

import hakotest


def say(line):
    """One write per line: print() writes the text and the newline apart, and the other thread
    may write in between."""
    sys.stdout.write(line + "\n")


def role_counter(name):
    import hakopy
    counter = [0]
    done = threading.Event()
    stop_now = threading.Event()

    def count():
        next_tick = time.monotonic()
        while not done.is_set():
            counter[0] += 1
            if stop_now.is_set():
                stop_now.clear()
                ok = hakopy.trigger_event(hakopy.HAKO_TRIGGER_EVENT_ID_STOP)
                say(f"stop triggered {ok}")
            if time.monotonic() >= next_tick:
                say(f"tick {counter[0]}")
                next_tick += 0.005
                time.sleep(0.001)  # the main thread's turn, if it waits for the GIL

    def on_manual_timing_control(context):
        stop_now.set()  # seen by the counting thread only once this thread lets the GIL go
        t0 = time.monotonic()
        ok = hakopy.usleep(10 * 1000 * 1000)
        say(f"usleep returned {ok} after {time.monotonic() - t0:.3f} s: {hakopy.last_error()}")
        return 0

    if not hakotest.register(name, on_manual_timing_control=on_manual_timing_control):
        return 1
    sys.setswitchinterval(1000)
    t = threading.Thread(target=count, daemon=True)
    t.start()
    say("calling start")
    r = hakopy.start()
    done.set()
    t.join()
    say(f"start returned {r!r}")
    return 0


class Gil(hakotest.HakoTest):
    label = "gil"

    def ticks_after(self, py, mark):
        out = py.out()
        return [int(n) for n in re.findall(r"^tick (\d+)$", out[out.index(mark):], re.M)]

    def test_other_threads_run(self):
        d = self.domain
        d.conductor(real_time_factor=1)
        py = d.python("py", __file__, "counter", "pygil")
        d.wait_assets("pygil")
        py.wait_line(r"^calling start$")
        hakotest.wait_until(lambda: len(self.ticks_after(py, "calling start")) >= 4,
                            "the counting thread to go on while start() waits", timeout=10,
                            report=py.show)
        self.assertEqual(d.state(), "stopped")  # start() is still waiting for START
        ticks = self.ticks_after(py, "calling start")
        self.assertEqual(ticks, sorted(ticks))
        self.assertGreater(ticks[-1], ticks[0])

        d.cmd("start", "--no-wait")  # the run may be over before hako-cmd would see it run
        m = py.wait_line(r"^usleep returned (\w+) after ([\d.]+) s: (.*)$")
        print(f"\nusleep(10 s) returned after {m.group(2)} s", file=sys.stderr)
        self.assertEqual(m.group(1), "False", py.show())
        self.assertIn("stop triggered True\n", py.out())
        self.assertEqual(m.group(3), "hako_asset_usleep: the run ended (stop, reset, error or "
                                     "forced stop)")
        d.wait_state("stopped")
        d.cmd("reset")
        self.assertEqual(py.wait_exit(), 0, py.show())
        self.assertIn("start returned False\n", py.out())


if __name__ == "__main__":
    hakotest.main({"counter": role_counter})
