#!/bin/bash
# netlab.federation_*: the federation sample (samples/federation: srv-01, cli-01, cli-02, a
# fed-counter asset and a bridge on each) with every node in its own hako-netlab namespaces (its
# own network, /dev/shm, pids): the nodes reach each other only by their lab addresses, as on
# three machines. Each node is one hako-launch, started in its node; each writes its
# conductor's trace (conductor.trace), checked with hako-conductor check.
#
# MODE (the fault, docs/netlab.md "Faults"):
#   plain       none
#   partition   cli-01's link cut for 2 s at 2 s of world time, then healed (peer_timeout_ms
#               5000): the clocks hold (Dmax), the link resumes without a restart
#   kill_drop   cli-02's node killed whole at 2 s (on_client_loss "drop", peer_timeout_ms
#               1000): the server names it lost, srv-01 and cli-01 go on to the end
#   kill_error  the same with on_client_loss "error": the federation stops in error, naming
#               cli-02, and every live node ends
#   tcp_delay   the bridges' tcp links through hako-relay on the switch, 1 ms + U[0, 9] ms
#               each way
#   udp_loss    the bridges' links as udp through the relay, 1 ms + U[0, 9] ms and 1 % of the
#               datagrams lost each way (a tcp link does not lose bytes: on a lossy network it
#               retransmits, which the delay stands for)
# Checks, every mode: each live node's exit status and last line, the counters crossed every
# live link both ways and kept flowing to the end, every live node's drift table and trace
# within Dmax. Skipped (77) with the reason when a lab cannot be made here (not root).
#
# usage: test_lab_federation.sh BUILD_DIR EU_INPUT MODE
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR
. "$here/../common/hako_test.sh"

build=$(cd "$1" && pwd)
input=$2
mode=$3
NL=$build/bin/hako-netlab
GEN=$build/bin/hako-conductor
LAUNCH=$build/bin/hako-launch
RELAY=$build/test/relay/hako-relay
DMAX=10000
case $mode in
plain | partition | kill_drop | kill_error | tcp_delay | udp_loss) ;;
*) die "unknown mode '$mode'" ;;
esac
if ! why=$("$NL" probe 2>&1); then
	echo "SKIP: $why"
	exit 77
fi

tmp=$(mktemp -d /tmp/test-lab-fed-XXXXXX) || exit 1
lab=lf$$
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	"$NL" down "$lab" >/dev/null 2>&1
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
unset HAKO_DOMAIN
cd "$tmp" || exit 1

# The lab: the subnet lives in the lab's own namespaces (no other test sees it).
sub=10.$((150 + $$ % 50)).$(($$ % 250))
SW=$sub.1
declare -A addr=([srv-01]=$sub.11 [cli-01]=$sub.12 [cli-02]=$sub.13)
nodes=(srv-01 cli-01 cli-02)
cat >lab.json <<EOF
{"subnet": "$sub.0/24", "switch": "$SW",
 "nodes": [{"name": "srv-01", "address": "${addr[srv-01]}"},
           {"name": "cli-01", "address": "${addr[cli-01]}"},
           {"name": "cli-02", "address": "${addr[cli-02]}"}]}
EOF

# The sample, with the lab's addresses and the mode's loss policy; 8 s of world time at real
# time (the faults need wall time to happen in).
stop=8000000
timeout_ms=1000
policy=error
case $mode in
partition) timeout_ms=5000 ;;
kill_drop) policy=drop ;;
esac
python3 - "$input" eu.json "$timeout_ms" "$policy" "${addr[srv-01]}" "${addr[cli-01]}" \
	"${addr[cli-02]}" <<'EOF' || die "cannot write eu.json"
import json, sys
src, dst, timeout, policy, srv, c1, c2 = sys.argv[1:]
eu = json.load(open(src))
eu["node_addresses"] = {"srv-01": srv, "cli-01": c1, "cli-02": c2}
d = eu.setdefault("conductor_defaults", {})
d["peer_timeout_ms"] = int(timeout)
d["heartbeat_ms"] = 100
d["on_client_loss"] = policy
json.dump(eu, open(dst, "w"), indent=1)
EOF
cp "$(dirname "$input")"/*_pdutypes.json . || die "no pdutypes beside $input"
"$GEN" gen -q -o gen --stop-at-usec "$stop" --real-time-factor 1 --path "$build/bin" \
	--path "$build/samples/federation" eu.json >gen.txt 2>&1 || {
	show gen.txt
	die "hako-conductor gen"
}
# shellcheck disable=SC2046
"$GEN" keygen $(ls gen/*/conductor/*.json) >/dev/null || die "hako-conductor keygen"
# Each node writes its conductor's trace; no viewer (it would only add load).
python3 - gen "${nodes[@]}" <<'EOF' || die "cannot edit the launch files"
import json, sys
for node in sys.argv[2:]:
    p = f"{sys.argv[1]}/{node}/launch.json"
    l = json.load(open(p))
    l["conductor"]["trace"] = "trace.csv"
    l.pop("viewer", None)
    json.dump(l, open(p, "w"), indent=1)
EOF

# The data links through the relay on the switch: each client's bridge reaches the server at
# SWITCH:PORT+100 (tcp) instead of SERVER:PORT; udp: a route each way.
relay_args=()
if [ "$mode" = tcp_delay ] || [ "$mode" = udp_loss ]; then
	relay_args=(--delay-ms 1 --jitter-ms 9 --control "$tmp/relay.sock")
	[ "$mode" = udp_loss ] && relay_args+=(--loss 0.01)
	for c in cli-01 cli-02; do
		comm=$(ls gen/$c/endpoint/tcp-srv-01_comm.json) || die "no tcp comm of $c"
		port=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["remote"]["port"])' "$comm")
		if [ "$mode" = tcp_delay ]; then
			relay_args+=(--tcp --listen "$SW:$((port + 100))" --to "${addr[srv-01]}:$port")
			python3 - "$comm" "$SW" $((port + 100)) <<'EOF' || die "cannot edit $comm"
import json, sys
p, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = json.load(open(p))
c["remote"] = {"address": host, "port": port}
json.dump(c, open(p, "w"), indent=1)
EOF
		else
			# Both sides udp: the client sends to SW:port+100 (relayed to the server's
			# port), the server to SW:port+200 (relayed to the client's port + 300).
			scomm=gen/srv-01/endpoint/tcp-${c}_comm.json
			relay_args+=(--udp --listen "$SW:$((port + 100))" --to "${addr[srv-01]}:$port"
				--udp --listen "$SW:$((port + 200))" --to "${addr[$c]}:$((port + 300))")
			python3 - "$comm" "$scomm" "$SW" "$port" "${addr[srv-01]}" "${addr[$c]}" <<'EOF' || die "cannot edit the udp comms"
import json, sys
cp, sp, sw, port, srv, cli = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
for p, local, remote in ((cp, (cli, port + 300), (sw, port + 100)),
                         (sp, (srv, port), (sw, port + 200))):
    c = json.load(open(p))
    json.dump({"protocol": "udp", "name": c["name"], "direction": "inout",
               "local": {"address": local[0], "port": local[1]},
               "remote": {"address": remote[0], "port": remote[1]}},
              open(p, "w"), indent=1)
EOF
		fi
	done
fi

"$NL" up lab.json --name "$lab" --while-pid $$ >lab.txt 2>&1 || {
	show lab.txt
	die "hako-netlab up"
}
if [ ${#relay_args[@]} -gt 0 ]; then
	"$NL" exec "$lab" switch -- "$RELAY" "${relay_args[@]}" >relay.txt 2>&1 &
	pids+=($!)
	wait_for_line relay.txt 'hako-relay: ready' 20 || die "the relay did not start"
fi
npids=()
for n in "${nodes[@]}"; do
	(cd "gen/$n" && exec "$NL" exec "$lab" "$n" -- env HAKO_DOMAIN=fed \
		timeout -s KILL 120 "$LAUNCH" launch.json) >"out-$n.txt" 2>&1 &
	npids+=($!)
	pids+=($!)
done

# world_usec NODE: its world time in us, as its conductor's trace last said (nothing before the
# first sample). From the trace on this host's file system, not by a query inside the node:
# under two CPU hogs `hako-netlab exec NODE -- hako-cmd -d fed status` answered "no domain" for
# seconds while the node ran (4 times in about 18 runs; cause not found, docs/netlab.md), so
# the fault came late or never.
world_usec() {
	tail -n 1 "gen/$1/trace.csv" 2>/dev/null | awk -F, '$3 ~ /^[0-9]+$/ {print $3}'
}

# at_world NODE USEC: wait until NODE's world reached USEC.
at_world() {
	local i t=''
	for ((i = 0; i < 1200; i++)); do
		t=$(world_usec "$1")
		[ -n "$t" ] && [ "$t" -ge "$2" ] && return 0
		sleep 0.05
	done
	fail "$1 never reached $2 us of world time (at '$t')"
	"$NL" status "$lab" 2>&1 | sed 's/^/    lab: /'
	return 1
}

live=("${nodes[@]}")
case $mode in
partition)
	at_world srv-01 2000000 && {
		"$NL" link "$lab" cli-01 down >/dev/null || fail "link down"
		t0=$(world_usec srv-01)
		sleep 2 # the partition: 2 s of wall time
		t1=$(world_usec srv-01)
		"$NL" link "$lab" cli-01 up >/dev/null || fail "link up"
		echo "cli-01 cut off for 2 s of wall time; the server's world went $t0 -> $t1 us meanwhile"
	}
	;;
kill_drop | kill_error)
	at_world srv-01 2000000 && {
		"$NL" kill "$lab" cli-02 >kill.txt 2>&1 || fail "hako-netlab kill"
		echo "killed cli-02's node: $(cat kill.txt)"
	}
	live=(srv-01 cli-01)
	;;
esac

# Every node's hako-launch ends (the killed one's exec with it).
rc=()
for p in "${npids[@]}"; do
	wait "$p"
	rc+=($?)
done

for i in 0 1 2; do
	n=${nodes[$i]}
	case " ${live[*]} " in *" $n "*) ;; *) continue ;; esac
	if [ "$mode" = kill_error ]; then
		continue # judged below
	fi
	[ "${rc[$i]}" -eq 0 ] || { fail "$n: hako-launch exited ${rc[$i]}"; show "out-$n.txt" 30; }
	tail -n 1 "out-$n.txt" | grep -q "hako-launch: done: world time 8.000 s" ||
		{ fail "$n: last line"; show "out-$n.txt" 10; }
done

# The counters: every live link both ways, and still flowing near the end (last value within
# 1 s of world time of the end: after a partition, the link resumed).
if [ "$mode" != kill_error ]; then
	for pair in srv-01:cli-01 cli-01:srv-01 srv-01:cli-02 cli-02:srv-01; do
		node=${pair%%:*} from=${pair#*:}
		case " ${live[*]} " in *" $node "*) ;; *) continue ;; esac
		line=$(grep "\[counter-$node\] received $from\.counter:" "out-$node.txt")
		n=$(sed -n 's/.*: \([0-9]*\) updates, last \([0-9]*\).*/\1/p' <<<"$line")
		last=$(sed -n 's/.*: \([0-9]*\) updates, last \([0-9]*\).*/\2/p' <<<"$line")
		if [ -z "$n" ] || [ "$n" -eq 0 ]; then
			fail "$node received nothing from $from"
			continue
		fi
		case " ${live[*]} " in
		*" $from "*)
			[ "$last" -ge $((stop / 1000 - 1000)) ] ||
				fail "$node: the last counter of $from was $last: the link did not resume"
			;;
		esac
	done
fi

# Drift: each live node's table and its trace within Dmax.
for n in "${live[@]}"; do
	[ "$mode" = kill_error ] && break
	while read -r peer _ _ _ max _ samples; do
		[ "$peer" = cli-02 ] && [ "$mode" = kill_drop ] && continue
		if [ "$max" -gt "$DMAX" ] || [ "$samples" -eq 0 ]; then
			fail "$n against $peer: drift_max $max us (Dmax $DMAX), $samples samples"
		fi
	done < <(sed -n "s/^hako-launch:   \(\(srv\|cli\)-[0-9]*\) /\1 /p" "out-$n.txt")
	"$GEN" check --dmax-usec "$DMAX" "gen/$n/trace.csv" >"check-$n.txt" 2>&1 ||
		{ fail "$n: hako-conductor check on its trace"; show "check-$n.txt" 10; }
done

case $mode in
partition)
	grep -qiE "restart|rejoin" out-cli-01.txt && fail "cli-01 restarted instead of resuming"
	;;
kill_drop)
	file_has out-srv-01.txt "client cli-02 lost .*: dropped, the federation goes on"
	;;
kill_error)
	[ "${rc[0]}" -ne 0 ] || fail "srv-01 exited 0 after losing cli-02 with on_client_loss error"
	file_has out-srv-01.txt "client 'cli-02' lost"
	;;
tcp_delay | udp_loss)
	echo stats | python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"stats\n")
print(s.recv(4096).decode().strip())' "$tmp/relay.sock" >relay-stats.txt 2>&1
	echo "relay: $(cat relay-stats.txt)"
	bytes=$(sed -n 's/.* bytes=\([0-9]*\).*/\1/p' relay-stats.txt)
	dropped=$(sed -n 's/.* dgrams_dropped=\([0-9]*\).*/\1/p' relay-stats.txt)
	if [ "$mode" = tcp_delay ]; then
		[ "${bytes:-0}" -gt 0 ] || fail "nothing went through the relay"
	else
		[ "${dropped:-0}" -gt 0 ] || fail "the relay lost no datagram: the loss was not tried"
	fi
	;;
esac

if [ "$fails" -ne 0 ]; then
	for n in "${nodes[@]}"; do show "out-$n.txt" 15; done
else
	grep -hE "received|hako-launch:   |lost" out-*.txt | head -n 20
	cat check-*.txt 2>/dev/null | grep -iE "ok|within" | head -n 3
fi
finish "netlab.federation_$mode"
