#!/bin/bash
# foxglove: what Foxglove sessions cost the 256-drone fleet (issue 25: at most 5 %). The fleet in
# zones (two fleet-host processes, 256 drones, as fast as possible, delta = Dmax = 1 ms) runs
# under hako-launch with hako-viewer; viewer-probe fox-load alternates SECONDS without a session
# and SECONDS with SESSIONS Foxglove sessions (foxglove.websocket.v1), each subscribed to the
# 256 drones' pos (sent at --foxglove-rate-hz, 30 by default) and reading everything, ROUNDS
# times. Prints the CSV of ARCHITECTURE section 8: ops = world steps (1 ms each), ops_per_s the
# median over the rounds (so RTF x 1000); then the rounds and the ratio.
#
# usage: bench/foxglove.sh BUILD_DIR [ROUNDS (5)] [SECONDS (5)] [SESSIONS (20)] [DRONES (256)]
#        bench/foxglove.sh BUILD_DIR --quick     (the ctest smoke run: 1 round of 1 s, 4 x 32)
# Needs the build's test programs (viewer-probe): HAKO_BUILD_TESTS, on by default.
set -u
BIN=$(cd "$1" && pwd)
if [ "${2:-}" = --quick ]; then
	set -- "$1" 1 1 4 32
fi
ROUNDS=${2:-5} SECONDS_=${3:-5} SESSIONS=${4:-20} DRONES=${5:-256}
FLEET=$BIN/samples/fleet
export HAKO_DOMAIN="bench-fox-$$"
unset HAKO_PDUDEF HAKO_LOG HAKO_VIEWER_TOKEN
tmp=$(mktemp -d)
launch_pid=
cleanup() {
	[ -n "$launch_pid" ] && kill -TERM "$launch_pid" 2>/dev/null && wait "$launch_pid" 2>/dev/null
	"$BIN/bin/hako-cmd" clean --force >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

"$FLEET/fleet-host" --drones "$DRONES" --write-zones "$tmp" >"$tmp/zones.out" 2>&1 || {
	cat "$tmp/zones.out" >&2
	exit 1
}
host() {
	echo "{\"name\": \"host-$1\", \"command\": \"fleet-host\", \"on_failure\": \"continue\",
	  \"args\": [\"--drones\", \"$DRONES\", \"--zones\", \"$tmp/fleet_rd.json\", \"--node\", \"$1\"],
	  \"wait_for\": {\"asset\": \"fleet-zone-$1\"}}"
}
cat >"$tmp/launch.json" <<-JSON
{
  "domain": "$HAKO_DOMAIN",
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": 100000000000},
  "log_dir": "$tmp/logs", "path": ["$FLEET"],
  "viewer": {"port": 0, "pdudef": "fleet_pdudef.json", "rd": "fleet_rd.json"},
  "processes": [$(host 1), $(host 2)]
}
JSON
"$BIN/bin/hako-launch" "$tmp/launch.json" >"$tmp/launch.out" 2>&1 &
launch_pid=$!
for _ in $(seq 600); do
	grep -q '^hako-launch: simulation running' "$tmp/launch.out" && break
	kill -0 "$launch_pid" 2>/dev/null || break
	sleep 0.05
done
grep -q '^hako-launch: simulation running' "$tmp/launch.out" || {
	echo "foxglove: the fleet did not start" >&2
	cat "$tmp/launch.out" >&2
	exit 1
}
PORT=$(sed -n 's|^hako-launch: viewer: http://[^:]*:\([0-9]*\)/ (read-only).*|\1|p' "$tmp/launch.out")
[ -n "$PORT" ] || {
	echo "foxglove: no viewer port in: $(cat "$tmp/launch.out")" >&2
	exit 1
}
# The mission (take-off, "HAKO", circle, landing: 33 s) costs more than the landed fleet: the
# rounds begin once it is over, so that both kinds of round measure the same workload.
world_s() { "$BIN/bin/hako-cmd" status 2>/dev/null | sed -n 's/^world time *\([0-9]*\)\..*/\1/p'; }
for _ in $(seq 1200); do
	w=$(world_s)
	[ -n "$w" ] && [ "$w" -ge 40 ] && break
	sleep 0.05
done
VPID=$(pgrep -f "hako-viewer -d $HAKO_DOMAIN " | head -n 1)
cpu() { awk '{print $14 + $15}' "/proc/$VPID/stat" 2>/dev/null || echo 0; }
c0=$(cpu)
"$BIN/test/viewer/viewer-probe" fox-load "$PORT" "$SESSIONS" "$SECONDS_" "$HAKO_DOMAIN" "$ROUNDS" \
	"$DRONES" >"$tmp/load.csv" || {
	cat "$tmp/load.csv" >&2
	exit 1
}
c1=$(cpu)
echo "bench,variant,payload_bytes,count,min_us,mean_us,p50_us,p90_us,p99_us,max_us,ops_per_s,cpu_user_s,cpu_sys_s"
awk -F, -v s="$SESSIONS" -v d="$DRONES" '
	/^[0-9]/ { if ($2 == 0) a[n0++] = $4; else { b[n1++] = $4; bytes += $5 } }
	function med(v, n,   i, j, t) {
		for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		return n % 2 ? v[int(n / 2)] : (v[n / 2 - 1] + v[n / 2]) / 2
	}
	END {
		line = "# rounds RTF without sessions:"; for (i = 0; i < n0; i++) line = line " " a[i]; print line > "/dev/stderr"
		line = "# rounds RTF with " s " sessions:"; for (i = 0; i < n1; i++) line = line " " b[i]; print line > "/dev/stderr"
		m0 = med(a, n0); m1 = med(b, n1)
		printf "foxglove,no-sessions,72,%d,,,,,,,%.0f,,\n", n0, m0 * 1000
		printf "foxglove,%d-sessions-x%d-pos,72,%d,,,,,,,%.0f,,\n", s, d, n1, m1 * 1000
		printf "# median RTF %.3f without sessions, %.3f with %d Foxglove sessions (%d pos each): ratio %.4f, cost %.2f %%; read %.1f MB/round\n", m0, m1, s, d, m1 / m0, 100 * (1 - m1 / m0), bytes / n1 / 1e6
		printf "# goal: cost <= 5 %%: %s\n", (1 - m1 / m0) <= 0.05 ? "PASS" : "MISS"
	}' "$tmp/load.csv" 2>&1
awk -v c="$((c1 - c0))" -v hz="$(getconf CLK_TCK)" -v r="$ROUNDS" -v s="$SECONDS_" 'BEGIN {
	printf "# hako-viewer CPU over the %d rounds: %.2f s in %d s (%.1f %% of a core; with sessions half the time)\n", r, c / hz, 2 * r * s, 100 * c / hz / (2 * r * s) }'
grep 'refused\|foxglove: ' "$tmp/logs/viewer.log" | head -5 | sed 's/^/# viewer: /'
