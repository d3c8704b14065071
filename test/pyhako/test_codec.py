"""hako.pdu's codec (hako._pdu) without a domain: dict -> PDU -> dict is the identity on every
built-in type and on a type with every kind in every form, Twist's bytes are the ones computed
by hand, and a wrong value is refused naming its field path."""

import math
import os
import random
import struct
import subprocess
import sys
import tempfile
import unittest

os.environ.pop("HAKO_MSG_PATH", None)  # the built-in packages only, unless a test adds one

import hako  # noqa: E402
from hako import pdu  # noqa: E402

INT_RANGES = {
    "int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1),
    "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1),
    "uint8": (0, 2**8 - 1), "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1), "byte": (0, 255), "char": (0, 255),
}
FLT_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]


def f32(x: float) -> float:
    """x rounded to float32, as a float32 field keeps it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def gen_string(rnd: random.Random) -> str:
    """Up to 127 bytes of UTF-8: ASCII, 2-, 3- and 4-byte characters; sometimes the limit."""
    limit = 127 if rnd.random() < 0.2 else rnd.randint(0, 127)
    chars, size = [], 0
    while True:
        c = rnd.choice(["a", "Z", "0", " ", "\u00e9", "\u3042", "\U0001f916", "\t", "\"", "\\"])
        n = len(c.encode())
        if size + n > limit:
            return "".join(chars)
        chars.append(c)
        size += n


def gen_scalar(kind: str, rnd: random.Random):
    if kind == "bool":
        return rnd.random() < 0.5
    if kind in INT_RANGES:
        lo, hi = INT_RANGES[kind]
        return rnd.choice([lo, hi, 0, rnd.randint(lo, hi), rnd.randint(lo, hi)])
    if kind == "float64":
        return rnd.choice([rnd.uniform(-1e6, 1e6), rnd.uniform(-1, 1) * 1e300, 0.1, -0.0,
                           math.nan, math.inf, -math.inf, 5e-324, 1.7976931348623157e308])
    if kind == "float32":
        return rnd.choice([f32(rnd.uniform(-1e6, 1e6)), f32(0.1), -0.0, math.nan, math.inf,
                           -math.inf, FLT_MAX, f32(1.401298464324817e-45)])
    if kind == "string":
        return gen_string(rnd)
    raise AssertionError(f"no generator for {kind}")


def gen_value(t: pdu.MsgType, rnd: random.Random) -> dict:
    """A value of every field of t, walking the type."""
    out = {}
    for f in t.fields:
        def one():
            return gen_value(f.type, rnd) if f.kind == "struct" else gen_scalar(f.kind, rnd)
        if f.form == "single":
            out[f.name] = one()
        else:
            n = f.length if f.form == "array" else rnd.randint(0, 3)
            out[f.name] = [one() for _ in range(n)]
    return out


def assert_same(tc: unittest.TestCase, a, b, path: str = "") -> None:
    """a and b equal, of the same types, dict keys in the same order, NaN equal to NaN and
    -0.0 apart from 0.0."""
    tc.assertIs(type(a), type(b), f"{path}: {a!r} vs {b!r}")
    if isinstance(a, dict):
        tc.assertEqual(list(a), list(b), path)
        for k in a:
            assert_same(tc, a[k], b[k], f"{path}.{k}" if path else k)
    elif isinstance(a, list):
        tc.assertEqual(len(a), len(b), path)
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(tc, x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        if math.isnan(a):
            tc.assertTrue(math.isnan(b), f"{path}: {a!r} vs {b!r}")
        else:
            tc.assertEqual(a, b, path)
            tc.assertEqual(math.copysign(1, a), math.copysign(1, b), f"{path}: sign of zero")
    else:
        tc.assertEqual(a, b, path)


# A type with every kind in every form, a struct array whose elements have arrays of their own
# (the heap order), and a struct nested in a struct.
ALL_KINDS = ["bool", "byte", "char", "int8", "uint8", "int16", "uint16", "int32", "uint32",
             "int64", "uint64", "float32", "float64", "string"]
EVERY_FORM_MSG = "".join(f"{k} s_{k}\n{k}[3] a_{k}\n{k}[] v_{k}\n" for k in ALL_KINDS) + (
    "Inner inner\nInner[2] inners\nInner[] vinners\ngeometry_msgs/Point point\n")
INNER_MSG = "uint8[] blob\nstring[] names\nOuter2 deep\n"
OUTER2_MSG = "float32[] xs\nint64 n\n"


class Codec(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()
        os.makedirs(os.path.join(cls.tmp.name, "pyhako_test", "msg"))
        for name, text in (("Every", EVERY_FORM_MSG), ("Inner", INNER_MSG),
                           ("Outer2", OUTER2_MSG)):
            with open(os.path.join(cls.tmp.name, "pyhako_test", "msg", name + ".msg"), "w") as f:
                f.write(text)
        pdu.add_msg_path(cls.tmp.name)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def round_trip(self, t: pdu.MsgType, value: dict) -> None:
        data = pdu.encode(t, value)
        back = pdu.decode(t, data)
        assert_same(self, value, back)
        self.assertEqual(pdu.encode(t, back), data, "dict -> PDU -> dict -> PDU: same bytes")

    def test_builtin_types_round_trip(self) -> None:
        names = [n for n in pdu.type_names() if not n.startswith("pyhako_test/")]
        self.assertGreater(len(names), 200)
        for seed in range(4):
            rnd = random.Random(seed)
            for name in names:
                with self.subTest(type=name, seed=seed):
                    t = pdu.msg_type(name)
                    self.round_trip(t, gen_value(t, rnd))

    def test_every_kind_and_form_round_trip(self) -> None:
        t = pdu.msg_type("pyhako_test/Every")
        kinds = {(f.kind, f.form) for f in t.fields}
        for k in ALL_KINDS + ["struct"]:
            for form in ("single", "array", "varray"):
                self.assertIn((k, form), kinds)
        for seed in range(50):
            with self.subTest(seed=seed):
                self.round_trip(t, gen_value(t, random.Random(seed)))

    def test_zero_value(self) -> None:
        for name in ("geometry_msgs/Twist", "sensor_msgs/PointCloud2", "pyhako_test/Every"):
            t = pdu.msg_type(name)
            z = pdu.zero(t)
            assert_same(self, pdu.decode(t, pdu.encode(t, {})), z)
            self.assertEqual(len(pdu.encode(t, {})), t.fixed_size)
        z = pdu.zero("sensor_msgs/PointCloud2")
        self.assertEqual(z["data"], [])
        self.assertEqual(z["header"]["frame_id"], "")
        self.assertIs(z["is_dense"], False)
        self.assertEqual(pdu.zero("sensor_msgs/PointCloud2", bytes_arrays=True)["data"], b"")

    def test_twist_bytes_by_hand(self) -> None:
        value = {"linear": {"x": 1.0, "y": -2.5, "z": 0.1},
                 "angular": {"x": 0.5, "y": -0.0, "z": 3}}
        expected = bytes.fromhex(
            "78563412"  # magic 0x12345678
            "01000000"  # version 1
            "18000000"  # base at 24
            "48000000"  # heap at 24 + 48 = 72
            "48000000"  # total 72
            "00000000"  # epoch, flags, reserved
            "000000000000f03f"  # linear.x 1.0
            "00000000000004c0"  # linear.y -2.5
            "9a9999999999b93f"  # linear.z 0.1
            "000000000000e03f"  # angular.x 0.5
            "0000000000000080"  # angular.y -0.0
            "0000000000000840")  # angular.z 3 (an int, as a float64)
        self.assertEqual(expected, struct.pack("<6I6d", 0x12345678, 1, 24, 72, 72, 0,
                                               1.0, -2.5, 0.1, 0.5, -0.0, 3.0))
        data = pdu.encode("geometry_msgs/Twist", value)
        self.assertEqual(data, expected)
        back = pdu.decode("geometry_msgs/Twist", expected)
        self.assertEqual(back, {"linear": {"x": 1.0, "y": -2.5, "z": 0.1},
                                "angular": {"x": 0.5, "y": -0.0, "z": 3.0}})
        self.assertIs(type(back["angular"]["z"]), float)
        # missing fields are zero
        self.assertEqual(pdu.encode("geometry_msgs/Twist", {"angular": {"z": 3}}),
                         expected[:24] + bytes(40) + expected[64:])

    def test_integer_limits(self) -> None:
        for kind, (lo, hi) in INT_RANGES.items():
            name = {"byte": "std_msgs/Byte", "char": "std_msgs/Char"}.get(
                kind, f"std_msgs/{kind.capitalize().replace('Uint', 'UInt')}")
            t = pdu.msg_type(name)
            self.assertEqual(t.fields[0].kind, kind)
            for v in (lo, hi, 0):
                self.assertEqual(pdu.decode(t, pdu.encode(t, {"data": v})), {"data": v})
            for v in (lo - 1, hi + 1, 2**200, -2**200):
                with self.subTest(kind=kind, value=v):
                    with self.assertRaisesRegex(ValueError,
                                                f"^data: {v} is out of range for {kind}$"):
                        pdu.encode(t, {"data": v})
        # uint64 past INT64_MAX, bit for bit
        data = pdu.encode("std_msgs/UInt64", {"data": 2**64 - 2})
        self.assertEqual(data[24:32], b"\xfe" + b"\xff" * 7)

    def test_floats(self) -> None:
        for v in (math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308):
            back = pdu.decode("std_msgs/Float64", pdu.encode("std_msgs/Float64", {"data": v}))
            assert_same(self, {"data": v}, back)
        for v in (math.nan, math.inf, -math.inf, FLT_MAX, -FLT_MAX):
            back = pdu.decode("std_msgs/Float32", pdu.encode("std_msgs/Float32", {"data": v}))
            assert_same(self, {"data": v}, back)
        # rounded to float32, as C does
        back = pdu.decode("std_msgs/Float32", pdu.encode("std_msgs/Float32", {"data": 0.1}))
        self.assertEqual(back["data"], f32(0.1))
        with self.assertRaisesRegex(ValueError, "^data: 1e\\+39 is out of range for float32$"):
            pdu.encode("std_msgs/Float32", {"data": 1e39})
        with self.assertRaisesRegex(ValueError, "^data: .* is out of range for float64$"):
            pdu.encode("std_msgs/Float64", {"data": 10**400})
        # a NaN's payload goes through as it is
        nan = struct.unpack("<d", struct.pack("<Q", 0x7ff8000000000123))[0]
        data = pdu.encode("std_msgs/Float64", {"data": nan})
        self.assertEqual(struct.unpack("<Q", data[24:32])[0], 0x7ff8000000000123)

    def test_strings(self) -> None:
        t = pdu.msg_type("std_msgs/String")
        for s in ("", "hello", "\u3042" * 42, "x" * 127, "\U0001f916 robot"):
            self.assertEqual(pdu.decode(t, pdu.encode(t, {"data": s})), {"data": s})
        with self.assertRaisesRegex(ValueError, "^data: is 128 bytes long in UTF-8; the limit "
                                                "is 127$"):
            pdu.encode(t, {"data": "x" * 128})
        with self.assertRaisesRegex(ValueError, "^data: is 129 bytes long"):
            pdu.encode(t, {"data": "\u3042" * 43})
        with self.assertRaisesRegex(ValueError, "^data: contains a NUL character$"):
            pdu.encode(t, {"data": "a\0b"})
        # bytes that are not UTF-8 come back as lone surrogates and go back as the same bytes
        data = bytearray(pdu.encode(t, {"data": "ab"}))
        data[24:27] = b"a\xff\xfe"
        back = pdu.decode(t, data)
        self.assertEqual(back, {"data": "a\udcff\udcfe"})
        self.assertEqual(pdu.encode(t, back), bytes(data))

    def test_byte_arrays(self) -> None:
        t = pdu.msg_type("sensor_msgs/Image")
        blob = bytes(range(256)) * 40
        for given in (blob, bytearray(blob), memoryview(blob), list(blob)):
            data = pdu.encode(t, {"data": given, "encoding": "mono8"})
            self.assertEqual(pdu.decode(t, data)["data"], list(blob))
            self.assertEqual(pdu.decode(t, data, bytes_arrays=True)["data"], blob)
        value = pdu.decode(t, pdu.encode(t, {"data": blob}), bytes_arrays=True)
        self.assertEqual(pdu.encode(t, value), pdu.encode(t, {"data": list(blob)}))
        # a fixed uint8[8]
        can = pdu.msg_type("can_msgs/HakoCanBody")
        self.assertEqual(pdu.decode(can, pdu.encode(can, {"data": b"12345678"}),
                                    bytes_arrays=True)["data"], b"12345678")
        with self.assertRaisesRegex(ValueError, "^data: must have 8 elements, not 3$"):
            pdu.encode(can, {"data": b"123"})
        # bytes are for byte arrays only
        with self.assertRaisesRegex(TypeError, "^data: must be a list, not bytes$"):
            pdu.encode("std_msgs/Int8MultiArray", {"data": b"12"})

    def test_errors_name_the_field(self) -> None:
        cases = [
            ("sensor_msgs/PointCloud", {"points": [{"x": 1.0}, {"x": "a"}]}, TypeError,
             "points[1].x: must be a number (float32), not str"),
            ("sensor_msgs/PointCloud", {"points": [{}, {"x": 1, "q": 2}]}, ValueError,
             "points[1].q: unknown field (geometry_msgs/Point32 has no such field)"),
            ("geometry_msgs/Twist", {"bogus": 1}, ValueError,
             "bogus: unknown field (geometry_msgs/Twist has no such field)"),
            ("geometry_msgs/Twist", {"linear": [1, 2, 3]}, TypeError,
             "linear: must be a dict (geometry_msgs/Vector3), not list"),
            ("geometry_msgs/Twist", {"linear": {"x": None}}, TypeError,
             "linear.x: must be a number (float64), not NoneType"),
            ("geometry_msgs/Twist", {"linear": {"x": True}}, TypeError,
             "linear.x: must be a number (float64), not bool"),
            ("std_msgs/Bool", {"data": 1}, TypeError, "data: must be a bool, not int"),
            ("std_msgs/Int32", {"data": True}, TypeError,
             "data: must be an int (int32), not bool"),
            ("std_msgs/Int32", {"data": 1.0}, TypeError,
             "data: must be an int (int32), not float"),
            ("std_msgs/Int32", {"data": "1"}, TypeError, "data: must be an int (int32), not str"),
            ("std_msgs/String", {"data": b"x"}, TypeError, "data: must be a str, not bytes"),
            ("std_msgs/UInt8MultiArray", {"data": [1, 256]}, ValueError,
             "data[1]: 256 is out of range for uint8"),
            ("std_msgs/UInt8MultiArray", {"data": {"a": 1}}, TypeError,
             "data: must be a list or bytes, not dict"),
            ("sensor_msgs/Imu", {"orientation_covariance": [0.0] * 8}, ValueError,
             "orientation_covariance: must have 9 elements, not 8"),
            ("sensor_msgs/PointCloud2", {"fields": [{"name": "x"}, {"name": "y" * 200}]},
             ValueError, "fields[1].name: is 200 bytes long in UTF-8; the limit is 127"),
            ("pyhako_test/Every", {"vinners": [{}, {"deep": {"xs": [0.0, "no"]}}]}, TypeError,
             "vinners[1].deep.xs[1]: must be a number (float32), not str"),
            ("geometry_msgs/Twist", {1: {}}, TypeError, "field names are str, not int (1)"),
            ("geometry_msgs/Twist", [], TypeError,
             "a geometry_msgs/Twist PDU is given as a dict, not list"),
        ]
        for name, value, exc, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(exc) as cm:
                    pdu.encode(name, value)
                self.assertEqual(str(cm.exception), message)

    def test_decode_refuses_bad_bytes(self) -> None:
        t = pdu.msg_type("sensor_msgs/PointCloud2")
        good = pdu.encode(t, {"data": [1, 2, 3], "fields": [{"name": "x"}]})
        self.assertEqual(pdu.decode(t, good)["data"], [1, 2, 3])
        for bad, why in ((b"", "shorter"), (b"\x01" * 200, "magic"),
                         (good[:100], "")):
            with self.assertRaisesRegex(ValueError, "^not a valid sensor_msgs/PointCloud2 PDU"):
                pdu.decode(t, bad)
        lying = bytearray(good)
        lying[24 + 164:24 + 168] = struct.pack("<i", 1000)  # data's length
        with self.assertRaisesRegex(ValueError, "PDU: data: "):
            pdu.decode(t, lying)
        # all-zero meta: a channel never written
        self.assertEqual(pdu.decode(t, bytes(t.fixed_size)), pdu.zero(t))

    def test_types(self) -> None:
        t = pdu.msg_type("sensor_msgs/PointCloud2")
        self.assertIs(t, pdu.msg_type("sensor_msgs/PointCloud2"))
        self.assertEqual(t.name, "sensor_msgs/PointCloud2")
        self.assertEqual((t.size, t.fixed_size, t.has_varray), (176, 200, True))
        f = t.fields[3]
        self.assertEqual((f.name, f.kind, f.form, f.length, f.offset, f.size),
                         ("fields", "struct", "varray", 0, 144, 8))
        self.assertIs(f.type, pdu.msg_type("sensor_msgs/PointField"))
        self.assertEqual(t.fields[0].type.fields[1].kind, "string")
        with self.assertRaisesRegex(LookupError, "no_pkg/Nothing"):
            pdu.msg_type("no_pkg/Nothing")
        with self.assertRaises(TypeError):
            pdu.MsgType()

    def test_msg_path_from_environment(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "envpkg"))
            with open(os.path.join(d, "envpkg", "Probe.msg"), "w") as f:
                f.write("# a type only $HAKO_MSG_PATH has\ngeometry_msgs/Point[] points\n")
            with open(os.path.join(d, "envpkg", "Bad.msg"), "w") as f:
                f.write("int32 ok\nint32 X=1\n")
            script = (
                "from hako import pdu\n"
                "v = {'points': [{'x': 1.0, 'y': 2.0, 'z': 3.0}]}\n"
                "assert pdu.decode('envpkg/Probe', pdu.encode('envpkg/Probe', v)) == v\n"
                "try:\n"
                "    pdu.msg_type('envpkg/Bad')\n"
                "except ValueError as e:\n"
                "    print(e)\n")
            env = dict(os.environ, HAKO_MSG_PATH=d)
            p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                               text=True, check=False)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("Bad.msg:2", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
