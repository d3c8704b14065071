"""cmake --install gives importable modules: hako, hakopy and hako._pdu installed under a fresh
prefix import from there with nothing of the build tree on the path, find hako's libraries
relative to themselves, and have their stubs beside them. Arguments: cmake, the build folder,
the Python folder under the prefix (HAKO_PYTHON_INSTALL_DIR)."""

import os
import subprocess
import sys
import tempfile
import unittest

CMAKE, BUILD, PY_DIR = sys.argv[1:4]
del sys.argv[1:4]

SCRIPT = """
import hako, hakopy, hako._pdu
for m in (hako, hakopy, hako._pdu):
    print(m.__file__)
t = hako.pdu.msg_type("geometry_msgs/Twist")
v = {"linear": {"x": 1.0, "y": 2.0, "z": 3.0}, "angular": {"x": 0.0, "y": 0.0, "z": 0.5}}
assert hako.pdu.decode(t, hako.pdu.encode(t, v)) == v
"""


class Install(unittest.TestCase):
    def test_installed_modules_import(self) -> None:
        with tempfile.TemporaryDirectory() as prefix:
            p = subprocess.run([CMAKE, "--install", BUILD, "--prefix", prefix],
                               capture_output=True, text=True, check=False)
            self.assertEqual(p.returncode, 0, p.stderr)
            site = os.path.join(prefix, PY_DIR)
            for f in ("hakopy.pyi", "hako/__init__.py", "hako/pdu.py", "hako/_pdu.pyi",
                      "hako/py.typed"):
                self.assertTrue(os.path.exists(os.path.join(site, f)), f)
            env = {k: v for k, v in os.environ.items()
                   if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
            env["PYTHONPATH"] = site
            p = subprocess.run([sys.executable, "-c", SCRIPT], cwd=prefix, env=env,
                               capture_output=True, text=True, check=False)
            self.assertEqual(p.returncode, 0, p.stderr)
            files = p.stdout.split()
            self.assertEqual(len(files), 3)
            for f in files:
                self.assertTrue(f.startswith(site + os.sep), f)


if __name__ == "__main__":
    unittest.main(verbosity=2)
