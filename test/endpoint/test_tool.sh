#!/bin/bash
# endpoint.tool: hako-endpoint from the shell: usage and exit codes, check (ok and the exact
# error line of broken files, taken from the loader's cases), probe + send through a tcp pair,
# send to nobody, bad JSON, and probe + send through an shm endpoint on a private domain.
#
# usage: test_tool.sh HAKO_ENDPOINT HAKO_CMD CASES_DIR
set -u

TOOL=$1
HAKO_CMD=$2
CASES=$3

export HAKO_DOMAIN="ep-tool-test-$$"
unset HAKO_LOG HAKO_MSG_PATH
tmp=$(mktemp -d)
fails=0
pids=()

cleanup() {
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	"$HAKO_CMD" clean --force >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

# expect RC CMD...: run CMD, keep its stdout in $out and stderr in $err, check its exit status.
expect() {
	local want=$1
	shift
	out=$("$@" 2>"$tmp/stderr")
	local rc=$?
	err=$(cat "$tmp/stderr")
	if [ "$rc" -ne "$want" ]; then
		echo "FAIL: '$*' exited $rc, expected $want; stdout and stderr:"
		echo "$out" | sed 's/^/    /'
		echo "$err" | sed 's/^/    /'
		fails=$((fails + 1))
	fi
}

# same WHAT GOT WANT
same() {
	if [ "$2" != "$3" ]; then
		echo "FAIL: $1:"
		echo "    got:  $2"
		echo "    want: $3"
		fails=$((fails + 1))
	fi
}

# has TEXT REGEX
has() {
	if ! grep -qE -- "$2" <<<"$1"; then
		echo "FAIL: /$2/ not in:"
		echo "$1" | sed 's/^/    /'
		fails=$((fails + 1))
	fi
}

# ---- usage ----
expect 2 "$TOOL"
has "$err" 'usage: hako-endpoint'
expect 0 "$TOOL" --help
has "$out" 'probe +print every PDU'
expect 0 "$TOOL" send --help
has "$out" 'usage: hako-endpoint send'
expect 2 "$TOOL" bogus
has "$err" "unknown command 'bogus'"
expect 2 "$TOOL" probe
has "$err" 'need one <endpoint.json>'
expect 2 "$TOOL" probe x.json --count 0
has "$err" "--count: '0' is not an integer >= 1"
expect 2 "$TOOL" send x.json R p
has "$err" 'give exactly one of --json, --json-file and --hex'
expect 2 "$TOOL" check --node n1
has "$err" '--container and --node go together'

# ---- check: ok, and the exact error line of the loader's cases ----
expect 0 "$TOOL" check "$CASES/ok_tcp_server/endpoint.json"
same "check ok" "$out" "ok"
expect 0 "$TOOL" check --container "$CASES/ok_container/container.json" --node node1
same "check --container ok" "$out" "ok"
# The cases name the shared files of fixtures/, next to cases/, by relative path: copied alike.
mkdir "$tmp/cases"
cp -r "$CASES/../fixtures" "$tmp/fixtures"
for c in err_bad_port err_unknown_key err_shm_pdu_not_in_pdudef err_invalid_json; do
	cp -r "$CASES/$c" "$tmp/cases/$c"
	expect 1 bash -c "cd '$tmp/cases/$c' && '$TOOL' check endpoint.json"
	same "check $c" "$err" "$(head -n 1 "$tmp/cases/$c/expected.txt")"
done
cp -r "$CASES/err_container_duplicate_id" "$tmp/cases/ct"
expect 1 bash -c "cd '$tmp/cases/ct' && '$TOOL' check --container container.json --node node1"
same "check --container err_container_duplicate_id" "$err" \
	"$(head -n 1 "$tmp/cases/ct/expected.txt")"
expect 1 "$TOOL" check "$tmp/missing.json"
has "$err" "missing.json"

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
		if ! kill -0 "$probe" 2>/dev/null; then
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
	echo "FAIL: the probe did not listen"
	cat "$tmp/probe.err"
	exit 1
fi
has "$(cat "$tmp/probe.err")" "endpoint 'server' listens on port [1-9][0-9]*$"
port=$(sed -n "s/^.*endpoint 'server' listens on port \([0-9][0-9]*\)$/\1/p" "$tmp/probe.err")
if [ -z "$port" ] || [ "$port" -gt 65535 ]; then
	echo "FAIL: no port in the probe's output"
	exit 1
fi
server_comm "$port"
endpoint client "{\"protocol\": \"tcp\", \"role\": \"client\",
                  \"remote\": {\"address\": \"127.0.0.1\", \"port\": $port}}"
expect 0 "$TOOL" send "$tmp/client.json" Robot pos --json "$twist" --count 2 --wait-peer 20
has "$err" 'client: .*frames_out=2 '
echo '{"linear": {"y": 3}}' >"$tmp/twist.json"
expect 0 "$TOOL" send "$tmp/client.json" Robot pos --json-file "$tmp/twist.json" --wait-peer 20
wait "$probe"
same "probe exit status" "$?" 0
lines=$(cat "$tmp/probe.out")
same "probe line 1" "$(sed -n 1p <<<"$lines")" "$twist_out"
same "probe line 2" "$(sed -n 2p <<<"$lines")" "$twist_out"
has "$(sed -n 3p <<<"$lines")" '"linear":\{"x":0.0,"y":3.0,"z":0.0\}'
same "probe line count" "$(wc -l <<<"$lines")" 3
has "$(cat "$tmp/probe.err")" 'server: frames_in=3 '

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
has "$(cat "$tmp/probe.err")" 'got 0 of 1 PDUs within 0.5 s'

# SIGUSR1 makes a probe print its statistics
start_probe "$tmp/server.json" --timeout 30
kill -USR1 "$probe"
for ((i = 0; i < 200; i++)); do
	grep -q 'server: frames_in=' "$tmp/probe.err" && break
	sleep 0.05
done
kill -INT "$probe"
wait "$probe"
same "probe after SIGINT exit status" "$?" 0
same "probe statistics lines (SIGUSR1 + exit)" "$(grep -c 'server: frames_in=' "$tmp/probe.err")" 2

# stats: one line per interval, then the final one
expect 0 "$TOOL" stats "$tmp/server.json" --interval 0.1 --count 2
has "$out" "^port $port"
same "stats lines" "$(grep -c '^t=[0-9.]* frames_in=0 ' <<<"$out")" 2
has "$out" '^final frames_in=0 .* peers=0$'

# ---- send errors ----
expect 1 "$TOOL" send "$tmp/client.json" Robot pos --json "$twist" --wait-peer 0.3
has "$err" "client.json: no peer connected to endpoint 'client' within 0.3 s"
expect 1 "$TOOL" send "$tmp/client.json" Robot pos --json '{"linear": {"q": 1}}'
has "$err" 'JSON for geometry_msgs/Twist \(Robot/pos\): .*linear.q: unknown field'
expect 1 "$TOOL" send "$tmp/client.json" Robot nope --json '{}'
has "$err" "pdudef.json: no PDU 'nope' for robot 'Robot'"
expect 2 "$TOOL" send "$tmp/client.json" Robot pos --hex 'zz'
has "$err" 'not a hex digit pair'

# ---- comm-less: send goes into its own cache ----
echo '{"name": "local", "cache": "queue.json", "comm": null, "pdu_def_path": "pdudef.json"}' \
	>"$tmp/local.json"
expect 0 "$TOOL" send "$tmp/local.json" Robot pos --json "$twist"
has "$err" 'local: frames_in=1 '

# ---- shm: probe and send on a private domain ----
"$HAKO_CMD" conductor >"$tmp/conductor.log" 2>&1 &
pids+=("$!")
for ((i = 0; i < 200; i++)); do
	"$HAKO_CMD" status >/dev/null 2>&1 && break
	sleep 0.05
done
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
	kill -0 "$probe" 2>/dev/null || break
	sleep 0.1
done
wait "$probe"
same "shm probe exit status" "$?" 0
same "shm probe" "$(cat "$tmp/probe.out")" "$twist_out"

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all checks passed"
