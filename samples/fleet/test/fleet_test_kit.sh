# fleet_test_kit.sh: what the fleet's shell tests share. Sourced (after test/common/hako_test.sh)
# as `. fleet_test_kit.sh BUILD_DIR NAME`: sets build, launch, hako_cmd, bin (the fleet's
# programs) and dir (a new /tmp/test-fleet-NAME-XXXXXX), and an EXIT trap that stops the
# hako-launch of $lpid and those of $npids, removes the domains hako-launch named in
# "$dir"/*.out and those in $domains, and the folder (kept if KEEP is set).
# shellcheck shell=bash disable=SC2034

build=$(cd "$1" && pwd)
launch=$build/bin/hako-launch
hako_cmd=$build/bin/hako-cmd
bin=$build/samples/fleet
dir=$(mktemp -d "/tmp/test-fleet-$2-XXXXXX") || exit 1
lpid=''
npids=()
domains=()
name=fleet-$$ # the federation's (below)
mode=''
kit_cleanup() {
	local p
	for p in $lpid "${npids[@]}"; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# shellcheck disable=SC2046
	clean_domains "$hako_cmd" "${domains[@]}" $(launch_domains "$dir"/*.out)
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap kit_cleanup EXIT
trap 'exit 130' INT TERM
unset HAKO_DOMAIN

# run NAME [LINES]: hako-launch NAME.json into NAME.out, in the background (stopped by the trap
# if the test dies); shows LINES (30) of it if it fails.
run() {
	timeout -s KILL 300 "$launch" "$dir/$1.json" >"$dir/$1.out" 2>&1 &
	lpid=$!
	wait "$lpid" || { fail "$1: hako-launch failed"; show "$dir/$1.out" "${2:-30}"; }
	lpid=''
}

# fly_ref DOMAIN: one host flies 64 drones alone for 12 s of world time (Dmax 1 ms) in domain
# DOMAIN (hako-launch's default if ''); its final states, sorted, in $dir/ref-sorted.txt.
fly_ref() {
	local domain=''
	[ -n "$1" ] && domain="\"domain\": \"$1\","
	cat >"$dir/ref.json" <<JSON
{$domain
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": 12000000},
  "log_dir": "$dir/ref-logs", "path": ["$bin"],
  "processes": [{"name": "ref", "command": "fleet-host",
                 "args": ["--drones", "64", "--final", "$dir/ref.txt"],
                 "wait_for": {"asset": "fleet-host-0"}}]
}
JSON
	run ref 20
	sort -n "$dir/ref.txt" >"$dir/ref-sorted.txt" 2>/dev/null
}

# same_as_ref WHAT SORTED FINAL...: the final states in FINAL..., sorted into SORTED, are all 64
# drones and the bytes of $dir/ref-sorted.txt.
same_as_ref() {
	local what=$1 sorted=$2
	shift 2
	sort -n "$@" >"$sorted" 2>/dev/null
	[ "$(wc -l <"$sorted")" -eq 64 ] || fail "$what: not 64 final states"
	cmp -s "$sorted" "$dir/ref-sorted.txt" || fail "$what: the final states differ from one host's"
}

# rd_check WHAT OUT PATTERN MISSING TRACE...: hako-rd check of the RD traces TRACE..., its
# report in OUT, finds no violation, and the report matches PATTERN (grep -E; '' for none), else
# "WHAT: MISSING" fails.
rd_check() {
	local what=${1:+$1: } out=$2 pattern=$3 missing=$4
	shift 4
	"$build/bin/hako-rd" check "$@" >"$out" 2>&1 || { fail "${what}hako-rd check"; show "$out" 10; }
	[ -z "$pattern" ] || grep -qE "$pattern" "$out" || { fail "$what$missing"; show "$out" 10; }
}

# ---- a federation of nodes on this machine: srv-01 (the server) and clients cli-01, ... ----
# Set name (the domains are $name-ID) and mode ("lost": one hako-launch a node, the last
# client's node killed) before these.

# node_launch ID PATH PROCS: ID's launch file, $dir/ID/launch.json: the conductor of ID.json
# (srv-01 stops the federation at 12 s), the programs in PATH (JSON strings) and PROCS.
node_launch() {
	local id=$1 stop=''
	mkdir -p "$dir/$id"
	[ "$id" = srv-01 ] && stop=', "stop_at_usec": 12000000'
	# The lost mode kills a node at 5 s of world time, seen from outside: unpaced, the fleet
	# flies 12 s in under a second here and the kill could come after the end. At 4x real time
	# the rest of the run takes 1.75 s of wall time.
	[ "$mode" = lost ] && stop="$stop, \"real_time_factor\": 4"
	cat >"$dir/$id/launch.json" <<JSON
{
  "domain": "$name-$id", "log_dir": "$dir/logs/$id", "path": [$2],
  "conductor": {"federation": "$id.json"$stop},
  "processes": [$3]
}
JSON
}

# federation_files PORT CLIENT...: srv-01.json and each client's, control port PORT and time
# port PORT + 1, the RD config $dir/fleet_rd.json (on_client_loss "drop" in the lost mode),
# and the federation file of srv-01 and the clients.
federation_files() {
	local ctl="tcp://127.0.0.1:$1" tim="tcp://127.0.0.1:$(($1 + 1))" id loss='' list='' nodes
	shift
	[ "$mode" = lost ] && loss='"on_client_loss": "drop", "peer_timeout_ms": 1000,'
	nodes='"srv-01/launch.json"'
	for id in "$@"; do
		list="$list${list:+, }{\"client_node_id\": \"$id\"}"
		nodes="$nodes, \"$id/launch.json\""
		cat >"$dir/$id/$id.json" <<JSON
{"server_machine_id": "srv-01", "node_id": "$id",
 "delta_time_usec": 1000, "max_delay_time_usec": 10000,
 "control_address": "$ctl", "time_address": "$tim", "rd_config_path": "$dir/fleet_rd.json"}
JSON
	done
	cat >"$dir/srv-01/srv-01.json" <<JSON
{"server_machine_id": "srv-01", $loss
 "clients": [$list],
 "delta_time_usec": 1000, "max_delay_time_usec": 10000,
 "control_address": "$ctl", "time_address": "$tim", "rd_config_path": "$dir/fleet_rd.json"}
JSON
	cat >"$dir/federation.json" <<JSON
{"federation": {"name": "$name", "nodes": [$nodes]},
 "log_dir": "$dir/logs/federation"}
JSON
}

# world_usec DOMAIN: the domain's world time in us (nothing if it has none yet).
world_usec() {
	"$hako_cmd" -d "$1" status 2>/dev/null | awk '/^world time/ {printf "%d", $3 * 1000000}'
}

# run_nodes ID...: the lost mode: one hako-launch per node (ID.txt), as on machines of their
# own; the last node is killed whole at 5 s of world time. Sets rc (the others' hako-launch);
# $dir/fed.txt says what was killed, then the others' output.
run_nodes() {
	local ids=("$@") files=() id i t='' pids last=$(($# - 1))
	local victim=${ids[$last]}
	npids=()
	# What the federation file does for its nodes: the keys of the control plane.
	for id in "${ids[@]}"; do
		files+=("$dir/$id/$id.json")
	done
	"$build/bin/hako-conductor" keygen "${files[@]}" >/dev/null || die "hako-conductor keygen"
	for id in "${ids[@]}"; do
		timeout -s KILL 300 "$launch" "$dir/$id/launch.json" >"$dir/$id.txt" 2>&1 &
		npids+=($!)
	done
	for ((i = 0; i < 2400; i++)); do
		t=$(world_usec "$name-$victim")
		[ -n "$t" ] && [ "$t" -ge 5000000 ] && break
		alive "${npids[$last]}" || break
		sleep 0.05
	done
	if [ -z "$t" ] || [ "$t" -lt 5000000 ]; then
		fail "$victim never reached 5 s of world time"
		return 1
	fi
	# Every process of the node at once: its timeout, its hako-launch (which runs its
	# conductor) and the processes it started.
	pids=$(kill_tree "${npids[$last]}")
	echo "killed $victim's node at world time $t us: pids $pids" >"$dir/fed.txt"
	wait "${npids[$last]}" 2>/dev/null
	rc=0
	for ((i = 0; i < last; i++)); do
		wait "${npids[$i]}" || rc=$?
		cat "$dir/${ids[$i]}.txt" >>"$dir/fed.txt"
	done
	npids=()
}

# fly_federation PORTS ID...: write_federation BASE (the test's: the files of the nodes ID...,
# srv-01 first, on PORTS ports from BASE) and fly it, on other ports if those were taken
# meanwhile (three tries): one hako-launch of federation.json, or run_nodes in the lost mode
# (then the lost node's domain is removed, as a machine that died leaves nothing here). Output
# in $dir/fed.txt; fails if hako-launch did.
fly_federation() {
	local ports=$1 base
	shift
	rc=1
	for _ in 1 2 3; do
		base=$(free_ports "$ports") || die "no free ports"
		rm -rf "$dir/logs" "$dir"/trace-* "$dir"/final-*
		write_federation "$base"
		if [ "$mode" = lost ]; then
			run_nodes "$@"
			clean_domains "$hako_cmd" "$name-${*: -1}"
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
}
