"""python.api: hakopy's names and how each call answers wrong use.

- the module has exactly Hakoniwa's 38 functions, last_error and 30 constants, each constant
  with the value of the C headers (written here as literals);
- wrong argument types raise TypeError, bad sizes ValueError, a bad service handle dict
  KeyError / TypeError / OverflowError: before any C call, so in any state;
- in this process (one asset, as the C API has): calls before a conductor and before register,
  then with an in-process conductor (conductor_start) and a registered asset, answer False /
  None / -1 (or RuntimeError where Hakoniwa's binding raises) with hakopy.last_error() naming
  what was wrong; PDUs written as bytes, bytearray and memoryview read back exactly;
- the in-process conductor runs a whole start -> stop -> reset cycle driven by trigger_event,
  with the callbacks of the first register even after a second register was refused.
"""
import os
import threading
import unittest

import hakopy

import hakotest

FUNCTIONS = {
    "asset_register", "init_for_external", "pdu_create", "start", "simulation_time",
    "asset_current_time", "min_asset_time", "usleep", "pdu_read", "pdu_write",
    "register_data_recv_event", "check_data_recv_event", "set_data_recv_event_pending",
    "set_data_recv_event_resume", "conductor_start", "conductor_stop", "trigger_event",
    "service_initialize", "asset_service_create", "asset_service_server_poll",
    "asset_service_server_get_current_client_id", "asset_service_server_get_current_channel_id",
    "asset_service_server_status", "asset_service_server_get_request",
    "asset_service_server_get_response_buffer", "asset_service_server_put_response",
    "asset_service_server_is_canceled", "asset_service_server_set_progress",
    "asset_service_client_create", "asset_service_client_poll",
    "asset_service_client_get_channel_id", "asset_service_client_get_request_buffer",
    "asset_service_client_call_request", "asset_service_client_get_response",
    "asset_service_client_cancel_request", "asset_service_client_get_progress",
    "asset_service_client_status", "asset_service_get_channel_id",
}

# hako_asset.h and hako_asset_service.h, under the names of Hakoniwa's hakopy.
CONSTANTS = {
    "HAKO_ASSET_MODEL_PLANT": 0,
    "HAKO_ASSET_MODEL_CONTROLLER": 1,
    "HAKO_SERVICE_SERVER_API_EVENT_NONE": 0,
    "HAKO_SERVICE_SERVER_API_EVENT_REQUEST_IN": 1,
    "HAKO_SERVICE_SERVER_API_EVENT_CANCEL": 2,
    "HAKO_SERVICE_SERVER_API_STATUS_IDLE": 0,
    "HAKO_SERVICE_SERVER_API_STATUS_DOING": 1,
    "HAKO_SERVICE_SERVER_API_STATUS_CANCELING": 2,
    "HAKO_SERVICE_CLIENT_API_EVENT_NONE": 0,
    "HAKO_SERVICE_CLIENT_API_EVENT_RESPONSE_IN": 1,
    "HAKO_SERVICE_CLIENT_API_EVENT_REQUEST_TIMEOUT": 2,
    "HAKO_SERVICE_CLIENT_API_EVENT_REQUEST_CANCEL_DONE": 3,
    "HAKO_SERVICE_CLIENT_API_STATE_IDLE": 0,
    "HAKO_SERVICE_CLIENT_API_STATE_DOING": 1,
    "HAKO_SERVICE_CLIENT_API_STATE_CANCELING": 2,
    "HAKO_SERVICE_API_RESULT_CODE_OK": 0,
    "HAKO_SERVICE_API_RESULT_CODE_ERROR": 1,
    "HAKO_SERVICE_API_RESULT_CODE_CANCELED": 2,
    "HAKO_SERVICE_API_RESULT_CODE_INVALID": 3,
    "HAKO_SERVICE_API_RESULT_CODE_BUSY": 4,
    "HAKO_SERVICE_API_STATUS_NONE": 0,
    "HAKO_SERVICE_API_STATUS_DOING": 1,
    "HAKO_SERVICE_API_STATUS_CANCELING": 2,
    "HAKO_SERVICE_API_STATUS_DONE": 3,
    "HAKO_SERVICE_API_STATUS_ERROR": 4,
    "HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST": 0,
    "HAKO_SERVICE_CLIENT_API_OPCODE_CANCEL": 1,
    "HAKO_TRIGGER_EVENT_ID_START": 0,
    "HAKO_TRIGGER_EVENT_ID_STOP": 1,
    "HAKO_TRIGGER_EVENT_ID_RESET": 2,
}

ROBOT = hakotest.ROBOT
NONE_CALLBACKS = {"on_initialize": None, "on_simulation_step": None,
                  "on_manual_timing_control": None, "on_reset": None}


class Names(unittest.TestCase):
    def test_functions_and_constants(self):
        self.assertEqual(len(FUNCTIONS), 38)
        self.assertEqual(len(CONSTANTS), 30)
        public = {n for n in dir(hakopy) if not n.startswith("_")}
        self.assertEqual(public, FUNCTIONS | set(CONSTANTS) | {"last_error"})
        for name in FUNCTIONS | {"last_error"}:
            self.assertTrue(callable(getattr(hakopy, name)), name)
        for name, value in CONSTANTS.items():
            self.assertIs(type(getattr(hakopy, name)), int, name)
            self.assertEqual(getattr(hakopy, name), value, name)


class ArgumentErrors(unittest.TestCase):
    """Refused before the C API is called: the same in any state of the process."""

    def test_types(self):
        cases = [
            (hakopy.asset_register, (1, "p", {}, 1000, 0)),
            (hakopy.asset_register, ("a", "p", [], 1000, 0)),
            (hakopy.asset_register, ("a", "p", {"on_initialize": 5}, 1000, 0)),
            (hakopy.asset_register, ("a", "p", {"on_reset": "no"}, 1000, 0)),
            (hakopy.asset_register, ("a", "p", {}, "1000", 0)),
            (hakopy.asset_register, ("a", "p", {})),
            (hakopy.start, (1,)),
            (hakopy.usleep, ("1000",)),
            (hakopy.pdu_create, (ROBOT, "0", 8)),
            (hakopy.pdu_read, (ROBOT, "0", 8)),
            (hakopy.pdu_read, (None, 0, 8)),
            (hakopy.pdu_write, (ROBOT, 0, "text", 4)),
            (hakopy.pdu_write, (ROBOT, 0, 1234, 4)),
            (hakopy.register_data_recv_event, (ROBOT, 0, 5)),
            (hakopy.check_data_recv_event, (ROBOT,)),
            (hakopy.set_data_recv_event_pending, ("0",)),
            (hakopy.set_data_recv_event_resume, (None,)),
            (hakopy.conductor_start, ("1000", 1000)),
            (hakopy.trigger_event, ("start",)),
            (hakopy.service_initialize, (None,)),
            (hakopy.asset_service_create, (5, "Service/Add")),
            (hakopy.asset_service_create, (None, None)),
            (hakopy.asset_service_server_poll, ("0",)),
            (hakopy.asset_service_server_put_response, (0, "text")),
            (hakopy.asset_service_server_get_response_buffer, (0, 3)),
            (hakopy.asset_service_client_create, (b"a", "Service/Add", "c")),
            (hakopy.asset_service_client_poll, (5,)),
            (hakopy.asset_service_client_poll, ([0, 0],)),
            (hakopy.asset_service_client_call_request,
             ({"service_id": 0, "client_id": 0}, "text", 10)),
            (hakopy.asset_service_get_channel_id, ("0", 0)),
        ]
        for f, args in cases:
            with self.subTest(f=f.__name__, args=args):
                self.assertRaises(TypeError, f, *args)

    def test_sizes(self):
        self.assertRaises(ValueError, hakopy.pdu_read, ROBOT, 0, 0)
        self.assertRaises(ValueError, hakopy.pdu_read, ROBOT, 0, -8)
        with self.assertRaisesRegex(ValueError, "length 9 is not within the data's 8 bytes"):
            hakopy.pdu_write(ROBOT, 0, bytes(8), 9)
        self.assertRaises(ValueError, hakopy.pdu_write, ROBOT, 0, bytearray(8), -1)
        self.assertRaises(ValueError, hakopy.pdu_write, ROBOT, 0, memoryview(bytes(4)), 5)
        with self.assertRaisesRegex(ValueError, "Invalid packet data"):
            hakopy.asset_service_client_call_request({"service_id": 0, "client_id": 0}, b"", 10)

    def test_handle_dict(self):
        poll = hakopy.asset_service_client_poll
        with self.assertRaisesRegex(KeyError, "service_id"):
            poll({})
        with self.assertRaisesRegex(KeyError, "client_id"):
            poll({"service_id": 0})
        with self.assertRaisesRegex(TypeError, "handle\\['service_id'\\] must be an int"):
            poll({"service_id": "0", "client_id": 0})
        with self.assertRaisesRegex(TypeError, "handle\\['client_id'\\] must be an int"):
            poll({"service_id": 0, "client_id": 1.0})
        with self.assertRaises(OverflowError):
            poll({"service_id": 1 << 40, "client_id": 0})
        for f in (hakopy.asset_service_client_status, hakopy.asset_service_client_get_progress,
                  hakopy.asset_service_client_cancel_request,
                  hakopy.asset_service_client_get_channel_id):
            with self.subTest(f=f.__name__):
                self.assertRaises(KeyError, f, {"client_id": 0})


class InProcess(hakotest.HakoTest):
    """One asset per process: the whole story in one test, in order."""

    label = "api"

    def expect_false(self, result, *words, falsy=False):
        """result is False (None / -1 when falsy) and last_error() names every word."""
        if falsy:
            self.assertIn(result, (None, -1))
        else:
            self.assertIs(result, False)
        msg = hakopy.last_error()
        self.assertTrue(msg, "last_error() is empty")
        for w in words:
            self.assertIn(w, msg)
        return msg

    def test_story(self):
        name = self.domain.name
        os.environ["HAKO_DOMAIN"] = name
        self.addCleanup(os.environ.pop, "HAKO_DOMAIN", None)
        self.no_conductor(name)
        self.not_registered()
        self.assertIs(hakopy.conductor_start(1000, 1000), True, hakopy.last_error())
        self.addCleanup(hakopy.conductor_stop)
        self.expect_false(hakopy.conductor_start(1000, 1000), "already")
        self.registered()
        self.services()
        self.lifecycle()

    def no_conductor(self, name):
        self.expect_false(hakopy.asset_register("pyapi", hakotest.PDUDEF, NONE_CALLBACKS, 1000, 0),
                          f"no conductor for domain '{name}'")
        self.expect_false(hakopy.init_for_external(), f"no conductor for domain '{name}'")

    def not_registered(self):
        self.expect_false(hakopy.pdu_create(ROBOT, 0, 64), "pdu_create", "register first")
        self.expect_false(hakopy.pdu_create(ROBOT, 0, 0), "size 0 must be > 0")
        self.expect_false(hakopy.pdu_write(ROBOT, 0, bytes(8), 8), "pdu_write", ROBOT)
        with self.assertRaisesRegex(RuntimeError, f"hako_asset_pdu_read\\({ROBOT}, 0\\)"):
            hakopy.pdu_read(ROBOT, 0, 8)
        with self.assertRaisesRegex(RuntimeError, "register_data_recv_event"):
            hakopy.register_data_recv_event(ROBOT, 0, None)
        self.expect_false(hakopy.start(), "no asset registered")
        self.expect_false(hakopy.trigger_event(hakopy.HAKO_TRIGGER_EVENT_ID_START),
                          "register first")
        self.expect_false(hakopy.set_data_recv_event_pending(0), "register or attach first")
        self.expect_false(hakopy.set_data_recv_event_resume(0), "register or attach first")
        self.expect_false(hakopy.service_initialize(hakotest.SERVICE_JSON), "register")
        self.expect_false(hakopy.asset_service_create(None, "Service/Add"),
                          "hako_asset_service_initialize first", falsy=True)
        self.expect_false(hakopy.asset_service_client_create(None, "Service/Add", "c"),
                          "hako_asset_service_initialize first", falsy=True)
        self.expect_false(hakopy.asset_service_server_poll(0), "initialize first", falsy=True)
        self.expect_false(hakopy.asset_service_get_channel_id(0, 0), "initialize first",
                          falsy=True)
        with self.assertRaisesRegex(RuntimeError, "asset_service_server_status"):
            hakopy.asset_service_server_status(0)
        self.expect_false(hakopy.asset_service_client_poll({"service_id": 0, "client_id": 0}),
                          "initialize first", falsy=True)
        # As Hakoniwa's: without an asset, usleep is a no-op and the clocks read 0.
        self.assertIs(hakopy.usleep(1000), True)
        self.assertEqual(hakopy.simulation_time(), 0)
        self.assertEqual(hakopy.asset_current_time(), 0)
        self.assertEqual(hakopy.min_asset_time(), 0)

    def registered(self):
        self.steps = []
        self.inits = []
        self.resets = []

        def on_step(context):
            self.steps.append(hakopy.simulation_time())
            if len(self.steps) == 3:
                hakopy.trigger_event(hakopy.HAKO_TRIGGER_EVENT_ID_STOP)
            return 0

        cbs = {"on_initialize": lambda c: self.inits.append(c),
               "on_simulation_step": on_step, "on_manual_timing_control": None,
               "on_reset": lambda c: self.resets.append(c)}
        self.assertIs(hakopy.asset_register("pyapi", hakotest.PDUDEF, cbs, 1000,
                                            hakopy.HAKO_ASSET_MODEL_PLANT), True,
                      hakopy.last_error())
        # Refused: and the asset keeps the callbacks it registered with (lifecycle).
        other = {"on_initialize": None, "on_simulation_step": lambda c: 1 / 0,
                 "on_manual_timing_control": None, "on_reset": None}
        self.expect_false(hakopy.asset_register("pyapi2", hakotest.PDUDEF, other, 1000, 0),
                          "already registered 'pyapi'")
        self.expect_false(hakopy.init_for_external(), "already attached")

        # PDUs: the pdudef's two 64-byte channels.
        self.assertEqual(hakopy.pdu_read(ROBOT, 0, 64), bytearray(64))
        with self.assertRaisesRegex(RuntimeError, "NoSuchRobot"):
            hakopy.pdu_read("NoSuchRobot", 0, 64)
        with self.assertRaisesRegex(RuntimeError, f"{ROBOT}, 99"):
            hakopy.pdu_read(ROBOT, 99, 64)
        with self.assertRaisesRegex(RuntimeError, "65 bytes > channel size 64"):
            hakopy.pdu_read(ROBOT, 0, 65)
        self.expect_false(hakopy.pdu_write("NoSuchRobot", 0, bytes(8), 8), "NoSuchRobot")
        self.expect_false(hakopy.pdu_write(ROBOT, 99, bytes(8), 8), f"{ROBOT}, 99")
        self.expect_false(hakopy.pdu_write(ROBOT, 0, bytes(65), 65), "larger than the channel")
        for kind, data in (("bytes", bytes(range(64))),
                           ("bytearray", bytearray(range(100, 164))),
                           ("memoryview", memoryview(bytes(range(200, 256)) + bytes(8)))):
            with self.subTest(kind=kind):
                self.assertIs(hakopy.pdu_write(ROBOT, 0, data, 64), True, hakopy.last_error())
                self.assertEqual(hakopy.pdu_read(ROBOT, 0, 64), bytes(data))
                self.assertEqual(hakopy.pdu_read(ROBOT, 0, 10), bytes(data)[:10])
        # A write shorter than the channel: the rest reads as zeros.
        self.assertIs(hakopy.pdu_write(ROBOT, 0, b"\xff" * 64, 5), True)
        self.assertEqual(hakopy.pdu_read(ROBOT, 0, 64), b"\xff" * 5 + bytes(59))
        self.assertIs(hakopy.pdu_create(ROBOT, 7, 16), True, hakopy.last_error())
        self.assertIs(hakopy.pdu_create(ROBOT, 7, 16), True)  # the same again: found
        self.expect_false(hakopy.pdu_create(ROBOT, 7, 32), f"pdu_create({ROBOT}, 7, 32)")

        # Receive events, flag mode.
        with self.assertRaisesRegex(RuntimeError, "NoSuchRobot"):
            hakopy.register_data_recv_event("NoSuchRobot", 0, None)
        rid = hakopy.register_data_recv_event(ROBOT, 1, None)
        self.assertIsInstance(rid, int)
        self.assertGreaterEqual(rid, 0)
        self.assertIs(hakopy.check_data_recv_event(ROBOT, 1), False)
        self.assertIs(hakopy.pdu_write(ROBOT, 1, bytes(64), 64), True)
        self.assertIs(hakopy.check_data_recv_event(ROBOT, 1), True)
        self.assertIs(hakopy.check_data_recv_event(ROBOT, 1), False)  # consumed
        self.assertIs(hakopy.set_data_recv_event_pending(rid), True)
        self.assertIs(hakopy.pdu_write(ROBOT, 1, bytes(64), 64), True)
        self.assertIs(hakopy.check_data_recv_event(ROBOT, 1), False)  # held
        self.assertIs(hakopy.set_data_recv_event_resume(rid), True)
        self.assertIs(hakopy.check_data_recv_event(ROBOT, 1), True)  # kept, shown once
        self.expect_false(hakopy.set_data_recv_event_pending(rid + 100), str(rid + 100))
        self.expect_false(hakopy.set_data_recv_event_resume(-1), "-1")
        self.expect_false(hakopy.trigger_event(99), "unknown event 99")

    def services(self):
        self.assertIs(hakopy.service_initialize(hakotest.SERVICE_JSON), True,
                      hakopy.last_error())
        self.expect_false(hakopy.service_initialize("/no/such/service.json"),
                          "/no/such/service.json")
        self.expect_false(hakopy.asset_service_create("pyapi", "No/Such"), "No/Such",
                          falsy=True)
        self.expect_false(hakopy.asset_service_client_create("pyapi", "No/Such", "c"),
                          "No/Such", falsy=True)
        sid = hakopy.asset_service_create("pyapi", "Service/Add")
        self.assertIsInstance(sid, int, hakopy.last_error())
        self.assertEqual(hakopy.asset_service_get_channel_id(sid, 0), (0, 1))
        self.assertEqual(hakopy.asset_service_get_channel_id(sid, 1), (2, 3))
        self.expect_false(hakopy.asset_service_get_channel_id(sid, 2), "0..1, not 2",
                          falsy=True)
        self.expect_false(hakopy.asset_service_get_channel_id(sid + 9, 0),
                          f"no service with id {sid + 9}", falsy=True)
        self.assertEqual(hakopy.asset_service_server_poll(sid),
                         hakopy.HAKO_SERVICE_SERVER_API_EVENT_NONE)
        self.assertEqual(hakopy.asset_service_server_status(sid),
                         hakopy.HAKO_SERVICE_SERVER_API_STATUS_IDLE)
        self.assertIs(hakopy.asset_service_server_is_canceled(sid), False)
        self.expect_false(hakopy.asset_service_server_poll(sid + 9), str(sid + 9), falsy=True)
        with self.assertRaisesRegex(RuntimeError, "asset_service_server_get_request"):
            hakopy.asset_service_server_get_request(sid)  # no request in progress
        h = hakopy.asset_service_client_create("pyapi", "Service/Add", "pyclient")
        self.assertEqual(h, {"service_id": sid, "client_id": 0}, hakopy.last_error())
        self.assertEqual(hakopy.asset_service_client_get_channel_id(h), (0, 1))
        self.assertEqual(hakopy.asset_service_client_status(h),
                         hakopy.HAKO_SERVICE_CLIENT_API_STATE_IDLE)
        self.assertEqual(hakopy.asset_service_client_poll(h),
                         hakopy.HAKO_SERVICE_CLIENT_API_EVENT_NONE)
        pkt = hakopy.asset_service_client_get_request_buffer(
            h, hakopy.HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST, -1)
        self.assertIsInstance(pkt, bytearray, hakopy.last_error())
        self.assertEqual(len(pkt), 24 + 296)  # the service file's server baseSize
        bad = {"service_id": sid + 9, "client_id": 0}
        self.expect_false(hakopy.asset_service_client_poll(bad), str(sid + 9), falsy=True)
        self.expect_false(hakopy.asset_service_client_status(bad), str(sid + 9), falsy=True)
        self.expect_false(hakopy.asset_service_client_get_channel_id(bad), str(sid + 9),
                          falsy=True)

    def lifecycle(self):
        """START from another thread while start() waits, STOP from the third step's callback,
        RESET once the domain stopped (trigger_event answers False until then)."""
        errors = []

        def driver():
            try:
                if not hakopy.trigger_event(hakopy.HAKO_TRIGGER_EVENT_ID_START):
                    errors.append("START: " + hakopy.last_error())
                    return
                hakotest.wait_until(
                    lambda: hakopy.trigger_event(hakopy.HAKO_TRIGGER_EVENT_ID_RESET),
                    "RESET accepted")
            except Exception as e:  # reported by the main thread
                errors.append(repr(e))

        t = threading.Thread(target=driver)
        t.start()
        r = hakopy.start()
        t.join()
        self.assertEqual(errors, [])
        self.assertIs(r, False)  # a completed cycle answers EINTR, as in Hakoniwa
        self.assertEqual(hakopy.last_error(), "hako_asset_start: the run ended with a reset")
        self.assertEqual(len(self.inits), 1)
        self.assertEqual(self.steps, [1000, 2000, 3000])
        self.assertEqual(len(self.resets), 1)
        self.assertEqual(hakopy.asset_current_time(), 0)  # the reset set the clock back


if __name__ == "__main__":
    hakotest.main()
