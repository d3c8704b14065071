"""python.service: Hakoniwa's AddTwoInts service (hako_srv_msgs/AddTwoInts, Service/Add of
samples/service/service.json) between a Python server and the C client py-peer, and between
the C server py-peer and a Python client, 20 requests each within a run to a stop time.

The Python side checks the packets byte by byte (the layout of hako_asset_service.h: the
24-byte meta, the header with the service and client names, the body at offset 296): the
server, every request's operands in order, its client slot and channels; the client, its slot
and channels by both calls, every sum, status and result code. The C side checks every sum
(client) or answers every request (server). Both must count 20 with nothing wrong.
"""
import struct
import sys

import hakotest

SERVICE = "Service/Add"
COUNT = 20
STOP_STEPS = 300
BODY = 24 + 272  # meta + ServiceRequestHeader / ServiceResponseHeader (268, aligned to 8)
REQUEST_BYTES = 24 + 296  # the service file's server baseSize
RESPONSE_BYTES = 24 + 288  # ... and client baseSize


def operands(i):
    """Request i's operands (py_peer.c's operands()): large, negative and mixed."""
    return (1 if i % 2 == 0 else -1) * (1 << 40) + i * 1000003, -i * i * 7919 + 11


def cstr(buf, offset, size=128):
    return bytes(buf[offset:offset + size]).split(b"\0", 1)[0].decode()


def register(hakopy, name, callbacks, service_json):
    if not hakotest.register(name, hakopy.HAKO_ASSET_MODEL_PLANT, **callbacks):
        return False
    if not hakopy.service_initialize(service_json):
        print("service_initialize:", hakopy.last_error(), file=sys.stderr)
        return False
    print("registered")
    return True


def run(hakopy, problems, counts):
    """start(), then the problems on stderr and the result line: counts() after the run."""
    r = hakopy.start()
    for p in problems[:10]:
        print(p, file=sys.stderr)
    print("result " + " ".join(f"{k}={v}" for k, v in counts().items())
          + f" problems={len(problems)} start={r}")
    return 0


def role_add_server(name, service_json, client_name):
    """Serve Service/Add: answer each request in the step it is seen."""
    import hakopy
    sid = [None]
    served = [0]
    problems = []

    def expect(what, got, want):
        if got != want:
            problems.append(f"request {served[0]}: {what}: {got!r}, expected {want!r}")

    def on_initialize(context):
        sid[0] = hakopy.asset_service_create(name, SERVICE)
        if sid[0] is None:
            problems.append("asset_service_create: " + hakopy.last_error())
        return 0

    def on_step(context):
        s = sid[0]
        if s is None:
            return 0
        ev = hakopy.asset_service_server_poll(s)
        if ev == hakopy.HAKO_SERVICE_SERVER_API_EVENT_NONE:
            return 0
        expect("poll", ev, hakopy.HAKO_SERVICE_SERVER_API_EVENT_REQUEST_IN)
        req = hakopy.asset_service_server_get_request(s)
        expect("request length", len(req), REQUEST_BYTES)
        expect("service name", cstr(req, 24 + 4), SERVICE)
        expect("client name", cstr(req, 24 + 132), client_name)
        expect("opcode", req[24 + 260], hakopy.HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST)
        cid = hakopy.asset_service_server_get_current_client_id(s)
        expect("channels", hakopy.asset_service_server_get_current_channel_id(s),
               (2 * cid, 2 * cid + 1))
        expect("status", hakopy.asset_service_server_status(s),
               hakopy.HAKO_SERVICE_SERVER_API_STATUS_DOING)
        expect("is_canceled", hakopy.asset_service_server_is_canceled(s), False)
        a, b = struct.unpack_from("<qq", req, BODY)
        expect("operands", (a, b), operands(served[0]))
        res = hakopy.asset_service_server_get_response_buffer(
            s, hakopy.HAKO_SERVICE_API_STATUS_DONE, hakopy.HAKO_SERVICE_API_RESULT_CODE_OK)
        if res is None:
            problems.append("get_response_buffer: " + hakopy.last_error())
            return 0
        expect("response length", len(res), RESPONSE_BYTES)
        struct.pack_into("<q", res, BODY, a + b)
        expect("put_response", hakopy.asset_service_server_put_response(s, res), True)
        expect("status after", hakopy.asset_service_server_status(s),
               hakopy.HAKO_SERVICE_SERVER_API_STATUS_IDLE)
        served[0] += 1
        return 0

    callbacks = {"on_initialize": on_initialize, "on_simulation_step": on_step,
                 "on_manual_timing_control": None, "on_reset": None}
    if not register(hakopy, name, callbacks, service_json):
        return 1
    return run(hakopy, problems, lambda: {"served": served[0]})


def role_add_client(name, service_json, count):
    """Call Service/Add `count` times, one request at a time, and check every answer."""
    import hakopy
    count = int(count)
    h = [None]
    st = {"sent": 0, "right": 0, "busy": False}
    problems = []

    def expect(what, got, want):
        if got != want:
            problems.append(f"request {st['sent']}: {what}: {got!r}, expected {want!r}")

    def on_initialize(context):
        h[0] = hakopy.asset_service_client_create(name, SERVICE, name)
        if h[0] is None:
            problems.append("asset_service_client_create: " + hakopy.last_error())
            return 0
        sid, cid = h[0]["service_id"], h[0]["client_id"]
        expect("channels", hakopy.asset_service_client_get_channel_id(h[0]),
               (2 * cid, 2 * cid + 1))
        expect("channels by id", hakopy.asset_service_get_channel_id(sid, cid),
               (2 * cid, 2 * cid + 1))
        return 0

    def send():
        pkt = hakopy.asset_service_client_get_request_buffer(
            h[0], hakopy.HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST, -1)
        if pkt is None:
            problems.append("get_request_buffer: " + hakopy.last_error())
            return
        expect("request length", len(pkt), REQUEST_BYTES)
        expect("service name", cstr(pkt, 24 + 4), SERVICE)
        expect("client name", cstr(pkt, 24 + 132), name)
        struct.pack_into("<qq", pkt, BODY, *operands(st["sent"]))
        expect("call_request", hakopy.asset_service_client_call_request(h[0], pkt, 1000), True)
        expect("status", hakopy.asset_service_client_status(h[0]),
               hakopy.HAKO_SERVICE_CLIENT_API_STATE_DOING)
        st["busy"] = True

    def on_step(context):
        if h[0] is None:
            return 0
        if not st["busy"]:
            if st["sent"] < count:
                send()
            return 0
        ev = hakopy.asset_service_client_poll(h[0])
        if ev == hakopy.HAKO_SERVICE_CLIENT_API_EVENT_NONE:
            return 0
        st["busy"] = False
        expect("poll", ev, hakopy.HAKO_SERVICE_CLIENT_API_EVENT_RESPONSE_IN)
        res = hakopy.asset_service_client_get_response(h[0], 0)
        if res is None:
            problems.append("get_response: " + hakopy.last_error())
        else:
            a, b = operands(st["sent"])
            expect("response length", len(res), RESPONSE_BYTES)
            expect("status", res[24 + 260], hakopy.HAKO_SERVICE_API_STATUS_DONE)
            expect("result code", struct.unpack_from("<i", res, 24 + 264)[0],
                   hakopy.HAKO_SERVICE_API_RESULT_CODE_OK)
            (s,) = struct.unpack_from("<q", res, BODY)
            expect(f"{a} + {b}", s, a + b)
            st["right"] += s == a + b
        expect("status after", hakopy.asset_service_client_status(h[0]),
               hakopy.HAKO_SERVICE_CLIENT_API_STATE_IDLE)
        st["sent"] += 1
        return 0

    callbacks = {"on_initialize": on_initialize, "on_simulation_step": on_step,
                 "on_manual_timing_control": None, "on_reset": None}
    if not register(hakopy, name, callbacks, service_json):
        return 1
    return run(hakopy, problems, lambda: {"sent": st["sent"], "right": st["right"]})


class Service(hakotest.HakoTest):
    label = "service"

    def run_pair(self, server, client):
        d = self.domain
        d.wait_assets("server", "client")
        self.run_to_stop(STOP_STEPS, server, client)
        return server.result(), client.result()

    def test_python_server_c_client(self):
        d = self.domain
        d.conductor()
        server = d.python("server", __file__, "add-server", "server", hakotest.SERVICE_JSON,
                          "client")
        client = d.peer("client", "add-client", "client", hakotest.SERVICE_JSON, COUNT)
        s, c = self.run_pair(server, client)
        self.assertEqual((s["served"], s["problems"]), (COUNT, 0), server.show())
        self.assertEqual((c["right"], c["wrong"]), (COUNT, 0), client.show())

    def test_c_server_python_client(self):
        d = self.domain
        d.conductor()
        server = d.peer("server", "add-server", "server", hakotest.SERVICE_JSON)
        client = d.python("client", __file__, "add-client", "client", hakotest.SERVICE_JSON,
                          COUNT)
        s, c = self.run_pair(server, client)
        self.assertEqual((s["served"], s["wrong"]), (COUNT, 0), server.show())
        self.assertEqual((c["sent"], c["right"], c["problems"]), (COUNT, COUNT, 0),
                         client.show())


if __name__ == "__main__":
    hakotest.main({"add-server": role_add_server, "add-client": role_add_client})
