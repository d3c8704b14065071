#!/bin/bash
# samples.fleet.grid: zones on a grid for more than two hosts. 64 drones on a 2 x 2 grid of
# zones (the RD config's grid trigger), four hosts in one domain (RD-Light), 12 s of world time
# (take-off and the flight to the "HAKO" letters, across the cells). Checks: the final states
# are the bytes of one host flying the fleet alone; hako-rd check finds every model step once
# on the four traces; every host took drones over from another cell (hand-offs across the
# edges of several cells). Cleans up its domains and processes, also when it fails.
#
# usage: test_fleet_grid.sh BUILD_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../../test/common/hako_test.sh"

# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/fleet_test_kit.sh" "$1" grid

mkdir -p "$dir/grid"
"$bin/fleet-host" --drones 64 --zones-grid 2x2 --write-zones "$dir/grid" >/dev/null ||
	fail "fleet-host --zones-grid 2x2 --write-zones"
grep -q '"type": "grid"' "$dir/grid/fleet_rd.json" || fail "no grid trigger in the RD config"

procs='' sep=''
for k in 1 2 3 4; do
	procs="$procs$sep{\"name\": \"zone-$k\", \"command\": \"fleet-host\",
     \"args\": [\"--drones\", \"64\", \"--zones\", \"$dir/grid/fleet_rd.json\", \"--node\", \"$k\",
              \"--trace\", \"$dir/grid/trace-$k.jsonl\", \"--final\", \"$dir/grid/final-$k.txt\"],
     \"wait_for\": {\"asset\": \"fleet-zone-$k\"}}"
	sep=', '
done
cat >"$dir/grid.json" <<JSON
{
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": 12000000},
  "log_dir": "$dir/grid/logs", "path": ["$bin"],
  "processes": [$procs]
}
JSON
fly_ref ''
run grid

total=0
for k in 1 2 3 4; do
	grep -q "fleet-zone-$k: zone $k of a grid, 16 of 64 drones at the start" "$dir/grid.out" ||
		fail "grid: host $k did not start with its cell's 16 drones"
	took=$(sed -n "s/.*fleet-zone-$k: [0-9]* drones handed to other zones, \([0-9]*\) taken over.*/\1/p" \
		"$dir/grid.out")
	[ "${took:-0}" -gt 0 ] || fail "grid: host $k took no drone over from another cell"
	total=$((total + ${took:-0}))
done
same_as_ref grid "$dir/grid/final.txt" "$dir/grid"/final-*.txt
rd_check grid "$dir/grid/check.txt" "model steps 768000" "not every model step traced once" \
	"$dir/grid"/trace-*.jsonl

# shellcheck disable=SC2046
segments_gone $(launch_domains "$dir"/*.out)
[ "$fails" -ne 0 ] || { echo "grid: $total hand-offs"; grep -E "handed|done:" "$dir/grid.out"; }
finish samples.fleet.grid
