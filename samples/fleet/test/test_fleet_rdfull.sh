#!/bin/bash
# samples.fleet.rd_full: zones across nodes. A federation of three nodes on this machine
# (srv-01, the server and RD authority, which only conducts; cli-01 and cli-02, each its own
# domain and a fleet host), 64 drones for 12 s of world time, Dmax 10 ms: each drone an EU of
# RD-Full, the airspace split at x = 0 between cli-01 (west) and cli-02 (east). The owner asks
# the server to move a drone that crosses; the server commits the move, the owner runs the
# drone to the commit point and hands it over with its context through the conductors.
# Checks: the federation ends well, drones were handed over both ways, the final states of the
# two hosts are the bytes of one host flying the fleet alone, and hako-rd check on both hosts'
# traces (one owner per drone at any world time, every model step once).
#
# With "lost" (samples.fleet.rd_full_lost): the nodes run as on three machines, one hako-launch
# each, and cli-02's whole node (its hako-launch, conductor and host) is killed with SIGKILL at
# once at about 5 s of world time. The server (on_client_loss "drop") drops it, and cli-01's host
# restarts each of its drones from the last checkpoint it sent the server (every 100 ms of world
# time). Checks: cli-01 ends with all 64 drones, their final states are still one host's bytes,
# the take-overs are restarts in the trace, and hako-rd check finds no violation.
#
# usage: test_fleet_rdfull.sh BUILD_DIR [lost]
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../../test/common/hako_test.sh"

# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/fleet_test_kit.sh" "$1" rdfull
mode=${2:-}
name=fleetf-$$
domains=("$name-srv-01" "$name-cli-01" "$name-cli-02" "$name-ref")

"$bin/fleet-host" --drones 64 --full cli-01,cli-02 --write-zones "$dir" >/dev/null ||
	die "fleet-host --full cli-01,cli-02 --write-zones"
grep -q '"mode": "full"' "$dir/fleet_rd.json" || die "the RD config is not RD-Full"

# node ID NODE_NUMBER: its launch file (one zone host, or nothing on the server).
write_node() {
	local id=$1 k=$2 procs=''
	if [ "$k" -gt 0 ]; then
		procs="{\"name\": \"zone-$k\", \"command\": \"fleet-host\",
     \"args\": [\"--drones\", \"64\", \"--zones\", \"$dir/fleet_rd.json\", \"--node\", \"$k\",
              \"--conductor\", \"$dir/$id/$id.json\", \"--trace\", \"$dir/trace-$k.jsonl\",
              \"--final\", \"$dir/final-$k.txt\", \"--out\", \"$dir/out\"],
     \"wait_for\": {\"asset\": \"fleet-zone-$k\"}}"
	fi
	node_launch "$id" "\"$bin\"" "$procs"
}

# The federation on control port $1 and time port $1 + 1.
write_federation() {
	rm -rf "$dir/out"
	mkdir -p "$dir/out"
	write_node srv-01 0
	write_node cli-01 1
	write_node cli-02 2
	federation_files "$1" cli-01 cli-02
}

# check_ref FINAL...: one host flies the fleet alone, to 12 s; the final states in FINAL...
# (all 64 drones) must be its bytes.
check_ref() {
	fly_ref "$name-ref"
	same_as_ref "the nodes" "$dir/zones.txt" "$@"
}

# After cli-02's node was killed: cli-01 carried every drone on, from the checkpoints.
lost_checks() {
	file_has "$dir/srv-01.txt" "client cli-02 lost .*: dropped, the federation goes on"
	file_has "$dir/cli-01.txt" "fleet-zone-1: .* [1-9][0-9]* taken from a lost host; 64 drones at the end"
	# How long in world time the lost node's drones were not flown: from its last world time
	# the server knew to the first restart.
	local last first
	last=$(sed -n "s/.*client cli-02 lost (its last world time \([0-9.]*\) s).*/\1/p" \
		"$dir/srv-01.txt")
	first=$(grep -m1 '"ev":"restart"' "$dir/trace-1.jsonl" | sed 's/.*"t":\([0-9]*\).*/\1/')
	[ -n "$last" ] && [ -n "$first" ] &&
		echo "take-over: lost at $last s of world time, first restart at $((first / 1000)) ms"
	check_ref "$dir/final-1.txt"
	rd_check '' "$dir/check.txt" "restarts +[1-9]" "hako-rd check saw no restart" \
		"$dir/trace-1.jsonl" "$dir/trace-2.jsonl"
	[ "$fails" -ne 0 ] || grep -hE "killed|lost|restarts it|drones at the end|violations" \
		"$dir/fed.txt" "$dir/check.txt" | head -n 12
}

fly_federation 2 srv-01 cli-01 cli-02
if [ "$mode" = lost ]; then
	lost_checks
	finish samples.fleet.rd_full_lost
	exit 0
fi
file_has "$dir/fed.txt" "^hako-launch: done: every node of the federation ended well"
for k in 1 2; do
	n=$(sed -n "s/.*fleet-zone-$k: \([0-9]*\) drones handed to the other zone.*/\1/p" "$dir/fed.txt")
	[ "${n:-0}" -gt 0 ] || fail "the host of RD node $k handed no drone over"
done

check_ref "$dir"/final-1.txt "$dir"/final-2.txt
rd_check '' "$dir/check.txt" "model steps 768000" "not every model step traced once" \
	"$dir/trace-1.jsonl" "$dir/trace-2.jsonl"

[ "$fails" -ne 0 ] || grep -hE "drones handed|done: every node|handoffs|violations" \
	"$dir/fed.txt" "$dir/check.txt"
finish samples.fleet.rd_full
