"""The shared kit of hakopy's acceptance tests (test/python/test_*.py).

ctest runs a test script as
    python3 test_<name>.py --hako-cmd PATH --peer PATH [--service-json PATH]
and the script is unittest's main. The same script run as
    python3 test_<name>.py child ROLE ARGS...
is one of the Python assets a test starts: main() runs the role (a function of the script's, or
one of the kit's ROLES) instead of the tests.

What a test gets:
  - HakoTest: a TestCase whose self.domain is a fresh domain (named for the test and the pid)
    and whose cleanup kills every process the test started (their whole process groups),
    stops the conductor and removes the domain, whether the test passed or failed; it starts a
    Python asset with py-peer in lock-step (python_and_peer), runs to a stop time
    (run_to_stop) and checks what lock-stepped assets read (assert_lockstep_clean);
  - Domain: hako-cmd against the domain (status, ls, start, stop, reset) and waits for its
    state; Domain.python / Domain.peer start the Python and C assets in it;
  - Proc: a child in its own process group, its output in files; waits for a line, for exit;
  - wait_until: poll a condition until a deadline; a timeout fails the test and shows what the
    processes and the domain said;
  - register: hakopy.asset_register for a role, with the test's PDU definition and delta;
  - pdu / Lockstep: the 64-byte test PDU of py_peer.c and the check of what a lock-stepped
    asset reads (py_peer.c's header comment says why "step n - 1 or n").
"""
import argparse
import ctypes
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

HAKO_CMD = None
PEER = None
SERVICE_JSON = None
HERE = os.path.dirname(os.path.abspath(__file__))
PDUDEF = os.path.join(HERE, "pdudef.json")
ROBOT = "PyTest"
DELTA_USEC = 1000
PDU_BYTES = 64

# How long a wait may take before the test fails. Only a failing test waits this long: every
# wait ends as soon as what it waits for is seen.
DEADLINE = 30.0


def wait_until(cond, what, timeout=DEADLINE, interval=0.01, report=None):
    """Poll cond() until it returns something true (returned) or timeout seconds passed (the
    test fails saying what it waited for, and report(), if given)."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() >= end:
            extra = "\n" + report() if report is not None else ""
            raise AssertionError(f"timed out after {timeout:.1f} s waiting for {what}{extra}")
        time.sleep(interval)


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def _die_with_the_test():
    """In the child before exec: SIGKILL when the test process dies, even by ctest's timeout
    (its own session keeps the child out of the process group ctest kills)."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Proc:
    """A child process in a session (so a process group) of its own, stdout and stderr in
    files of the test's temporary folder, stdin a pipe the test may close. It dies with the
    test process."""

    def __init__(self, label, args, env, tmp):
        self.label = label
        self.args = args
        self.out_path = os.path.join(tmp, label + ".out")
        self.err_path = os.path.join(tmp, label + ".err")
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=out, stderr=err,
                                      env=env, cwd=tmp, start_new_session=True,
                                      preexec_fn=_die_with_the_test)
        self.pid = self.p.pid

    def out(self):
        return _read(self.out_path)

    def err(self):
        return _read(self.err_path)

    def show(self):
        return (f"---- {self.label} (pid {self.pid}, exit {self.p.poll()}): {' '.join(self.args)}\n"
                f"stdout:\n{self.out()}stderr:\n{self.err()}")

    def wait_line(self, regex, timeout=DEADLINE, stream="out"):
        """The first match of regex (multiline) in stdout (or "err"), once there."""
        read = self.out if stream == "out" else self.err
        rx = re.compile(regex, re.M)
        return wait_until(lambda: rx.search(read()), f"/{regex}/ from {self.label}", timeout,
                          report=self.show)

    def wait_exit(self, timeout=DEADLINE):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{self.label} did not exit within {timeout:.1f} s\n"
                                 + self.show()) from None

    def result(self):
        """The key=value pairs of its last "result ..." line, values as ints where they are."""
        lines = [l for l in self.out().splitlines() if l.startswith("result ")]
        if not lines:
            raise AssertionError(f"{self.label} printed no result line\n" + self.show())
        res = {}
        for kv in lines[-1].split()[1:]:
            k, _, v = kv.partition("=")
            res[k] = int(v) if re.fullmatch(r"-?\d+", v) else v
        return res

    def close_stdin(self):
        if self.p.stdin is not None and not self.p.stdin.closed:
            self.p.stdin.close()

    def kill(self):
        """SIGKILL its process group (whatever it started goes too), and reap it."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.close_stdin()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            pass


_domains = 0


class Domain:
    """A domain of its own for one test: "py-<label>-<pid>-<n>"."""

    def __init__(self, label, tmp):
        global _domains
        _domains += 1
        self.name = f"py-{label}-{os.getpid()}-{_domains}"
        self.tmp = tmp
        self.procs = []
        self.conductor_proc = None
        self.env = dict(os.environ, HAKO_DOMAIN=self.name)
        for var in ("HAKO_CORE_CONFIG", "HAKO_REAL_TIME_FACTOR", "HAKO_LOG"):
            self.env.pop(var, None)

    # ---- processes ----

    def spawn(self, label, args, c_program=False):
        """A process in the domain. A C program (a sanitizer build's, instrumented itself) is
        checked for leaks: the ASan options of the interpreter (detect_leaks=0, for its own
        memory at exit) are not passed on to it."""
        env = self.env
        if c_program and "detect_leaks=0" in env.get("ASAN_OPTIONS", ""):
            env = dict(env)
            env.pop("ASAN_OPTIONS")
        p = Proc(label, [str(a) for a in args], env, self.tmp)
        self.procs.append(p)
        return p

    def python(self, label, script, role, *args):
        """A Python asset: script's child role ROLE (see main)."""
        return self.spawn(label, [sys.executable, script, "child", role, *args])

    def peer(self, label, *args):
        """The C asset py-peer."""
        return self.spawn(label, [PEER, *args], c_program=True)

    def conductor(self, delta_usec=DELTA_USEC, max_delay_usec=None, real_time_factor=0):
        """hako-cmd conductor for this domain, once the domain is there."""
        args = [HAKO_CMD, "-d", self.name, "conductor", "--delta-usec", delta_usec,
                "--max-delay-usec", max_delay_usec or delta_usec,
                "--real-time-factor", real_time_factor]
        self.conductor_proc = self.spawn("conductor", args, c_program=True)
        self.conductor_proc.wait_line(r"conductor of domain '.*' running")

    def set_stop_time(self, usec):
        """The world time at which the run stops by itself (py-peer stop-at)."""
        r = subprocess.run([PEER, "stop-at", str(usec)], env=self.env, capture_output=True,
                           text=True, timeout=DEADLINE)
        if r.returncode != 0:
            raise AssertionError(f"py-peer stop-at {usec}: {r.stdout}{r.stderr}")

    # ---- hako-cmd ----

    def cmd(self, *args, check=True):
        """hako-cmd -d <domain> ARGS: its stdout + stderr; a failure fails the test when check."""
        r = subprocess.run([HAKO_CMD, "-d", self.name, *[str(a) for a in args]],
                           capture_output=True, text=True, timeout=DEADLINE)
        text = r.stdout + r.stderr
        if check and r.returncode != 0:
            raise AssertionError(f"hako-cmd {' '.join(map(str, args))} exited {r.returncode}:\n"
                                 f"{text}\n{self.report()}")
        return text

    def status(self):
        """(state, error reason or "", the whole output of hako-cmd status)."""
        text = self.cmd("status", check=False)
        m = re.search(r"^status=(\w+)$", text, re.M)
        err = re.search(r"^error +(.*)$", text, re.M)
        return (m.group(1) if m else None), (err.group(1) if err else ""), text

    def state(self):
        return self.status()[0]

    def assets(self):
        """The names of the registered assets (hako-cmd ls)."""
        lines = self.cmd("ls").splitlines()
        if not lines or not lines[0].startswith("NAME "):
            return []
        return [l.split()[0] for l in lines[1:] if l.strip()]

    def wait_state(self, state, timeout=DEADLINE):
        return wait_until(lambda: self.state() == state, f"domain state {state}", timeout,
                          report=self.report)

    def wait_assets(self, *names, timeout=DEADLINE):
        return wait_until(lambda: set(names) <= set(self.assets()),
                          f"assets {', '.join(names)} registered", timeout, report=self.report)

    def world_steps(self):
        m = re.search(r"^world time +[\d.]+ s \((\d+) steps\)$", self.status()[2], re.M)
        return int(m.group(1)) if m else -1

    def report(self):
        """What the domain and every process said: for the message of a failed wait."""
        parts = ["---- hako-cmd status / ls", self.cmd("status", check=False),
                 self.cmd("ls", check=False)]
        parts += [p.show() for p in self.procs]
        return "\n".join(parts)

    def close(self):
        """Kill every process (the conductor last, by SIGTERM first: it removes the segment)
        and remove whatever is left of the domain."""
        for p in self.procs:
            if p is not self.conductor_proc:
                p.kill()
        c = self.conductor_proc
        if c is not None and c.p.poll() is None:
            try:
                os.killpg(c.pid, signal.SIGTERM)
                c.p.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
            c.kill()
        subprocess.run([HAKO_CMD, "-d", self.name, "clean", "--force"], capture_output=True,
                       timeout=DEADLINE)


class HakoTest(unittest.TestCase):
    """A test with a fresh domain (self.domain) and a temporary folder (self.tmp), both gone
    after the test, passed or failed (KEEP=1 keeps the folder)."""

    label = "test"

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix=f"hakopy-{self.label}-")
        if not os.environ.get("KEEP"):
            self.addCleanup(shutil.rmtree, self.tmp, True)
        self.domain = Domain(self.label, self.tmp)
        self.addCleanup(self.domain.close)

    def run_to_stop(self, steps, *procs):
        """Start a run with a stop time of `steps` world steps, wait until it stopped there,
        reset it, and wait for procs to exit 0. (Not hako-cmd start's wait for running: a
        short run may be over before it looks.)"""
        d = self.domain
        d.set_stop_time(steps * DELTA_USEC)
        d.cmd("start", "--no-wait")
        d.wait_state("stopped")
        self.assertEqual(d.world_steps(), steps, d.report())
        d.cmd("reset")
        for p in procs:
            self.assertEqual(p.wait_exit(), 0, p.show())

    def python_and_peer(self, script, progress_every=0):
        """Under a conductor, the Python asset "pyasset" (script's lockstep role, writing channel
        0, "step N" every progress_every steps) and py-peer "cpeer" (lockstep, channel 1), both
        registered, in lock-step once the domain starts: (py, c)."""
        d = self.domain
        d.conductor()
        py = d.python("py", script, "lockstep", "pyasset", 0, 1, progress_every)
        c = d.peer("peer", "lockstep", "cpeer", PDUDEF, 1, 0)
        d.wait_assets("pyasset", "cpeer")
        return py, c

    def assert_lockstep_clean(self, steps, *procs):
        """Each of procs (lockstep roles, py-peer lockstep) ran exactly `steps` steps and read
        nothing wrong (Lockstep)."""
        for p in procs:
            r = p.result()
            self.assertEqual(r["steps"], steps, p.show())
            self.assertEqual(r["mismatches"], 0, p.show())


# ---- the test PDU (py_peer.c) ----

MASK64 = (1 << 64) - 1


def pdu(ch, n):
    """The PDU the asset writing channel ch writes at its step n."""
    tag = 0x48414B4F ^ ch
    mix = ((n * 0x9E3779B97F4A7C15) & MASK64) ^ tag
    return struct.pack("<IIQ", tag, n & 0xFFFFFFFF, mix) + bytes(
        (n * 31 + i * 7 + ch) & 0xFF for i in range(48))


class Lockstep:
    """The reads of a lock-stepped asset of the PDUs of the other (on other_ch): at step n it
    must see the other's write of step n - 1 or n (never written: only at step 1), never an
    older one than before."""

    ZERO = bytes(PDU_BYTES)

    def __init__(self, other_ch):
        self.other_ch = other_ch
        self.steps = 0
        self.mismatches = 0
        self.same_step = 0
        self.last_seen = 0
        self.messages = []

    def mismatch(self, n, text):
        self.mismatches += 1
        if len(self.messages) < 5:
            self.messages.append(f"step {n}: {text}")

    def check(self, n, buf):
        if buf == self.ZERO:
            seen = 0
        elif buf == pdu(self.other_ch, n):
            seen = n
        elif n > 1 and buf == pdu(self.other_ch, n - 1):
            seen = n - 1
        else:
            self.mismatch(n, f"read {bytes(buf).hex()}, not the other's PDU of step {n - 1} "
                             f"or {n}")
            return
        if seen < n - 1:
            self.mismatch(n, f"read the other's step {seen}")
        elif seen < self.last_seen:
            self.mismatch(n, f"read step {seen} after step {self.last_seen}")
        self.same_step += seen == n
        self.last_seen = seen


CALLBACKS = ("on_initialize", "on_simulation_step", "on_manual_timing_control", "on_reset")


def register(name, model=None, **callbacks):
    """In a role: hakopy.asset_register(name) with the test's PDU definition, DELTA_USEC, the
    callbacks given by name (the others None) and model (default: a controller). True, or False
    after printing last_error() on stderr."""
    import hakopy
    unknown = set(callbacks) - set(CALLBACKS)
    if unknown:
        raise TypeError(f"not a callback of asset_register: {', '.join(sorted(unknown))}")
    table = {k: callbacks.get(k) for k in CALLBACKS}
    if model is None:
        model = hakopy.HAKO_ASSET_MODEL_CONTROLLER
    if not hakopy.asset_register(name, PDUDEF, table, DELTA_USEC, model):
        print("asset_register:", hakopy.last_error(), file=sys.stderr)
        return False
    return True


def role_lockstep(name, my_ch, other_ch, progress_every="0"):
    """A Python asset in lock-step with another (py-peer lockstep, or this role again): each step
    it checks the world and its own time, reads the other's PDU (Lockstep) and writes its own.
    Prints "registered", "step N" every progress_every steps, then after the run its
    "result steps=... mismatches=... same_step=... start=..." line."""
    import hakopy
    my_ch, other_ch, every = int(my_ch), int(other_ch), int(progress_every)
    chk = Lockstep(other_ch)

    def on_step(context):
        n = chk.steps + 1
        if hakopy.simulation_time() != n * DELTA_USEC:
            chk.mismatch(n, f"world time {hakopy.simulation_time()} us")
        if hakopy.asset_current_time() != (n - 1) * DELTA_USEC:
            chk.mismatch(n, f"asset time {hakopy.asset_current_time()} us")
        chk.check(n, hakopy.pdu_read(ROBOT, other_ch, PDU_BYTES))
        if not hakopy.pdu_write(ROBOT, my_ch, pdu(my_ch, n), PDU_BYTES):
            chk.mismatch(n, "pdu_write: " + hakopy.last_error())
        chk.steps = n
        if every and n % every == 0:
            print(f"step {n}")
        return 0

    if not register(name, on_simulation_step=on_step):
        return 1
    print("registered")
    r = hakopy.start()
    for m in chk.messages:
        print(m, file=sys.stderr)
    print(f"result steps={chk.steps} mismatches={chk.mismatches} same_step={chk.same_step} "
          f"start={r}")
    return 0


ROLES = {"lockstep": role_lockstep}


def main(roles=None):
    """A test script's main: its tests, or (argv "child ROLE ARGS...") one of its roles."""
    global HAKO_CMD, PEER, SERVICE_JSON
    if len(sys.argv) > 2 and sys.argv[1] == "child":
        # Python's own Ctrl-C handler even if the test runs with SIGINT ignored (a background
        # job of a shell inherits that): python.sigint sends it.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        table = dict(ROLES, **(roles or {}))
        sys.exit(table[sys.argv[2]](*sys.argv[3:]))
    ap = argparse.ArgumentParser()
    ap.add_argument("--hako-cmd", required=True)
    ap.add_argument("--peer", required=True)
    ap.add_argument("--service-json")
    opts, rest = ap.parse_known_args()
    # Absolute: the children run in the test's temporary folder.
    HAKO_CMD, PEER = os.path.abspath(opts.hako_cmd), os.path.abspath(opts.peer)
    SERVICE_JSON = opts.service_json and os.path.abspath(opts.service_json)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
