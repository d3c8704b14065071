#!/bin/bash
# samples.fleet.run: 64 drones flown by fleet-host under hako-launch, as fast as possible, for
# 38 s of world time (take off, the "HAKO" letters, a circle, land), once by one host and once
# split over two hosts (32 + 32, lock-step in one domain). Checks: both runs end well; the
# report finds every drone within 0.1 m of its target in both formations and all landed; the
# drones' final states of the two runs are the same bytes (the split does not change a bit).
#
# usage: test_fleet_run.sh BUILD_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../../test/common/hako_test.sh"

build=$(cd "$1" && pwd)
launch=$build/launch/hako-launch
bin=$build/samples/fleet
dir=$(mktemp -d /tmp/test-fleet-run-XXXXXX) || exit 1
cleanup() {
	rm -rf "$dir"
}
trap cleanup EXIT
unset HAKO_DOMAIN

# launch.json of a run: one "first:count" per host.
write_launch() {
	local name=$1 procs='' sep='' spec first count
	shift
	for spec in "$@"; do
		first=${spec%%:*} count=${spec##*:}
		procs="$procs$sep{\"name\": \"host-$first\", \"command\": \"fleet-host\",
     \"args\": [\"--drones\", \"64\", \"--first\", \"$first\", \"--count\", \"$count\",
              \"--out\", \"$dir/$name\", \"--final\", \"$dir/$name/final-$first.bin\"],
     \"wait_for\": {\"asset\": \"fleet-host-$first\"}}"
		sep=$',\n    '
	done
	mkdir -p "$dir/$name"
	cat >"$dir/$name.json" <<JSON
{
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": 38000000},
  "log_dir": "$dir/$name/logs",
  "path": ["$bin"],
  "processes": [
    $procs,
    {"name": "report", "command": "fleet-report", "args": ["--dir", "$dir/$name"],
     "phase": "after"}
  ]
}
JSON
}

for run in one:0:64 two:0:32,32:32; do
	name=${run%%:*}
	IFS=, read -r -a specs <<<"${run#*:}"
	write_launch "$name" "${specs[@]}"
	timeout -s KILL 300 "$launch" "$dir/$name.json" >"$dir/$name.txt" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		fail "$name: hako-launch exited with $rc"
		show "$dir/$name.txt" 30
		continue
	fi
	grep -q "\[report\]   hako     at 17.9 s: 64 of 64 drones within 0.10 m" "$dir/$name.txt" ||
		fail "$name: not every drone in the HAKO formation"
	grep -q "\[report\]   circle   at 32.9 s: 64 of 64 drones within 0.10 m" "$dir/$name.txt" ||
		fail "$name: not every drone in the circle"
	grep -q "\[report\]   landed   at 38.0 s: 64 of 64 drones on the ground" "$dir/$name.txt" ||
		fail "$name: not every drone landed"
	[ -s "$dir/$name/fleet-xy.svg" ] || fail "$name: no plot"
done
grep -q "fleet: 64 drones on 2 host(s): 32 from drone 1; 32 from drone 33;" "$dir/two.txt" ||
	fail "two: the report does not see two hosts of 32"
cat "$dir/two/final-0.bin" "$dir/two/final-32.bin" >"$dir/two.bin" 2>/dev/null
[ -s "$dir/one/final-0.bin" ] || fail "one: no final states"
cmp -s "$dir/one/final-0.bin" "$dir/two.bin" ||
	fail "the final states of one host and of two hosts differ"
[ "$fails" -ne 0 ] || grep -E "\[report\]|done:" "$dir/two.txt"
finish samples.fleet.run
