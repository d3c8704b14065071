#!/usr/bin/env python3
"""samples.hakoniwa_federations.legacy: run.sh on a federation tree of our own shaped like
Hakoniwa's published drone-fleet-multi-host-legacy-visualization sample (legacy/: its file
names, keys and node names; the published files are not in this repository).

usage: test_run.py RUN_SH BUILD_DIR HAKO_CMD

One hako-launch per node (srv-01, cli-01): fleet-host's drones on both, the stand-in
VisualStatePublisher on both, the stand-in legacy viewer on the server, the tree's bridge
carrying cli-01's chunk to the server through names resolved by the node map. The test copies
the tree to a fresh folder, gives it free ports (the link, and the conductor's own addresses)
and its own domains, and checks what run.sh and the logs say: every node to the stop time,
drift within Dmax both ways, the viewer saw all 256 drones in both chunks, the bridge
forwarded. Whatever happens, every process it started is ended and its domains removed.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

RUN_SH, BUILD, HAKO_CMD = sys.argv[1:4]
HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "drone-fleet-multi-host-legacy-visualization"
DMAX = 20000
DEADLINE = 240


def free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class LegacyFederation(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="hako-hfl-")
        self.prefix = "hfl%d" % os.getpid()
        self.proc = None

    def tearDown(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)       # run.sh ends its nodes
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # anything left of its group
            except ProcessLookupError:
                pass
        for node in ("srv-01", "cli-01"):
            env = dict(os.environ, HAKO_DOMAIN="%s-%s" % (self.prefix, node))
            subprocess.run([HAKO_CMD, "clean", "--force"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def tree(self):
        sample = os.path.join(self.tmp, NAME)
        shutil.copytree(os.path.join(HERE, "legacy"), sample)
        gen = os.path.join(sample, "config", "generated")
        link, control, times = free_ports(3)
        for node in ("srv-01-01", "cli-01"):
            path = os.path.join(gen, "endpoint", node, "comm", node + "_tcp.json")
            with open(path) as f:
                comm = json.load(f)
            for side in ("local", "remote"):
                if side in comm:
                    comm[side]["port"] = link
            with open(path, "w") as f:
                json.dump(comm, f, indent=2)
        for node in ("srv-01", "cli-01"):
            path = os.path.join(gen, "conductor", node + ".json")
            with open(path) as f:
                conductor = json.load(f)
            conductor["control_address"] = "tcp://127.0.0.1:%d" % control
            conductor["time_address"] = "tcp://127.0.0.1:%d" % times
            # A node not heard from for peer_timeout_ms (default 1 s) is lost and the server
            # fails the run. Under ctest -j4 beside CPU hogs, a node of this test went 1.2 s
            # without a message: the machine's stall, not the federation's. 10 s holds that.
            conductor["peer_timeout_ms"] = 10000
            with open(path, "w") as f:
                json.dump(conductor, f, indent=2)
        return sample

    def test_legacy_visualization(self):
        sample = self.tree()
        # The launch files run "python3": make it the interpreter hakopy was built for.
        shim = os.path.join(self.tmp, "bin")
        os.mkdir(shim)
        os.symlink(sys.executable, os.path.join(shim, "python3"))
        env = dict(os.environ, HAKO_DOMAIN=self.prefix,
                   PATH=shim + os.pathsep + os.environ.get("PATH", ""))
        self.proc = subprocess.Popen(["sh", RUN_SH, "--build", BUILD, sample], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        try:
            out, _ = self.proc.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGTERM)
            out, _ = self.proc.communicate(timeout=30)
            self.fail("run.sh did not end within %d s:\n%s%s" % (DEADLINE, out, self.logs(sample)))
        if self.proc.returncode != 0:
            self.fail("run.sh exited %d:\n%s%s" % (self.proc.returncode, out, self.logs(sample)))
        print(out)
        for node, peer in (("srv-01", "cli-01"), ("cli-01", "srv-01")):
            self.assertIn("hako-launch: done: world time 38.000 s", self.section(out, node))
            # "left": the client ended and left before the server printed its table.
            row = re.search(r"^hako-launch:   %s +(?:ok|left) +(-?\d+) +(-?\d+) +(-?\d+) " % peer,
                            self.section(out, node), re.M)
            self.assertIsNotNone(row, "%s has no drift row for %s" % (node, peer))
            self.assertLessEqual(int(row.group(3)), DMAX, "%s's drift against %s" % (node, peer))
        logs = os.path.join(sample, "hako", "logs")
        summary = None
        with open(os.path.join(logs, "srv-01", "viewer.log")) as f:
            for line in f:
                if line.startswith('{"event": "SUMMARY"'):
                    summary = json.loads(line)
        self.assertIsNotNone(summary, "the viewer printed no summary")
        self.assertEqual(summary["errors"], [])
        self.assertEqual(summary["drones_seen"], 256)
        self.assertEqual(summary["airborne_checks"], 2)
        self.assertTrue(all(u > 100 for u in summary["updates_per_chunk"]), summary)
        with open(os.path.join(logs, "cli-01", "bridge.log")) as f:
            m = re.search(r"connection cli-01-to-srv-01-01-conn: forwarded=(\d+) bytes=(\d+)",
                          f.read())
        self.assertIsNotNone(m, "cli-01's bridge printed no statistics")
        self.assertGreater(int(m.group(1)), 100)

    @staticmethod
    def section(out, node):
        m = re.search(r"^== %s\n(.*?)(?=^== |^run\.sh|\Z)" % re.escape(node), out, re.M | re.S)
        return m.group(1) if m else ""

    @staticmethod
    def logs(sample):
        text = []
        for root, _, files in os.walk(os.path.join(sample, "hako")):
            for name in sorted(files):
                if name.endswith((".log", ".out")):
                    with open(os.path.join(root, name), errors="replace") as f:
                        text.append("--- %s\n%s" % (os.path.join(root, name), f.read()[-3000:]))
        return "\n".join(text)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
