#!/bin/bash
# show_config.sh: the files of the drone show (samples/show), one folder a node.
#
#   show_config.sh --dir DIR --bin BUILD_DIR --name NAME [--drones N] [--nodes K]
#                  [--loopback BASE_PORT] [--dmax-usec D] [--stop-usec T] [--even]
#
# A federation of K + 1 nodes: srv-01 conducts (the RD-Full authority, the fleet monitor and its
# bridge, no drone); cli-01..cli-0K each run one fleet host and its bridge. The fleet is the
# RD-Full balance config fleet-host writes (--balance ... --full cli-01,... --write-zones DIR
# --write-bridges ...): every drone an EU with every client node a candidate, host k on node
# cli-0k, the monitor on srv-01 moving drones between nodes by their step times. Hosts start
# uneven (the first with 1.5 times the mean, the last with about half of it: the monitor has
# work from the start) unless --even.
#
# Addresses: in the lab (the default) node i has 10.201.0.(11 + i) (srv-01 .11) and every
# server binds its own lab address on fixed ports (each node has its own network); with
# --loopback BASE_PORT every node is 127.0.0.1 and the ports are BASE_PORT.. (control, time,
# the monitor's bridge).
#
# Writes DIR/lab.json (the hako-netlab lab file), DIR/fleet_rd.json and its pdudef,
# DIR/bridge/, DIR/<node>/launch.json and DIR/<node>/<node>.json (the conductor files, their
# keys made), DIR/nodes (one line a node: name, address, domain) and DIR/show.env.
set -eu

dir='' bin='' name='' drones=1024 nodes=8 loopback='' dmax=20000 stop=38000000 even=''
while [ $# -gt 0 ]; do
	case $1 in
	--dir)
		dir=$2
		shift
		;;
	--bin)
		bin=$2
		shift
		;;
	--name)
		name=$2
		shift
		;;
	--drones)
		drones=$2
		shift
		;;
	--nodes)
		nodes=$2
		shift
		;;
	--loopback)
		loopback=$2
		shift
		;;
	--dmax-usec)
		dmax=$2
		shift
		;;
	--stop-usec)
		stop=$2
		shift
		;;
	--even) even=1 ;;
	*)
		echo "show_config.sh: unknown argument $1" >&2
		exit 2
		;;
	esac
	shift
done
if [ -z "$dir" ] || [ -z "$bin" ] || [ -z "$name" ]; then
	echo "usage: show_config.sh --dir DIR --bin BUILD_DIR --name NAME [--drones N] [--nodes K]" \
		"[--loopback BASE_PORT] [--dmax-usec D] [--stop-usec T] [--even]" >&2
	exit 2
fi
if [ "$nodes" -lt 2 ] || [ "$nodes" -gt 16 ]; then
	echo "show_config.sh: --nodes $nodes: 2..16 client nodes (the fleet's balance takes 16 hosts)" >&2
	exit 2
fi
bin=$(cd "$bin" && pwd)
fleet=$bin/samples/fleet
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# Node i (0: srv-01) and its address and ports.
node_name() { if [ "$1" -eq 0 ]; then echo srv-01; else printf 'cli-%02d\n' "$1"; fi; }
node_addr() { if [ -n "$loopback" ]; then echo 127.0.0.1; else echo "10.201.0.$((11 + $1))"; fi; }
port0=${loopback:-7000}
srv=$(node_addr 0)
ctl="tcp://$srv:$port0" tim="tcp://$srv:$((port0 + 1))" bridge_at="$srv:$((port0 + 2))"

clients='' balance=''
for ((i = 1; i <= nodes; i++)); do
	clients="$clients${clients:+,}$(node_name "$i")"
done
# Host k of K starts with mean * (1.5 - (k - 1) / (K - 1)), the last host with the rest.
if [ -z "$even" ]; then
	for ((k = 1; k < nodes; k++)); do
		balance="$balance${balance:+,}$((drones * (3 * (nodes - 1) - 2 * (k - 1)) / (2 * nodes * (nodes - 1))))"
	done
else
	for ((k = 1; k < nodes; k++)); do
		balance="$balance${balance:+,}$((drones * k / nodes - drones * (k - 1) / nodes))"
	done
fi

rm -rf "$dir/bridge"
"$fleet/fleet-host" --drones "$drones" --balance "$balance" --full "$clients" \
	--write-zones "$dir" --write-bridges "$bridge_at" --server srv-01 >/dev/null

# The lab file: every node and its address.
{
	printf '{"subnet": "10.201.0.0/24", "switch": "10.201.0.1",\n "nodes": ['
	for ((i = 0; i <= nodes; i++)); do
		[ "$i" -eq 0 ] || printf ',\n           '
		printf '{"name": "%s", "address": "10.201.0.%d"}' "$(node_name "$i")" $((11 + i))
	done
	printf ']}\n'
} >"$dir/lab.json"

: >"$dir/nodes"
conductors=()
for ((i = 0; i <= nodes; i++)); do
	id=$(node_name "$i")
	mkdir -p "$dir/$id"
	conductors+=("$dir/$id/$id.json")
	echo "$id $(node_addr "$i") $name-$id" >>"$dir/nodes"
	common="\"delta_time_usec\": 1000, \"max_delay_time_usec\": $dmax,
 \"control_address\": \"$ctl\", \"time_address\": \"$tim\", \"rd_config_path\": \"$dir/fleet_rd.json\""
	if [ "$i" -eq 0 ]; then
		list=''
		for ((k = 1; k <= nodes; k++)); do
			list="$list${list:+, }{\"client_node_id\": \"$(node_name "$k")\"}"
		done
		# drop: a lost client does not stop the show; the server restarts its drones elsewhere.
		cat >"$dir/$id/$id.json" <<JSON
{"server_machine_id": "srv-01", "on_client_loss": "drop", "peer_timeout_ms": 1000,
 "clients": [$list],
 $common}
JSON
		procs="{\"name\": \"monitor\", \"command\": \"fleet-monitor\",
     \"args\": [\"--zones\", \"$dir/fleet_rd.json\", \"--balance\"],
     \"wait_for\": {\"log\": \"drones on $nodes hosts\"}},"
		stopkey=", \"stop_at_usec\": $stop"
	else
		cat >"$dir/$id/$id.json" <<JSON
{"server_machine_id": "srv-01", "node_id": "$id",
 $common}
JSON
		procs="{\"name\": \"host\", \"command\": \"fleet-host\",
     \"args\": [\"--drones\", \"$drones\", \"--zones\", \"$dir/fleet_rd.json\", \"--node\", \"$i\",
              \"--conductor\", \"$dir/$id/$id.json\", \"--trace\", \"$dir/trace/rd-$id.jsonl\",
              \"--final\", \"$dir/final/$id.txt\", \"--out\", \"$dir/out\"],
     \"domain_needs\": [\"--print-needs\"],
     \"wait_for\": {\"asset\": \"fleet-zone-$i\", \"timeout_ms\": 60000}},"
		stopkey=''
	fi
	cat >"$dir/$id/launch.json" <<JSON
{
  "domain": "$name-$id", "log_dir": "$dir/logs/$id", "path": ["$fleet", "$bin/bin"],
  "conductor": {"federation": "$id.json", "trace": "$dir/trace/conductor-$id.csv",
                "start_timeout_ms": 120000$stopkey},
  "grace_ms": 10000,
  "processes": [$procs
    {"name": "bridge", "command": "hako-bridge",
     "args": ["$dir/bridge/fleet_bridge.json", "--node", "$id", "-v"],
     "wait_for": {"log": "node '$id': "}}]
}
JSON
done
mkdir -p "$dir/trace" "$dir/final" "$dir/out"
"$bin/bin/hako-conductor" keygen "${conductors[@]}" >/dev/null

cat >"$dir/show.env" <<ENV
drones=$drones
nodes=$nodes
dmax=$dmax
stop=$stop
balance=$balance
mode=${loopback:+loopback}${loopback:-lab}
ENV
