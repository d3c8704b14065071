#!/bin/bash
# endpoint.tool: hako-endpoint from the shell: usage and exit codes, check (ok and the exact
# error line of broken files, taken from the loader's cases), probe + send through a tcp pair,
# and through one whose files give node names (a node map: the file's and --node-map), send to
# nobody, bad JSON, and probe + send through an shm endpoint on a private domain.
#
# usage: test_tool.sh HAKO_ENDPOINT HAKO_CMD CASES_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/hako_test.sh"

TOOL=$1
HAKO_CMD=$2
CASES=$3

export HAKO_DOMAIN="ep-tool-test-$$"
unset HAKO_LOG HAKO_MSG_PATH
tmp=$(mktemp -d) || exit 1
pids=()

cleanup() {
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	clean_domains "$HAKO_CMD" "$HAKO_DOMAIN"
	rm -rf "$tmp"
}
trap cleanup EXIT

# The tool prints results on stdout and errors and statistics on stderr; the kit's expect keeps
# both in $out, so a check that is about one of them runs the command through one of these.
# stdout_of CMD...: CMD with its stderr dropped: expect's $out is its stdout alone.
stdout_of() {
	"$@" 2>/dev/null
}
# stderr_of CMD...: CMD with its stdout dropped: expect's $out is its stderr alone.
stderr_of() {
	{ "$@" >/dev/null; } 2>&1
}

# ---- usage ----
expect 2 stderr_of "$TOOL"
has 'usage: hako-endpoint'
expect 0 stdout_of "$TOOL" --help
has 'probe +print every PDU'
expect 0 stdout_of "$TOOL" send --help
has 'usage: hako-endpoint send'
expect 2 stderr_of "$TOOL" bogus
has "unknown command 'bogus'"
expect 2 stderr_of "$TOOL" probe
has 'need one <endpoint.json>'
expect 2 stderr_of "$TOOL" probe x.json --count 0
has "--count: '0' is not an integer >= 1"
expect 2 stderr_of "$TOOL" send x.json R p
has 'give exactly one of --json, --json-file and --hex'
expect 2 stderr_of "$TOOL" check --node n1
has '--container and --node go together'

# ---- check: ok, and the exact error line of the loader's cases ----
expect 0 stdout_of "$TOOL" check "$CASES/ok_tcp_server/endpoint.json"
same "check ok" "$out" "ok"
expect 0 stdout_of "$TOOL" check --container "$CASES/ok_container/container.json" \
	--node node1
same "check --container ok" "$out" "ok"
# The cases name the shared files of fixtures/, next to cases/, by relative path: copied alike.
mkdir "$tmp/cases"
cp -r "$CASES/../fixtures" "$tmp/fixtures"
for c in err_bad_port err_unknown_key err_shm_pdu_not_in_pdudef err_invalid_json err_node_unknown \
	err_node_map_duplicate; do
	cp -r "$CASES/$c" "$tmp/cases/$c"
	expect 1 stderr_of bash -c "cd '$tmp/cases/$c' && '$TOOL' check endpoint.json"
	same "check $c" "$out" "$(head -n 1 "$tmp/cases/$c/expected.txt")"
done
cp -r "$CASES/err_container_duplicate_id" "$tmp/cases/ct"
expect 1 stderr_of \
	bash -c "cd '$tmp/cases/ct' && '$TOOL' check --container container.json --node node1"
same "check --container err_container_duplicate_id" "$out" \
	"$(head -n 1 "$tmp/cases/ct/expected.txt")"
expect 1 stderr_of "$TOOL" check "$tmp/missing.json"
has "missing.json"

# ---- files for the pairs ----
cat >"$tmp/pdudef.json" <<'EOF'
{"robots": [{"name": "Robot", "shm_pdu_readers": [], "shm_pdu_writers": [
  {"type": "geometry_msgs/Twist", "org_name": "pos", "channel_id": 1, "pdu_size": 72}]}]}
EOF
echo '{"type": "buffer", "name": "q", "store": {"mode": "queue", "depth": 64}}' >"$tmp/queue.json"
endpoint() { # NAME COMM_JSON
	echo "$2" >"$tmp/$1.comm.json"
	echo "{\"name\": \"$1\", \"cache\": \"queue.json\", \"comm\": \"$1.comm.json\",
	       \"pdu_def_path\": \"pdudef.json\"}" >"$tmp/$1.json"
}

# start_probe ENDPOINT ARGS...: probe in the background, its pid in $probe, output in
# $tmp/probe.out / probe.err; 1 if it exited before listening (port taken).
start_probe() {
	# emptied first: the background child opens it later, and the previous probe's lines must not
	# count as this one's
	: >"$tmp/probe.err"
	"$TOOL" probe "$@" >"$tmp/probe.out" 2>"$tmp/probe.err" &
	probe=$!
	pids+=("$probe")
	for ((i = 0; i < 400; i++)); do
		if grep -q 'listens on port\|ready' "$tmp/probe.err" 2>/dev/null; then
			return 0
		fi
		if ! alive "$probe"; then
			return 1
		fi
		sleep 0.05
	done
	return 1
}

twist='{"linear":{"x":1.5},"angular":{"z":-2.25}}'
twist_out='{"robot":"Robot","channel_id":1,"pdu":"pos","bytes":72,"data":{"linear":{"x":1.5,"y":0.0,"z":0.0},"angular":{"x":0.0,"y":0.0,"z":-2.25}}}'

# ---- probe + send through a tcp pair ----
# The server's file says port 0 (any free port); the probe says which it got. The later probes
# listen on that same port again (the client's file names it): the server's file is rewritten.
server_comm() { # PORT
	endpoint server "{\"protocol\": \"tcp\", \"role\": \"server\",
	                  \"local\": {\"address\": \"127.0.0.1\", \"port\": $1}}"
}
server_comm 0
if ! start_probe "$tmp/server.json" --count 3 --timeout 30; then
	fail "the probe did not listen"
	show "$tmp/probe.err"
	exit 1
fi
file_has "$tmp/probe.err" "endpoint 'server' listens on port [1-9][0-9]*$"
port=$(sed -n "s/^.*endpoint 'server' listens on port \([0-9][0-9]*\)$/\1/p" "$tmp/probe.err")
if [ -z "$port" ] || [ "$port" -gt 65535 ]; then
	die "no port in the probe's output"
fi
server_comm "$port"
endpoint client "{\"protocol\": \"tcp\", \"role\": \"client\",
                  \"remote\": {\"address\": \"127.0.0.1\", \"port\": $port}}"
expect 0 stderr_of "$TOOL" send "$tmp/client.json" Robot pos --json "$twist" --count 2 \
	--wait-peer 20
has 'client: .*frames_out=2 '
echo '{"linear": {"y": 3}}' >"$tmp/twist.json"
expect 0 "$TOOL" send "$tmp/client.json" Robot pos --json-file "$tmp/twist.json" --wait-peer 20
wait "$probe"
same "probe exit status" "$?" 0
lines=$(cat "$tmp/probe.out")
same "probe line 1" "$(sed -n 1p <<<"$lines")" "$twist_out"
same "probe line 2" "$(sed -n 2p <<<"$lines")" "$twist_out"
expect 0 sed -n 3p "$tmp/probe.out"
has '"linear":\{"x":0.0,"y":3.0,"z":0.0\}'
same "probe line count" "$(wc -l <<<"$lines")" 3
file_has "$tmp/probe.err" 'server: frames_in=3 '

# --hex and --raw: bytes the type does not decode print as hex
start_probe "$tmp/server.json" --count 1 --timeout 30 --raw
expect 0 "$TOOL" send "$tmp/client.json" Robot pos --hex '01 02 03 ff' --wait-peer 20
wait "$probe"
same "probe --hex" "$(cat "$tmp/probe.out")" \
	'{"robot":"Robot","channel_id":1,"pdu":"pos","bytes":4,"hex":"010203ff"}'
# without --raw the hex comes with the reason it did not decode
start_probe "$tmp/server.json" --count 1 --timeout 30
expect 0 "$TOOL" send "$tmp/client.json" Robot pos --hex '01 02 03 ff' --wait-peer 20
wait "$probe"
same "probe note" "$(cat "$tmp/probe.out")" \
	'{"robot":"Robot","channel_id":1,"pdu":"pos","bytes":4,"hex":"010203ff","note":"not a valid geometry_msgs/Twist PDU: 4 bytes, shorter than the 24-byte meta header"}'

# a probe that does not get its count within the timeout fails; one without a count does not
start_probe "$tmp/server.json" --count 1 --timeout 0.5
wait "$probe"
same "probe timeout exit status" "$?" 1
file_has "$tmp/probe.err" 'got 0 of 1 PDUs within 0.5 s'

# SIGUSR1 makes a probe print its statistics
start_probe "$tmp/server.json" --timeout 30
kill -USR1 "$probe"
wait_for_line "$tmp/probe.err" 'server: frames_in=' 10
kill -INT "$probe"
wait "$probe"
same "probe after SIGINT exit status" "$?" 0
same "probe statistics lines (SIGUSR1 + exit)" "$(grep -c 'server: frames_in=' "$tmp/probe.err")" 2

# stats: one line per interval, then the final one
expect 0 stdout_of "$TOOL" stats "$tmp/server.json" --interval 0.1 --count 2
has "^port $port"
same "stats lines" "$(grep -c '^t=[0-9.]* frames_in=0 ' <<<"$out")" 2
has '^final frames_in=0 .* peers=0$'

# ---- send errors ----
expect 1 stderr_of "$TOOL" send "$tmp/client.json" Robot pos --json "$twist" --wait-peer 0.3
has "client.json: no peer connected to endpoint 'client' within 0.3 s"
expect 1 stderr_of "$TOOL" send "$tmp/client.json" Robot pos --json '{"linear": {"q": 1}}'
has 'JSON for geometry_msgs/Twist \(Robot/pos\): .*linear.q: unknown field'
expect 1 stderr_of "$TOOL" send "$tmp/client.json" Robot nope --json '{}'
has "pdudef.json: no PDU 'nope' for robot 'Robot'"
expect 2 stderr_of "$TOOL" send "$tmp/client.json" Robot pos --hex 'zz'
has 'not a hex digit pair'

# ---- a tcp pair named by node names: the server's file maps them (name_resolver), the
# client's is given the map on the command line ----
mkdir "$tmp/maps"
echo '{"nodes": {"hub-a": "127.0.0.1", "leaf-b": "127.0.0.3"}}' >"$tmp/maps/node-ip-map.json"
named_server() { # PORT
	endpoint named_server "{\"protocol\": \"tcp\", \"role\": \"server\",
	  \"name_resolver\": {\"type\": \"file\", \"path\": \"maps/node-ip-map.json\", \"strict\": true},
	  \"local\": {\"address\": \"hub-a\", \"port\": $1}}"
}
named_server 0
expect 0 stdout_of "$TOOL" check -v "$tmp/named_server.json"
has "^  node map: $tmp/maps/node-ip-map.json \(from name_resolver.path\)$"
has '^  local.address: hub-a -> 127.0.0.1$'
if ! start_probe "$tmp/named_server.json" --count 1 --timeout 30; then
	fail "the probe of the named server did not listen"
	show "$tmp/probe.err"
	exit 1
fi
port=$(sed -n "s/^.*endpoint 'named_server' listens on port \([0-9][0-9]*\)$/\1/p" "$tmp/probe.err")
if [ -z "$port" ] || [ "$port" -gt 65535 ]; then
	die "no port in the named server's probe output"
fi
endpoint named_client "{\"protocol\": \"tcp\", \"role\": \"client\",
                        \"remote\": {\"address\": \"hub-a\", \"port\": $port}}"
expect 1 stderr_of "$TOOL" check "$tmp/named_client.json"
has 'remote.address: "hub-a" is not an IPv4 or IPv6 address, and there is no node map'
expect 0 stdout_of "$TOOL" check -v --node-map "$tmp/maps/node-ip-map.json" \
	"$tmp/named_client.json"
has '^  node map: .*/maps/node-ip-map.json \(from HAKO_NODE_IP_MAP\)$'
has '^  remote.address: hub-a -> 127.0.0.1$'
expect 0 stderr_of "$TOOL" send "$tmp/named_client.json" Robot pos --json "$twist" \
	--wait-peer 20 --node-map "$tmp/maps/node-ip-map.json"
has 'named_client: .*frames_out=1 '
wait "$probe"
same "named pair: probe exit status" "$?" 0
same "named pair: the PDU" "$(cat "$tmp/probe.out")" "$twist_out"

# ---- comm-less: send goes into its own cache ----
echo '{"name": "local", "cache": "queue.json", "comm": null, "pdu_def_path": "pdudef.json"}' \
	>"$tmp/local.json"
expect 0 stderr_of "$TOOL" send "$tmp/local.json" Robot pos --json "$twist"
has 'local: frames_in=1 '

# ---- shm: probe and send on a private domain ----
"$HAKO_CMD" conductor >"$tmp/conductor.log" 2>&1 &
pids+=("$!")
until_ok 10 "$HAKO_CMD" status
endpoint shm_rx '{"protocol": "shm", "impl_type": "callback", "asset_name": "Rx",
  "io": {"robots": [{"name": "Robot", "pdu": [{"name": "pos", "notify_on_recv": true}]}]}}'
endpoint shm_tx '{"protocol": "shm", "impl_type": "callback", "asset_name": "Tx",
  "io": {"robots": [{"name": "Robot", "pdu": [{"name": "pos", "notify_on_recv": false}]}]}}'
"$TOOL" probe "$tmp/shm_rx.json" --count 1 --timeout 30 >"$tmp/probe.out" 2>"$tmp/probe.err" &
probe=$!
pids+=("$probe")
# The probe attaches the channel when it starts; send until it has seen one (shm keeps only the
# latest value, so an early write before the probe watched is simply overwritten).
for ((i = 0; i < 300; i++)); do
	"$TOOL" send "$tmp/shm_tx.json" Robot pos --json "$twist" --domain "$HAKO_DOMAIN" \
		>/dev/null 2>"$tmp/send.err" || cat "$tmp/send.err"
	alive "$probe" || break
	sleep 0.1
done
wait "$probe"
same "shm probe exit status" "$?" 0
same "shm probe" "$(cat "$tmp/probe.out")" "$twist_out"

finish endpoint.tool
