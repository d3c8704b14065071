#!/bin/bash
# samples.fleet.run: 64 drones flown by fleet-host under hako-launch, as fast as possible, for
# 38 s of world time (take off, the "HAKO" letters, a circle, land), once by one host and once
# split over two hosts (32 + 32, lock-step in one domain). Checks: both runs end well; the
# report finds every drone within 0.1 m of its target in both formations and all landed; the
# drones' final states of the two runs are the same bytes (the split does not change a bit).
# Then zones: 32 drones handed between two hosts as they cross x = 0 (RD-Light), the same bytes
# as one host, and hako-rd check on the hosts' traces.
#
# usage: test_fleet_run.sh BUILD_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../../test/common/hako_test.sh"

build=$(cd "$1" && pwd)
launch=$build/bin/hako-launch
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
grep -q "fleet: 64 drones on 2 host(s), at the start: 32 on host 0; 32 on host 32;" "$dir/two.txt" ||
	fail "two: the report does not see two hosts of 32"
cat "$dir/two/final-0.bin" "$dir/two/final-32.bin" >"$dir/two.bin" 2>/dev/null
[ -s "$dir/one/final-0.bin" ] || fail "one: no final states"
cmp -s "$dir/one/final-0.bin" "$dir/two.bin" ||
	fail "the final states of one host and of two hosts differ"

# Zones: 32 drones, the airspace split at x = 0 between two hosts, drones handed over (RD-Light)
# as they cross; 12 s (take-off and the flight to the letters). Against one host: the same bytes;
# the hosts' RD traces: one owner per drone at a time, every model step once.
zdir=$dir/zones
mkdir -p "$zdir"
"$bin/fleet-host" --drones 32 --write-zones "$zdir" >/dev/null || fail "fleet-host --write-zones"
zproc() {
	echo "{\"name\": \"zone-$1\", \"command\": \"fleet-host\",
     \"args\": [\"--drones\", \"32\", \"--zones\", \"$zdir/fleet_rd.json\", \"--node\", \"$1\",
              \"--trace\", \"$zdir/trace-$1.jsonl\", \"--final\", \"$zdir/final-$1.txt\"],
     \"wait_for\": {\"asset\": \"fleet-zone-$1\"}}"
}
cat >"$dir/zones.json" <<JSON
{
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": 12000000},
  "log_dir": "$zdir/logs", "path": ["$bin"],
  "processes": [$(zproc 1), $(zproc 2)]
}
JSON
cat >"$dir/ref.json" <<JSON
{
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": 12000000},
  "log_dir": "$zdir/logs-ref", "path": ["$bin"],
  "processes": [{"name": "ref", "command": "fleet-host",
                 "args": ["--drones", "32", "--final", "$zdir/ref.txt"],
                 "wait_for": {"asset": "fleet-host-0"}}]
}
JSON
for run in zones ref; do
	timeout -s KILL 300 "$launch" "$dir/$run.json" >"$dir/$run.txt" 2>&1 ||
		{ fail "$run: hako-launch failed"; show "$dir/$run.txt" 30; }
done
handed=$(sed -n 's/.*fleet-zone-1: \([0-9]*\) drones handed to the other zone.*/\1/p' "$dir/zones.txt")
[ "${handed:-0}" -gt 0 ] || fail "zones: no drone was handed over"
sort -n "$zdir/final-1.txt" "$zdir/final-2.txt" >"$zdir/zones.txt" 2>/dev/null
sort -n "$zdir/ref.txt" >"$zdir/ref-sorted.txt" 2>/dev/null
[ "$(wc -l <"$zdir/zones.txt")" -eq 32 ] || fail "zones: not 32 final states"
cmp -s "$zdir/zones.txt" "$zdir/ref-sorted.txt" ||
	fail "zones: the final states differ from one host's"
"$build/bin/hako-rd" check "$zdir/trace-1.jsonl" "$zdir/trace-2.jsonl" >"$zdir/check.txt" 2>&1 ||
	{ fail "zones: hako-rd check"; show "$zdir/check.txt" 10; }
grep -q "model steps 384000" "$zdir/check.txt" || fail "zones: not every model step traced once"

[ "$fails" -ne 0 ] || grep -E "\[report\]|done:|handed" "$dir/two.txt" "$dir/zones.txt"
finish samples.fleet.run
