#!/bin/bash
# samples.fleet.rd_full_balance: load balancing across the nodes of a federation (RD-Full). Four
# nodes on this machine: srv-01, the server and RD authority, runs no drone but fleet-monitor
# --balance; cli-01, cli-02 and cli-03 each have their own domain and one fleet host. 64 drones
# start 40 / 16 / 8 and fly for 12 s of world time at Dmax 10 ms. Every node runs hako-bridge
# with the files fleet-host --write-bridges wrote: each client sends its host's load record
# (FleetHost-<k>/0) to srv-01, srv-01 sends the monitor's orders (FleetMonitor/0) to every
# client. A host carries out a MOVE order by asking the server to move that many drones, one ask
# a drone; the server commits each move and the conductors carry the drone's context across.
# Checks: the federation ends well; the monitor ordered at least one move and a host carried it
# out (moves committed by the server); the counts at the end are more even than at the start;
# the final states of the three hosts are the bytes of one host flying the fleet alone; hako-rd
# check on the three hosts' traces (every model step once, no violation).
#
# With "lost" (samples.fleet.rd_full_balance_lost): the nodes run as on four machines, one
# hako-launch each, and cli-03's whole node (its hako-launch, conductor, host and bridge) is
# killed with SIGKILL at once at about 5 s of world time. The server drops it ("on_client_loss":
# "drop") and restarts its drones on a live host from their last checkpoints; the monitor sees
# host 3's load record stop, says it is lost, orders no take-over and balances the two others.
# Checks: those lines, no take-over order, the two hosts end with all 64 drones, still one
# host's bytes, and hako-rd check finds the restarts and no violation.
#
# usage: test_fleet_rdbalance.sh BUILD_DIR [lost]
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../../test/common/hako_test.sh"

# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/fleet_test_kit.sh" "$1" rdbal
name=fleetb-$$
mode=${2:-}
clients="cli-01 cli-02 cli-03"
domains=("$name-srv-01" "$name-cli-01" "$name-cli-02" "$name-cli-03" "$name-ref")

# node ID NODE_NUMBER: its launch file. The server: the monitor (once it has made the fleet's
# channels) and its bridge; a client: its host, then its bridge (the host made its channels).
write_node() {
	local id=$1 k=$2 procs
	if [ "$k" -gt 0 ]; then
		procs="{\"name\": \"host-$k\", \"command\": \"fleet-host\",
     \"args\": [\"--drones\", \"64\", \"--zones\", \"$dir/fleet_rd.json\", \"--node\", \"$k\",
              \"--conductor\", \"$dir/$id/$id.json\", \"--trace\", \"$dir/trace-$k.jsonl\",
              \"--final\", \"$dir/final-$k.txt\"],
     \"wait_for\": {\"asset\": \"fleet-zone-$k\"}},"
	else
		procs="{\"name\": \"monitor\", \"command\": \"fleet-monitor\",
     \"args\": [\"--zones\", \"$dir/fleet_rd.json\", \"--balance\"],
     \"wait_for\": {\"log\": \"drones on 3 hosts\"}},"
	fi
	node_launch "$id" "\"$bin\", \"$build/bin\"" "$procs
    {\"name\": \"bridge\", \"command\": \"hako-bridge\",
     \"args\": [\"$dir/bridge/fleet_bridge.json\", \"--node\", \"$id\", \"-v\"],
     \"wait_for\": {\"log\": \"node '$id': \"}}"
}

# The federation on control port $1, time port $1 + 1; srv-01's bridge listens on $1 + 2.
write_federation() {
	local id k=0
	rm -rf "$dir/bridge"
	"$bin/fleet-host" --drones 64 --balance 40,16 --full cli-01,cli-02,cli-03 \
		--write-zones "$dir" --write-bridges "127.0.0.1:$(($1 + 2))" >/dev/null ||
		die "fleet-host --balance 40,16 --full cli-01,cli-02,cli-03 --write-zones --write-bridges"
	write_node srv-01 0
	for id in $clients; do
		k=$((k + 1))
		write_node "$id" "$k"
	done
	# shellcheck disable=SC2086
	federation_files "$1" $clients
}

# shellcheck disable=SC2086
fly_federation 3 srv-01 $clients

if [ "$mode" = lost ]; then
	file_has "$dir/fed.txt" "client cli-03 lost .*: dropped, the federation goes on"
	file_has "$dir/fed.txt" "fleet-monitor: t=.*: host 3 \(cli-03\) sent no load record .*: lost; the server restarts its drones"
	file_lacks "$dir/fed.txt" "takes them over from their last checkpoints|taking over the drones of the lost host"
	sum=0 taken=0
	for k in 1 2; do
		n=$(sed -n "s/.*fleet-zone-$k: .* \([0-9]*\) drones at the end.*/\1/p" "$dir/fed.txt")
		l=$(sed -n "s/.*fleet-zone-$k: .* \([0-9]*\) taken from a lost host.*/\1/p" "$dir/fed.txt")
		sum=$((sum + ${n:-0}))
		taken=$((taken + ${l:-0}))
	done
	[ "$sum" -eq 64 ] || fail "the two live hosts end with $sum drones, not 64"
	[ "$taken" -gt 0 ] || fail "no drone of the lost node was restarted on a live host"
	fly_ref "$name-ref"
	same_as_ref "the nodes" "$dir/nodes.txt" "$dir"/final-1.txt "$dir"/final-2.txt
	rd_check '' "$dir/check.txt" "restarts +[1-9]" "hako-rd check saw no restart" \
		"$dir"/trace-1.jsonl "$dir"/trace-2.jsonl "$dir"/trace-3.jsonl
	[ "$fails" -ne 0 ] || grep -hE "killed|fleet-monitor: t=|lost|asked of the server|drones at the end|restarts|violations" \
		"$dir/fed.txt" "$dir/check.txt"
	finish samples.fleet.rd_full_balance_lost
	exit 0
fi
file_has "$dir/fed.txt" "^hako-launch: done: every node of the federation ended well"

# The start: 40 / 16 / 8.
start=$(sed -n 's/.*fleet-zone-\([123]\): host [123] of 64 drones, \([0-9]*\) at the start.*/\1:\2/p' \
	"$dir/fed.txt" | sort | tr '\n' ' ')
[ "$start" = "1:40 2:16 3:8 " ] || fail "the hosts started with '$start', not 40/16/8"
# An order across nodes: the monitor on srv-01 gave it from the load records its bridge brought,
# the host got it through its bridge and the server committed the moves it asked for.
file_has "$dir/fed.txt" "fleet-monitor: t=.*: host 1 \(cli-01\) spends .* on 40 drones.*moving [0-9]+ drones to host [23] \(order 1\)"
grep -qE "fleet-zone-[123]: order [0-9]+: [0-9]+ drones to node [123] \(cli-0[123]\) asked of the server: [1-9][0-9]* committed" \
	"$dir/fed.txt" || fail "no host carried out an order (no move committed by the server)"
min=64 max=0 sum=0
for k in 1 2 3; do
	n=$(sed -n "s/.*fleet-zone-$k: .* \([0-9]*\) drones at the end.*/\1/p" "$dir/fed.txt")
	[ -n "$n" ] || { fail "host $k said no count at the end"; n=0; }
	[ "$n" -lt "$min" ] && min=$n
	[ "$n" -gt "$max" ] && max=$n
	sum=$((sum + n))
done
[ "$sum" -eq 64 ] || fail "the hosts end with $sum drones, not 64"
if [ $((max - min)) -ge 32 ] || [ "$max" -ge 40 ]; then
	fail "counts at the end from $min to $max (8 to 40 at the start)"
fi

fly_ref "$name-ref"
same_as_ref "the nodes" "$dir/nodes.txt" "$dir"/final-1.txt "$dir"/final-2.txt "$dir"/final-3.txt

rd_check '' "$dir/check.txt" "model steps 768000" "not every model step traced once" \
	"$dir"/trace-1.jsonl "$dir"/trace-2.jsonl "$dir"/trace-3.jsonl

[ "$fails" -ne 0 ] || grep -hE "fleet-monitor: t=|asked of the server|drones at the end|done: every node|handoffs|violations" \
	"$dir/fed.txt" "$dir/check.txt"
finish samples.fleet.rd_full_balance
