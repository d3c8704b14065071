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

build=$(cd "$1" && pwd)
launch=$build/bin/hako-launch
hako_cmd=$build/bin/hako-cmd
bin=$build/samples/fleet
dir=$(mktemp -d /tmp/test-fleet-rdfull-XXXXXX) || exit 1
mode=${2:-}
name=fleetf-$$
lpid=''
npids=()
cleanup() {
	local p
	for p in $lpid "${npids[@]}"; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	clean_domains "$hako_cmd" "$name-srv-01" "$name-cli-01" "$name-cli-02" "$name-ref"
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
unset HAKO_DOMAIN

"$bin/fleet-host" --drones 64 --full cli-01,cli-02 --write-zones "$dir" >/dev/null ||
	die "fleet-host --full cli-01,cli-02 --write-zones"
grep -q '"mode": "full"' "$dir/fleet_rd.json" || die "the RD config is not RD-Full"

# node ID NODE_NUMBER: its launch file (one zone host, or nothing on the server).
write_node() {
	local id=$1 k=$2 procs=''
	mkdir -p "$dir/$id"
	if [ "$k" -gt 0 ]; then
		procs="{\"name\": \"zone-$k\", \"command\": \"fleet-host\",
     \"args\": [\"--drones\", \"64\", \"--zones\", \"$dir/fleet_rd.json\", \"--node\", \"$k\",
              \"--conductor\", \"$dir/$id/$id.json\", \"--trace\", \"$dir/trace-$k.jsonl\",
              \"--final\", \"$dir/final-$k.txt\", \"--out\", \"$dir/out\"],
     \"wait_for\": {\"asset\": \"fleet-zone-$k\"}}"
	fi
	local stop=''
	[ "$id" = srv-01 ] && stop=', "stop_at_usec": 12000000'
	cat >"$dir/$id/launch.json" <<JSON
{
  "domain": "$name-$id", "log_dir": "$dir/logs/$id", "path": ["$bin"],
  "conductor": {"federation": "$id.json"$stop},
  "processes": [$procs]
}
JSON
}

# The federation on control port $1 and time port $1 + 1.
write_federation() {
	local ctl="tcp://127.0.0.1:$1" tim="tcp://127.0.0.1:$(($1 + 1))" id
	write_node srv-01 0
	write_node cli-01 1
	write_node cli-02 2
	local loss=''
	[ "$mode" = lost ] && loss='"on_client_loss": "drop", "peer_timeout_ms": 1000,'
	cat >"$dir/srv-01/srv-01.json" <<JSON
{"server_machine_id": "srv-01", $loss
 "clients": [{"client_node_id": "cli-01"}, {"client_node_id": "cli-02"}],
 "delta_time_usec": 1000, "max_delay_time_usec": 10000,
 "control_address": "$ctl", "time_address": "$tim", "rd_config_path": "$dir/fleet_rd.json"}
JSON
	for id in cli-01 cli-02; do
		cat >"$dir/$id/$id.json" <<JSON
{"server_machine_id": "srv-01", "node_id": "$id",
 "delta_time_usec": 1000, "max_delay_time_usec": 10000,
 "control_address": "$ctl", "time_address": "$tim", "rd_config_path": "$dir/fleet_rd.json"}
JSON
	done
	cat >"$dir/federation.json" <<JSON
{"federation": {"name": "$name", "nodes": ["srv-01/launch.json", "cli-01/launch.json",
                                           "cli-02/launch.json"]},
 "log_dir": "$dir/logs/federation"}
JSON
}

# check_ref FINAL...: one host flies the fleet alone, to 12 s; the final states in FINAL...
# (all 64 drones) must be its bytes.
check_ref() {
	cat >"$dir/ref.json" <<JSON
{"domain": "$name-ref",
 "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": 12000000},
 "log_dir": "$dir/logs/ref", "path": ["$bin"],
 "processes": [{"name": "ref", "command": "fleet-host",
                "args": ["--drones", "64", "--final", "$dir/ref.txt"],
                "wait_for": {"asset": "fleet-host-0"}}]}
JSON
	timeout -s KILL 120 "$launch" "$dir/ref.json" >"$dir/ref.out" 2>&1 ||
		{ fail "ref: hako-launch failed"; show "$dir/ref.out" 20; }
	sort -n "$@" >"$dir/zones.txt" 2>/dev/null
	sort -n "$dir/ref.txt" >"$dir/ref-sorted.txt" 2>/dev/null
	[ "$(wc -l <"$dir/zones.txt")" -eq 64 ] || fail "not 64 final states from the nodes"
	cmp -s "$dir/zones.txt" "$dir/ref-sorted.txt" ||
		fail "the final states of the nodes differ from one host's"
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
	"$build/bin/hako-rd" check "$dir/trace-1.jsonl" "$dir/trace-2.jsonl" >"$dir/check.txt" 2>&1 ||
		{ fail "hako-rd check"; show "$dir/check.txt" 10; }
	grep -qE "restarts +[1-9]" "$dir/check.txt" || {
		fail "hako-rd check saw no restart"
		show "$dir/check.txt" 10
	}
	[ "$fails" -ne 0 ] || grep -hE "killed|lost|restarts it|drones at the end|violations" \
		"$dir/fed.txt" "$dir/check.txt" | head -n 12
}

# world_usec DOMAIN: the domain's world time in us (nothing if it has none yet).
world_usec() {
	"$hako_cmd" -d "$1" status 2>/dev/null | awk '/^world time/ {printf "%d", $3 * 1000000}'
}

# The lost mode: one hako-launch per node; cli-02's node is killed whole at 5 s of world time.
run_nodes() {
	local id i t pids
	npids=()
	# What the federation file does for its nodes: the keys of the control plane.
	"$build/bin/hako-conductor" keygen "$dir"/srv-01/srv-01.json "$dir"/cli-01/cli-01.json \
		"$dir"/cli-02/cli-02.json >/dev/null || die "hako-conductor keygen"
	for id in srv-01 cli-01 cli-02; do
		timeout -s KILL 300 "$launch" "$dir/$id/launch.json" >"$dir/$id.txt" 2>&1 &
		npids+=($!)
	done
	for ((i = 0; i < 2400; i++)); do
		t=$(world_usec "$name-cli-02")
		[ -n "$t" ] && [ "$t" -ge 5000000 ] && break
		alive "${npids[2]}" || break
		sleep 0.05
	done
	[ -n "$t" ] && [ "$t" -ge 5000000 ] || { fail "cli-02 never reached 5 s of world time"; return 1; }
	# Every process of the node at once: its hako-launch (which runs its conductor) and the
	# processes it started.
	pids="${npids[2]} $(pgrep -P "${npids[2]}" | tr '\n' ' ')"
	# shellcheck disable=SC2086
	kill -KILL $pids
	echo "killed cli-02's node at world time $t us: pids $pids" >"$dir/fed.txt"
	wait "${npids[2]}" 2>/dev/null
	wait "${npids[0]}"
	rc=$?
	wait "${npids[1]}" || rc=$?
	npids=()
	cat "$dir/srv-01.txt" "$dir/cli-01.txt" >>"$dir/fed.txt"
}

rc=1
for _ in 1 2 3; do
	base=$(free_ports 2) || die "no free ports"
	rm -rf "$dir/out" "$dir/logs" "$dir"/trace-* "$dir"/final-*
	mkdir -p "$dir/out"
	write_federation "$base"
	if [ "$mode" = lost ]; then
		run_nodes
		clean_domains "$hako_cmd" "$name-cli-02" # a machine that died leaves nothing here
	else
		timeout -s KILL 300 "$launch" "$dir/federation.json" >"$dir/fed.txt" 2>&1 &
		lpid=$!
		wait "$lpid"
		rc=$?
		lpid=''
	fi
	if [ "$rc" -ne 0 ] && grep -qiE "address already in use|cannot listen" "$dir/fed.txt"; then
		echo "ports from $base were taken meanwhile; again with others"
		continue
	fi
	break
done
if [ "$rc" -ne 0 ]; then
	fail "federation: hako-launch exited with $rc"
	show "$dir/fed.txt" 40
fi
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
"$build/bin/hako-rd" check "$dir/trace-1.jsonl" "$dir/trace-2.jsonl" >"$dir/check.txt" 2>&1 ||
	{ fail "hako-rd check"; show "$dir/check.txt" 10; }
grep -q "model steps 768000" "$dir/check.txt" || {
	fail "not every model step traced once"
	show "$dir/check.txt" 10
}

[ "$fails" -ne 0 ] || grep -hE "drones handed|done: every node|handoffs|violations" \
	"$dir/fed.txt" "$dir/check.txt"
finish samples.fleet.rd_full
