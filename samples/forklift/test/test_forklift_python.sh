#!/bin/bash
# The forklift demo with its controller in Python (DEMO=python) as a test: hako-launch runs the
# two hosts, forklift_controller.py (hakopy), the report and forklift_python_check.py, as fast
# as possible for 12 s of simulated time (at least 2 hand-offs), in a domain of its own
# (launch-<pid>) and a temporary folder. Passes only if hako-launch exits 0, the report says
# continuity exact, and the check says the model ran the mission the Python controller wrote and
# that every PDU it read was one the forklift's owner wrote.
#
# usage: test_forklift_python.sh BUILD_DIR PYTHON PYTHONPATH_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../../test/common/hako_test.sh"

build=$(cd "$1" && pwd)
python=$2
pythondir=$3
name=python
stop_usec=12000000
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/forklift_kit.sh"

controller=$(
	cat <<JSON
{"name": "controller", "command": "$python",
     "args": ["$bin/forklift_controller.py", "--every-usec", "4000000",
              "--out", "\${HAKO_LAUNCH_LOG_DIR}"],
     "env": {"PYTHONPATH": "$pythondir", "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"},
     "wait_for": {"log": "mission sent"}}
JSON
)
check=$(
	cat <<JSON
{"name": "python-check", "command": "$python",
     "args": ["$bin/forklift_python_check.py", "--dir", "\${HAKO_LAUNCH_LOG_DIR}"],
     "env": {"PYTHONDONTWRITEBYTECODE": "1"}, "phase": "after"}
JSON
)
forklift_launch "$controller" "$check"

grep -q "^\[controller\] mission sent: forward 1.80 m, lift 0.30 m, back 1.80 m" "$dir/out.txt" ||
	fail "the Python controller did not say it sent its mission"
grep -q "^\[controller\] done: $steps steps" "$dir/out.txt" ||
	fail "the Python controller did not run $steps steps"
report_continuity_exact
handoffs=$(handoff_lines)
[ "$handoffs" -ge 2 ] || fail "only $handoffs hand-offs (want >= 2)"
for check in mission steps reads; do
	grep -q "^\[python-check\]   $check *ok " "$dir/out.txt" || fail "python-check: $check is not ok"
done
grep -q "^\[python-check\] PASS: " "$dir/out.txt" || fail "python-check did not PASS"
[ -s "$dir/logs/forklift-python.csv" ] || fail "no forklift-python.csv"

[ "$fails" -ne 0 ] || echo "ok: $handoffs hand-offs, the Python controller's mission and $steps steps of reads checked"
finish samples.forklift.python
