#!/bin/bash
# samples.fleet.nodes: 64 drones on 2 hosts in 2 nodes. A federation of two nodes on this
# machine (srv-01 and cli-01, each its own domain and conductor, Dmax 10 ms), started by
# hako-launch from a federation file: fleet-host with drones 0-31 on srv-01, 32-63 on cli-01,
# 38 s of world time as fast as possible (take off, the "HAKO" letters, a circle, land). Then
# the same fleet by one host in one domain. Checks: both launches end well; the server stops
# at 38 s and both nodes report drift within Dmax; the report finds every drone within 0.1 m of
# its target in both formations and all landed; both nodes stop at exactly 38 s and the final
# states of the two nodes, one after the other, are the same bytes as the one host's; no
# domain segment is left.
#
# usage: test_fleet_nodes.sh BUILD_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../../test/common/hako_test.sh"

build=$(cd "$1" && pwd)
launch=$build/bin/hako-launch
hako_cmd=$build/bin/hako-cmd
bin=$build/samples/fleet
DMAX=${DMAX:-10000}
dir=$(mktemp -d /tmp/test-fleet-nodes-XXXXXX) || exit 1
# Unique per run: tests running alongside never share a domain.
dom_srv=fleetn-$$-a dom_cli=fleetn-$$-b dom_ref=fleetn-$$-ref
launch_pid=''
cleanup() {
	# A launch still running (the test was interrupted): SIGTERM through timeout to
	# hako-launch, which stops its nodes; SIGKILL to both if it has not ended in 10 s.
	if [ -n "$launch_pid" ] && alive "$launch_pid"; then
		local kids i
		kids=$(ps -o pid= --ppid "$launch_pid" 2>/dev/null)
		kill -TERM "$launch_pid" 2>/dev/null
		for ((i = 0; i < 100; i++)); do
			alive "$launch_pid" || break
			sleep 0.1
		done
		# shellcheck disable=SC2086 # one pid a word
		kill -KILL "$launch_pid" $kids 2>/dev/null
		wait "$launch_pid" 2>/dev/null
	fi
	# The nodes' processes die with their hako-launch (PR_SET_PDEATHSIG); what a killed
	# launch left of its domain goes here.
	[ -z "$hako_cmd" ] || clean_domains "$hako_cmd" "$dom_srv" "$dom_cli" "$dom_ref"
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
unset HAKO_DOMAIN HAKO_LOG NO_COLOR

# run_launch NAME FILE: hako-launch FILE, its output in $dir/NAME.txt, killed after 120 s.
run_launch() {
	timeout -s KILL 120 "$launch" "$2" >"$dir/$1.txt" 2>&1 &
	launch_pid=$!
	wait "$launch_pid"
	local rc=$?
	launch_pid=''
	return "$rc"
}

# A node: its conductor file (written by the caller) and its launch file, one fleet-host.
write_node() {
	local node=$1 domain=$2 first=$3 stop=$4
	mkdir -p "$dir/$node"
	cat >"$dir/$node/launch.json" <<JSON
{
  "domain": "$domain",
  "log_dir": "$dir/logs/$node",
  "path": ["$bin"],
  "conductor": {"federation": "$node.json"$stop},
  "processes": [
    {"name": "host-$first", "command": "fleet-host",
     "args": ["--drones", "64", "--first", "$first", "--count", "32",
              "--out", "$dir/nodes", "--final", "$dir/nodes/final-$first.bin"],
     "wait_for": {"asset": "fleet-host-$first"}}
  ]
}
JSON
}

# The federation on control port $1 and time port $1 + 1.
write_federation() {
	local ctl="tcp://127.0.0.1:$1" tim="tcp://127.0.0.1:$(($1 + 1))"
	write_node srv-01 "$dom_srv" 0 ', "stop_at_usec": 38000000'
	write_node cli-01 "$dom_cli" 32 ''
	cat >"$dir/srv-01/srv-01.json" <<JSON
{
  "server_machine_id": "srv-01",
  "clients": [{"client_node_id": "cli-01"}],
  "delta_time_usec": 1000,
  "max_delay_time_usec": $DMAX,
  "control_address": "$ctl",
  "time_address": "$tim"
}
JSON
	cat >"$dir/cli-01/cli-01.json" <<JSON
{
  "server_machine_id": "srv-01",
  "node_id": "cli-01",
  "delta_time_usec": 1000,
  "max_delay_time_usec": $DMAX,
  "control_address": "$ctl",
  "time_address": "$tim"
}
JSON
	cat >"$dir/federation.json" <<JSON
{
  "federation": {"name": "fleetn-$$", "nodes": ["srv-01/launch.json", "cli-01/launch.json"]},
  "log_dir": "$dir/logs/federation"
}
JSON
}

# The federation, on free ports below the ephemeral range; ports taken between the pick and
# the bind (another test) are retried with others, anything else is the result.
rc=1
for _ in 1 2 3; do
	base=$(free_ports 2) || die "no free ports"
	rm -rf "$dir/nodes" "$dir/logs"
	mkdir -p "$dir/nodes"
	write_federation "$base"
	run_launch nodes "$dir/federation.json"
	rc=$?
	if [ "$rc" -ne 0 ] && grep -qiE "address already in use|cannot listen" "$dir/nodes.txt"; then
		echo "ports from $base were taken meanwhile; again with others"
		continue
	fi
	break
done
log=$dir/nodes.txt
if [ "$rc" -ne 0 ]; then
	fail "federation: hako-launch exited with $rc"
	show "$log" 40
fi
file_has "$log" "^hako-launch: done: every node of the federation ended well"
file_has "$log" "^\[srv-01\] hako-launch: done: world time 38\.000 s in "

# Each node's drift table: one row, against the other node, within Dmax.
rows=0
for node in srv-01 cli-01; do
	file_has "$log" "^\[$node\] hako-launch: federation (server|client) $node, world time"
	while read -r peer state _ _ max _ samples; do
		rows=$((rows + 1))
		if [ "$max" -gt "$DMAX" ] || [ "$samples" -eq 0 ]; then
			fail "$node against $peer ($state): drift_max $max us (Dmax $DMAX), $samples samples"
		fi
	done < <(sed -n "s/^\[$node\] hako-launch:   \(\(srv\|cli\)-[0-9]*\) /\1 /p" "$log")
done
[ "$rows" -eq 2 ] || fail "$rows drift rows, expected 2 (one per node)"

# The report over both nodes' trajectories (one folder: both nodes are on this machine).
"$bin/fleet-report" --dir "$dir/nodes" >"$dir/report.txt" 2>&1 ||
	fail "fleet-report exited with $? on the nodes' trajectories"
file_has "$dir/report.txt" "fleet: 64 drones on 2 host\(s\), at the start: 32 on host 0; 32 on host 32;"
file_has "$dir/report.txt" "^  hako     at 17\.9 s: 64 of 64 drones within 0\.10 m"
file_has "$dir/report.txt" "^  circle   at 32\.9 s: 64 of 64 drones within 0\.10 m"
file_has "$dir/report.txt" "^  landed   at 38\.0 s: 64 of 64 drones on the ground"

# The same fleet by one host in one domain, to 38 s. Every node stops at the server's stop
# time (the conductor gives it to the clients with the start), so both hosts ran exactly
# 38000 steps and the two nodes' final states, one after the other, are the one host's bytes.
steps_of() {
	sed -n "s/^\[$1\] \[host-$2\] fleet-host-$2: done: \([0-9]*\) steps .*/\1/p" "$log" | head -n 1
}
n_srv=$(steps_of srv-01 0)
n_cli=$(steps_of cli-01 32)
same "steps of the server's host" "${n_srv:-none}" 38000
same "steps of the client's host" "${n_cli:-none}" 38000
# one_host STEPS: the one host's final states after STEPS world steps, in $dir/one-STEPS.bin.
one_host() {
	[ -s "$dir/one-$1.bin" ] && return 0
	cat >"$dir/one-$1.json" <<JSON
{
  "domain": "$dom_ref",
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": $(($1 * 1000))},
  "log_dir": "$dir/logs/one-$1", "path": ["$bin"],
  "processes": [{"name": "host-0", "command": "fleet-host",
                 "args": ["--drones", "64", "--final", "$dir/one-$1.bin"],
                 "wait_for": {"asset": "fleet-host-0"}}]
}
JSON
	run_launch "one-$1" "$dir/one-$1.json" ||
		{ fail "one host, $1 steps: hako-launch exited with $?"; show "$dir/one-$1.txt" 30; }
	[ "$(wc -l <"$dir/one-$1.bin" 2>/dev/null)" = 64 ] || fail "one host, $1 steps: not 64 final states"
}
one_host 38000
cp "$dir/one-38000.bin" "$dir/one.bin" 2>/dev/null
[ "$(wc -l <"$dir/nodes/final-0.bin" 2>/dev/null)" = 32 ] || fail "srv-01: not 32 final states"
[ "$(wc -l <"$dir/nodes/final-32.bin" 2>/dev/null)" = 32 ] || fail "cli-01: not 32 final states"
cat "$dir/nodes/final-0.bin" "$dir/nodes/final-32.bin" >"$dir/nodes.bin" 2>/dev/null
cmp -s "$dir/one.bin" "$dir/nodes.bin" ||
	fail "the final states of the two nodes differ from those of one host (first difference: $(cmp "$dir/one.bin" "$dir/nodes.bin" 2>&1 | head -n 1))"

segments_gone "$dom_srv" "$dom_cli" "$dom_ref"
if [ "$fails" -eq 0 ]; then
	grep -E "done:|hako-launch:   |federation (server|client)" "$log"
	sed 's/^/[report] /' "$dir/report.txt"
fi
finish samples.fleet.nodes
