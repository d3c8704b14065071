#!/bin/bash
# viewer.hosts: a page of another site cannot reach the viewer by making its own name resolve to
# this machine (DNS rebinding): a request whose Host is not a name of the viewer, or whose Origin
# is not the viewer's page, gets 403 (a WebSocket is not upgraded), logged; the viewer's own
# names are served, and --allow-host / $HAKO_VIEWER_ALLOW_HOSTS add names. What a client makes
# the viewer log is rationed: a flood of refused commands leaves a few lines and a count.
#
# usage: test_hosts.sh BUILD_DIR SOURCE_DIR
set -u
BIN=$1 SRC=$2 NAME=viewer-hosts
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/common/hako_test.sh"
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/viewer/viewer_kit.sh"
HOSTILE=$BIN/test/viewer/viewer-hostile

# answer WANT KIND HOST [ORIGIN]: a GET (KIND get) or a WebSocket handshake (upgrade) with these
# headers gets the status WANT.
answer() {
	local want=$1
	shift
	expect 0 "$HOSTILE" "$1" "$P" "${@:2}"
	grep -qx "status $want" <<<"$out" || fail "$1 with Host '$2' Origin '${3:-}': $out, expected $want"
}

start_viewer
P=$VPORT

# The attack: a page at http://evil.example/ whose name now resolves to 127.0.0.1.
answer 403 get evil.example:80 http://evil.example:80
answer 403 upgrade evil.example:80 http://evil.example:80
file_has "$tmp/viewer.err" '^hako-viewer: refused GET / from 127\.0\.0\.1: Host evil\.example:80 is not a name of this viewer \(bound to 127\.0\.0\.1; --allow-host adds one\)$'
file_has "$tmp/viewer.err" '^hako-viewer: refused a WebSocket from 127\.0\.0\.1: Host evil\.example:80 is not a name of this viewer'
answer 403 get evil.example
answer 403 upgrade "127.0.0.1.evil.example:$P"
answer 403 get - # no Host: a browser always sends one
# A loopback Host, but opened by a page of another site (another port is another site).
answer 403 upgrade "localhost:$P" http://evil.example
answer 403 upgrade "localhost:$P" "http://localhost:$((P + 1))"
# The viewer's own page by each of its names, with or without the port, and clients that are
# no browser (no Origin). Any port: a tunnel (ssh -L 9000:localhost:PORT) changes it.
for host in "localhost:$P" "127.0.0.1:$P" "[::1]:$P" localhost 127.0.0.1 LocalHost:9000; do
	answer 200 get "$host" "http://$host"
	answer 101 upgrade "$host" "http://$host"
	answer 200 get "$host"
done
alive "$VIEWER_PID" || fail "hako-viewer died"

# A flood of commands without the token: the first few are logged, the rest counted.
N=20000
expect 0 "$HOSTILE" flood "$P" "$N"
has "^flooded $N\$"
kill -TERM "$VIEWER_PID"
wait "$VIEWER_PID"
file_has "$tmp/viewer.out" '^hako-viewer: stopped$'
logged=$(grep -c '^hako-viewer: refused stop from 127\.0\.0\.1: ' "$tmp/viewer.err")
held=$(sed -n 's/^hako-viewer: \([0-9]*\) more requests without the token in the last [0-9]* s, not logged (the last from 127\.0\.0\.1)$/\1/p' "$tmp/viewer.err" |
	awk '{ n += $1 } END { print n + 0 }')
same "refused commands logged + counted" "$((logged + held))" "$((N + 1))"
lines=$(wc -l <"$tmp/viewer.err")
[ "$lines" -le 40 ] || { fail "the flood left $lines lines in the viewer's log"; show "$tmp/viewer.err" 20; }
[ "$logged" -ge 1 ] || fail "no refused command was logged"

# Other names of this machine: --allow-host and $HAKO_VIEWER_ALLOW_HOSTS.
HAKO_VIEWER_ALLOW_HOSTS="sim.example, fe80::1" start_viewer --allow-host Viewer.Example
P=$VPORT
answer 200 get viewer.example:8080 http://viewer.example:8080
answer 101 upgrade sim.example
answer 200 get "[fe80::1]:$P"
answer 403 get evil.example
# Bound to every address: any address is the viewer's own (no DNS name can point here unasked).
"$VIEWER" --port 0 --bind 0.0.0.0 >"$tmp/all.out" 2>"$tmp/all.err" &
pids+=($!)
wait_for_line "$tmp/all.out" '\?token=' 10 || die "hako-viewer --bind 0.0.0.0 did not start"
P=$(sed -n 's|.*read-only at http://localhost:\([0-9]*\)/$|\1|p' "$tmp/all.out")
[ -n "$P" ] || die "no port in: $(cat "$tmp/all.out")"
answer 200 get "192.0.2.7:$P" "http://192.0.2.7:$P"
answer 200 get "[2001:db8::7]"
answer 403 upgrade evil.example:80 http://evil.example:80
expect 1 "$VIEWER" --port 0 --allow-host sim.example:8080
has '^hako-viewer: --allow-host sim\.example:8080: not a host name or address \(give it without a port: any port is accepted\)$'
finish viewer.hosts
