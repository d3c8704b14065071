# The set-up shared by the forklift demo tests (test_forklift_run.sh, test_forklift_python.sh):
# hako-launch runs the two forklift hosts, a controller, the report and whatever the test adds,
# as fast as possible for stop_usec of simulated time, in a domain of its own (launch-<pid>) and
# a temporary folder $dir. The EXIT trap removes the folder, after showing the end of what
# hako-launch printed if a check failed.
#
# Needs: build (the build tree), name (the folder is /tmp/test-forklift-<name>-XXXXXX),
# stop_usec; sources test/common/hako_test.sh first.
# shellcheck shell=bash disable=SC2154 # build, name, stop_usec: the test's; fails: hako_test.sh's

launch=$build/bin/hako-launch
bin=$build/samples/forklift
steps=$((stop_usec / 1000))

dir=$(mktemp -d "/tmp/test-forklift-$name-XXXXXX") || exit 1

kit_cleanup() {
	[ "$fails" -eq 0 ] || show "$dir/out.txt" 40
	rm -rf "$dir"
}
trap kit_cleanup EXIT

# forklift_launch CONTROLLER [AFTER]: write $dir/launch.json, its processes the two hosts,
# CONTROLLER (the JSON object of the controller process), the report and AFTER (one more
# process object, "phase": "after"), and run hako-launch on it, its output in $dir/out.txt;
# die unless it exits 0.
forklift_launch() {
	cat >"$dir/launch.json" <<JSON
{
  "conductor": {"delta_usec": 1000, "max_delay_usec": 50000, "real_time_factor": 0,
                "stop_at_usec": $stop_usec},
  "log_dir": "$dir/logs",
  "path": ["$bin"],
  "processes": [
    {"name": "forklift-1", "command": "forklift-host",
     "args": ["--node", "1", "--out", "\${HAKO_LAUNCH_LOG_DIR}"],
     "wait_for": {"asset": "forklift-1"}},
    {"name": "forklift-2", "command": "forklift-host",
     "args": ["--node", "2", "--out", "\${HAKO_LAUNCH_LOG_DIR}"],
     "wait_for": {"asset": "forklift-2"}},
    $1,
    {"name": "report", "command": "forklift-report", "args": ["--dir", "\${HAKO_LAUNCH_LOG_DIR}"],
     "phase": "after"}${2:+,
    $2}
  ]
}
JSON
	unset HAKO_DOMAIN
	"$launch" "$dir/launch.json" >"$dir/out.txt" 2>&1
	local rc=$?
	[ "$rc" -eq 0 ] || die "hako-launch exited with $rc"
}

# report_continuity_exact: the report says every one of the run's $steps steps was identical.
report_continuity_exact() {
	grep -q "continuity     exact: $steps of $steps steps identical" "$dir/out.txt" ||
		fail "the report does not say continuity exact"
}

# handoff_lines: the number of hand-off lines the hosts printed.
handoff_lines() {
	grep -c "\] t=[0-9.]* s  hand-off [12] -> [12]  epoch [0-9]*  x=" "$dir/out.txt"
}
