"""hako.Asset stepped in a domain: callbacks by decorator and by subclass, the clock, PDUs
written and received in the steps, a callback that raises, registration refused, and the asset
gone from the domain when its block ends. Argument: the hako-cmd program."""

import os
import threading

import hakopy

import hako
from pyhako_kit import PDUDEF, DomainTest, main

STEPS = 5


class Stepping(DomainTest):
    def test_decorators_and_clock(self) -> None:
        calls = []
        times = []
        world = []
        reached = threading.Event()
        with hako.Asset("ctrl", PDUDEF, delta_usec=self.delta_usec,
                        model=hako.CONTROLLER) as a:
            self.assertTrue(a.registered)
            cmd = a.pdu("Robot", "cmd")

            @a.on_initialize
            def init() -> None:
                calls.append("initialize")

            @a.on_step
            def step() -> None:
                times.append(a.time)
                world.append(a.world_time)
                cmd.write({"linear": {"x": float(a.time)}})
                self.assertEqual(a.read("Robot", "cmd")["linear"]["x"], float(a.time))
                if len(times) == STEPS:
                    reached.set()

            @a.on_reset
            def reset() -> None:
                calls.append("reset")

            self.run_asset(a, reached)
            self.assertEqual(a.world_time, 0)  # the reset that ended the run
        self.assertEqual(calls, ["initialize", "reset"])
        self.assertGreaterEqual(len(times), STEPS)
        self.assertEqual(times[:STEPS],
                         [times[0] + i * self.delta_usec for i in range(STEPS)])
        self.assertEqual(world, sorted(world))
        self.assertGreater(world[-1], 0)
        # the block ended: the asset left the domain, its name is free
        self.assertFalse(a.registered)
        self.assertNotIn("ctrl", self.cmd("ls"))
        with hako.Asset("ctrl", PDUDEF, delta_usec=self.delta_usec) as again:
            self.assertTrue(again.registered)

    def test_subclass_manual_timing(self) -> None:
        reached = threading.Event()

        class Plant(hako.Asset):
            loops = 0
            initialized = False

            def initialize(self) -> None:
                self.initialized = True

            def manual_timing_control(self) -> None:
                t0 = self.time
                while self.usleep(3 * self.delta_usec):
                    self.loops += 1
                    self.write("Robot", "pos", {"linear": {"x": float(self.time - t0)}})
                    if self.loops == STEPS:
                        reached.set()

        with Plant("plant", PDUDEF, delta_usec=self.delta_usec) as p:
            self.run_asset(p, reached)
        self.assertTrue(p.initialized)
        self.assertGreaterEqual(p.loops, STEPS)

    def test_manual_timing_set_after_registering(self) -> None:
        # the C API fixes stepping or manual timing at registration: the asset registers again
        reached = threading.Event()
        received = []
        with hako.Asset("late", PDUDEF, delta_usec=self.delta_usec) as a:
            label = a.pdu("Robot", "label")

            @label.on_recv
            def got(p) -> None:
                received.append(p.read()["data"])
                reached.set()

            @a.on_manual_timing_control
            def manual() -> None:
                a.usleep(self.delta_usec)
                label.write({"data": "sent at step 1"})
                while a.usleep(self.delta_usec):
                    pass

            self.assertTrue(a.registered)
            self.run_asset(a, reached)
        self.assertEqual(received[:1], ["sent at step 1"])

    def test_receive_events(self) -> None:
        reached = threading.Event()
        seen = []
        flags = []
        with hako.Asset("recv", PDUDEF, delta_usec=self.delta_usec) as a:
            count = a.pdu("Robot", "count")
            pos = a.pdu("Robot", "pos")
            self.assertFalse(pos.updated())  # starts watching

            @count.on_recv
            def got(p) -> None:
                seen.append(p.read()["data"])

            @a.on_step
            def step() -> None:
                n = len(flags)
                flags.append(pos.updated())
                if n in (1, 3):
                    count.write({"data": n})
                    pos.write({"linear": {"x": float(n)}})
                if n == 6:
                    reached.set()

            self.run_asset(a, reached)
        self.assertEqual(seen[:2], [1, 3])
        # written at steps 1 and 3: seen at the next step, once each
        self.assertEqual(flags[:6], [False, False, True, False, True, False])

    def test_callback_error_raises_from_run(self) -> None:
        reached = threading.Event()
        steps = []
        a = hako.Asset("faulty", PDUDEF, delta_usec=self.delta_usec)

        @a.on_step
        def step() -> None:
            steps.append(1)
            if len(steps) == 3:
                reached.set()
                raise ZeroDivisionError("step three")

        with a:
            with self.assertRaises(hako.HakoError) as cm:
                self.run_asset(a, reached)
            self.assertIsInstance(cm.exception.__cause__, ZeroDivisionError)
            self.assertIn("on_simulation_step raised ZeroDivisionError: step three",
                          str(cm.exception))
            self.assertEqual(str(cm.exception), hakopy.last_error())
            self.assertFalse(a.registered)  # a failed asset leaves the domain
        self.assertEqual(len(steps), 3)

    def test_one_way_of_stepping(self) -> None:
        with self.assertRaisesRegex(ValueError, "an asset steps one way"):
            hako.Asset("two", PDUDEF, delta_usec=1000, on_step=lambda: None,
                       on_manual_timing_control=lambda: None)
        a = hako.Asset("two", PDUDEF, delta_usec=1000, on_step=lambda: None)
        with self.assertRaisesRegex(ValueError, "an asset steps one way"):
            a.on_manual_timing_control(lambda: None)
        with self.assertRaisesRegex(ValueError, "delta_usec must be >= 1"):
            hako.Asset("zero", PDUDEF, delta_usec=0)

    def test_register_refused(self) -> None:
        with hako.Asset("taken", PDUDEF, delta_usec=self.delta_usec):
            with self.assertRaisesRegex(hako.HakoError, "already registered 'taken'"):
                hako.Asset("other", PDUDEF, delta_usec=self.delta_usec).register()
        os.environ["HAKO_DOMAIN"] = self.domain + "_none"  # no conductor there
        with self.assertRaises(hako.HakoError) as cm:
            with hako.Asset("lonely", PDUDEF, delta_usec=self.delta_usec):
                pass
        self.assertIn("no conductor for domain", str(cm.exception))
        self.assertEqual(str(cm.exception), hakopy.last_error())


if __name__ == "__main__":
    main()
