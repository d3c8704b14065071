"""hako.pdu on the channels of a domain: PDUs read and written by name, the same bytes and
values as hako-cmd's JSON codec sees, the errors of a process outside the domain, of an unknown
name or channel, of a PDU larger than its channel. Argument: the hako-cmd program."""

import json
import math

import hakopy

import hako
from hako import pdu
from pyhako_kit import PDUDEF, DomainTest, main


def json_of(value):
    """value as hako's JSON codec writes it: NaN and the infinities as strings, uint64 above
    INT64_MAX as a decimal string (the latter by field, which this test does not need)."""
    if isinstance(value, dict):
        return {k: json_of(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_of(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


CLOUD = {
    "header": {"stamp": {"sec": 12, "nanosec": 345}, "frame_id": "lidar \u3042"},
    "height": 1, "width": 3,
    "fields": [{"name": "x", "offset": 0, "datatype": 7, "count": 1},
               {"name": "y", "offset": 4, "datatype": 7, "count": 1}],
    "is_bigendian": False, "point_step": 8, "row_step": 24,
    "data": list(range(24)), "is_dense": True,
}


class Channels(DomainTest):
    def setUp(self) -> None:
        super().setUp()
        # an asset creates the pdudef's channels; this one never runs
        self.asset = hako.Asset("channels", PDUDEF, delta_usec=self.delta_usec).register()
        self.addCleanup(self.asset.close)

    def test_write_read_by_name(self) -> None:
        twist = {"linear": {"x": 1.5, "y": -2.0, "z": math.inf},
                 "angular": {"x": 0.0, "y": -0.0, "z": math.nan}}
        pdu.write("Robot", "cmd", twist)
        back = pdu.read("Robot", "cmd")
        self.assertEqual(back["linear"], {"x": 1.5, "y": -2.0, "z": math.inf})
        self.assertTrue(math.isnan(back["angular"]["z"]))
        self.assertEqual(math.copysign(1, back["angular"]["y"]), -1)
        pdu.write("Robot", "cloud", CLOUD)
        self.assertEqual(pdu.read("Robot", "cloud"), CLOUD)
        self.assertEqual(pdu.read("Robot", 2, type="sensor_msgs/PointCloud2"), CLOUD)
        self.assertEqual(pdu.read("Robot", 2), CLOUD)  # the pdudef's type of channel 2
        self.assertEqual(pdu.read("Robot", "cloud", bytes_arrays=True)["data"],
                         bytes(range(24)))
        pdu.write("Robot", "count", {"data": 2**64 - 1})
        self.assertEqual(self.asset.read("Robot", "count"), {"data": 2**64 - 1})

    def test_pdu_handle(self) -> None:
        label = self.asset.pdu("Robot", "label")
        self.assertEqual((label.channel_id, label.type.name), (5, "std_msgs/String"))
        label.write({"data": "hello"})
        self.assertEqual(label.read(), {"data": "hello"})
        other = pdu.pdu("Robot", 5, type="std_msgs/String")
        self.assertEqual((other.name, other.read()), ("label", {"data": "hello"}))

    def test_never_written_reads_zero(self) -> None:
        self.assertEqual(pdu.read("Robot", "pos"), pdu.zero("geometry_msgs/Twist"))
        self.assertEqual(pdu.read("Robot", "cloud"), pdu.zero("sensor_msgs/PointCloud2"))

    def test_hako_cmd_reads_what_hako_writes(self) -> None:
        pdu.write("Robot", "cloud", CLOUD)
        out = self.cmd("pdu", "--pdudef", PDUDEF, "--json", "Robot", "cloud")
        self.assertEqual(json.loads(out), json_of(CLOUD))
        twist = {"linear": {"x": 0.1, "y": math.nan, "z": -math.inf},
                 "angular": {"x": 1e-300, "y": 2.0, "z": 3.0}}
        pdu.write("Robot", "cmd", twist)
        out = self.cmd("pdu", "--pdudef", PDUDEF, "--json", "Robot", "cmd")
        self.assertEqual(json.loads(out), json_of(twist))

    def test_hako_reads_what_hako_cmd_writes(self) -> None:
        # the JSON codec's bytes are the bytes hako.pdu makes of the same value: the same
        # layout and heap order, a struct array's elements before their own arrays
        self.cmd("pdu-write", "--pdudef", PDUDEF, "Robot", "cloud", json.dumps(CLOUD))
        raw = hakopy.pdu_read("Robot", 2, 4096)
        encoded = pdu.encode("sensor_msgs/PointCloud2", CLOUD)
        self.assertEqual(bytes(raw[:len(encoded)]), encoded)
        self.assertEqual(pdu.read("Robot", "cloud"), CLOUD)
        self.cmd("pdu-write", "--pdudef", PDUDEF, "Robot", "count",
                 '{"data": "18446744073709551615"}')
        self.assertEqual(pdu.read("Robot", "count"), {"data": 2**64 - 1})

    def test_too_large_for_the_channel(self) -> None:
        big = dict(CLOUD, data=list(range(256)))
        # 24 meta + 176 base + 2 x 140 (PointField) + 256 (uint8)
        with self.assertRaisesRegex(ValueError, r"this sensor_msgs/PointCloud2 PDU needs 736 "
                                                r"bytes; channel \(Robot, 4\) has 256"):
            pdu.write("Robot", "small", big)
        pdu.write("Robot", "cloud", big)  # 4096 bytes: fits
        self.assertEqual(pdu.read("Robot", "cloud")["data"], list(range(256)))

    def test_unknown_names_and_channels(self) -> None:
        with self.assertRaisesRegex(LookupError, "no PDU 'nothing' of robot 'Robot'"):
            pdu.read("Robot", "nothing")
        with self.assertRaisesRegex(LookupError, "no PDU 'cmd' of robot 'Nobody'"):
            pdu.write("Nobody", "cmd", {})
        with self.assertRaisesRegex(hako.HakoError, r"read\(Robot, 77\): no such channel"):
            pdu.read("Robot", 77, type="geometry_msgs/Twist")

    def test_outside_the_domain(self) -> None:
        self.asset.close()
        self.assertFalse(self.asset.registered)
        with self.assertRaisesRegex(hako.HakoError, r"write\(Robot, 0\): not in a domain"):
            pdu.write("Robot", "cmd", {})
        with hako.attach():  # an attachment reads and writes without an asset
            pdu.write("Robot", "cmd", {"linear": {"x": 7.0}})
            self.assertEqual(pdu.read("Robot", "cmd")["linear"]["x"], 7.0)
        with self.assertRaisesRegex(hako.HakoError, "not in a domain"):
            pdu.read("Robot", "cmd")

    def test_pdudef_errors(self) -> None:
        with self.assertRaises(FileNotFoundError):
            pdu.load("/nonexistent/pdudef.json")
        with self.assertRaisesRegex(FileNotFoundError, "pdudef.json"):
            hako.Asset("x", "/nonexistent/pdudef.json", delta_usec=1000)
        d = pdu.load(PDUDEF)
        self.assertEqual(pdu.find("Robot", "cloud").size, 4096)
        self.assertEqual(pdu.find("Robot", 3).name, "count")
        self.assertEqual(pdu.loaded(), [d])
        pdu.unload()
        with self.assertRaisesRegex(LookupError, "none loaded"):
            pdu.find("Robot", "cmd")
        # the asset resolves through its own pdudef all the same
        self.assertEqual(self.asset.read("Robot", "pos"), pdu.zero("geometry_msgs/Twist"))


if __name__ == "__main__":
    main()
