#!/bin/bash
# samples.fleet.cmds: per-drone commands (Hakoniwa's drone_cmd_move) beside the fleet's
# mission. fleet-drone-cmd, an asset, writes a move of drone 1 to (3, 0, 5) at world time
# 4.05 s; the drone's host applies it at 4.1 s and answers when the drone holds there. Flown
# 12 s by one host, and by two zone hosts (RD-Light, x = 0) while drone 1 crosses from the west
# zone to the east one. Checks: both answers say result_code 0 with the drone within 0.1 m of
# the target; the two runs end with the same bytes; drone 1 ends with the east host; hako-rd
# check on the zone hosts' traces; and drone 1 ends elsewhere than without the command.
#
# usage: test_fleet_cmds.sh BUILD_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../../test/common/hako_test.sh"

# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/fleet_test_kit.sh" "$1" cmds

# launch NAME CMD HOSTS...: each host "ASSET:ARGS" (ARGS: JSON strings, comma-separated).
launch_file() {
	local name=$1 cmd=$2 procs='' spec
	shift 2
	for spec in "$@"; do
		procs="$procs{\"name\": \"${spec%%:*}\", \"command\": \"fleet-host\",
     \"args\": [\"--drones\", \"32\", ${spec#*:}],
     \"domain_needs\": [\"--print-needs\"], \"wait_for\": {\"asset\": \"${spec%%:*}\"}},
    "
	done
	[ "$cmd" = yes ] && procs="$procs{\"name\": \"cmd\", \"command\": \"fleet-drone-cmd\",
     \"args\": [\"--drone\", \"1\", \"--move\", \"3,0,5\", \"--at-usec\", \"4050000\"],
     \"wait_for\": {\"asset\": \"fleet-drone-cmd\"}},
    "
	cat >"$dir/$name.json" <<JSON
{
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": 12000000},
  "log_dir": "$dir/$name-logs", "path": ["$bin"],
  "processes": [
    ${procs%,*}
  ]
}
JSON
}

mkdir -p "$dir/zones"
"$bin/fleet-host" --drones 32 --write-zones "$dir/zones" >/dev/null || fail "--write-zones"
rd=$dir/zones/fleet_rd.json
launch_file one yes "fleet-host-0:\"--drone-cmds\", \"--final\", \"$dir/one.txt\""
launch_file plain no "fleet-host-0:\"--final\", \"$dir/plain.txt\""
zhost() {
	echo "fleet-zone-$1:\"--zones\", \"$rd\", \"--node\", \"$1\", \"--drone-cmds\",
              \"--trace\", \"$dir/zones/trace-$1.jsonl\", \"--final\", \"$dir/zones/final-$1.txt\""
}
launch_file zones yes "$(zhost 1)" "$(zhost 2)"
run one
run plain
run zones

for name in one zones; do
	line=$(grep "fleet-drone-cmd: .* drone_cmd_move of Drone-1 answered" "$dir/$name.out")
	if ! awk '{ for (i = 1; i <= NF; i++) if ($i == "pos") { x = $(i+1); y = $(i+2); z = $(i+3) } }
	     END { d = (x-3)^2 + y^2 + (z-5)^2; exit !(d < 0.01) }' <<<"$line" ||
		! grep -q "result_code 0;" <<<"$line"; then
		fail "$name: drone 1 did not answer the move at its target: '$line'"
	fi
done
grep -q "fleet-host-0: 1 per-drone commands taken, 1 answered" "$dir/one.out" ||
	fail "one: the host did not take and answer one command"
# taken by the west host, answered by the east one after the hand-off: carried in the context
grep -q "fleet-zone-1: 1 per-drone commands taken, 0 answered" "$dir/zones.out" &&
	grep -q "fleet-zone-2: 0 per-drone commands taken, 1 answered" "$dir/zones.out" ||
	fail "zones: the command was not taken in the west zone and answered in the east one"
sort -n "$dir/zones"/final-*.txt >"$dir/zones.txt" 2>/dev/null
sort -n "$dir/one.txt" >"$dir/one-sorted.txt" 2>/dev/null
[ "$(wc -l <"$dir/zones.txt")" -eq 32 ] || fail "zones: not 32 final states"
cmp -s "$dir/zones.txt" "$dir/one-sorted.txt" ||
	fail "the final states of one host and of two zone hosts differ"
grep -q "^1 " "$dir/zones/final-2.txt" 2>/dev/null || fail "zones: drone 1 did not end in the east zone"
[ "$(grep '^1 ' "$dir/one.txt")" != "$(grep '^1 ' "$dir/plain.txt")" ] ||
	fail "drone 1 ends the same with and without the command"
rd_check zones "$dir/check.txt" '' '' "$dir/zones"/trace-*.jsonl

# shellcheck disable=SC2046
segments_gone $(launch_domains "$dir"/*.out)
[ "$fails" -ne 0 ] || grep -h -E "fleet-drone-cmd:|per-drone" "$dir/one.out" "$dir/zones.out"
finish samples.fleet.cmds
