#!/bin/bash
# show_lab: the drone show's cost (issue 26). 1,024 drones on 8 client nodes of a federation in a
# hako-netlab lab (each node its own namespaces, srv-01 conducting and balancing: samples/show),
# against d1024-p2-n2 of bench/fleet (two hosts on two nodes over loopback) in the same run.
#
#   bench/show_lab.sh BUILD_DIR [--rounds R] [--seconds S] [--drones N] [--nodes K]
#
# Variants (rows in bench/fleet's CSV columns; latencies: wall us per world step over the
# rounds, min / mean / median / max; ops_per_s: world steps per wall second, the median):
#   d<N>-lab<K>     N drones on K lab nodes (even start), S s of world time (default 4) from the
#                   federation's start, no node killed: the real-time factor;
#   d<N>-p2-n2      bench/fleet --drones N --procs 2 --nodes 2, its RTF (median of R rounds);
#   d<N>-lab<K>-takeover  one node killed at S/2 (hako-netlab kill); count = the take-over in
#                   ms of world time (the first restart of its drones minus its last world
#                   time), the median of R rounds in every latency column.
# Comment lines: each round's figures, the ratio of the RTFs, the take-over. As root only with a
# lab (hako-netlab probe); otherwise the nodes run on loopback and the variants say "loop".
set -u
build=$(cd "$1" && pwd) || exit 2
shift
rounds=3 seconds=4 drones=1024 nodes=8
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2 && shift ;;
	--seconds) seconds=$2 && shift ;;
	--drones) drones=$2 && shift ;;
	--nodes) nodes=$2 && shift ;;
	*)
		echo "show_lab.sh: unknown argument $1" >&2
		exit 2
		;;
	esac
	shift
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
show=$here/../samples/show/show.sh
tmp=$(mktemp -d /tmp/bench-show-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
where=lab
if [ "$(id -u)" != 0 ] || ! "$build/bin/hako-netlab" probe >/dev/null 2>&1; then
	where=loop
fi
v=d$drones-$where$nodes
stop=$((seconds * 1000000))
kill=$(printf 'cli-%02d' $(((nodes + 1) / 2)))

# median V...: the middle value (the mean of the two middle ones).
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# row VARIANT COUNT OPS US...: a CSV row; US: per-round wall us per step (or one value).
row() {
	local variant=$1 count=$2 ops=$3
	shift 3
	printf '%s\n' "$@" | sort -g | awk -v v="$variant" -v n="$drones" -v c="$count" -v o="$ops" \
		'{x[NR] = $1; s += $1} END {m = (NR % 2) ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2;
		  printf "show_lab,%s,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.1f,0.000,0.000\n", v, n, c, x[1], s / NR, m, m, x[NR], x[NR], o}'
}

echo "bench,variant,payload_bytes,count,min_us,mean_us,p50_us,p90_us,p99_us,max_us,ops_per_s,cpu_user_s,cpu_sys_s"
rtfs=() us=() takes=()
for ((r = 1; r <= rounds; r++)); do
	# The RTF: no kill. The server's done line: world time W s in T s of wall time.
	bash "$show" --build "$build" --drones "$drones" --nodes "$nodes" --even --kill none \
		--stop-usec "$stop" --bench --out "$tmp/run" >"$tmp/rtf.txt" 2>&1 ||
		{ tail -n 20 "$tmp/rtf.txt" >&2; echo "show_lab: round $r failed" >&2; exit 1; }
	read -r w t < <(sed -n 's/^show: srv-01: hako-launch: done: world time \([0-9.]*\) s in \([0-9.]*\) s of wall time.*/\1 \2/p' "$tmp/rtf.txt")
	rtf=$(awk -v w="$w" -v t="$t" 'BEGIN {printf "%.3f", w / t}')
	rtfs+=("$rtf")
	us+=("$(awk -v w="$w" -v t="$t" 'BEGIN {printf "%.3f", t * 1e6 / (w * 1000)}')")
	# The take-over: a node killed at S/2.
	bash "$show" --build "$build" --drones "$drones" --nodes "$nodes" --even --kill "$kill" \
		--kill-at-usec $((stop / 2)) --stop-usec "$stop" --bench --out "$tmp/run" >"$tmp/take.txt" 2>&1 ||
		{ tail -n 20 "$tmp/take.txt" >&2; echo "show_lab: take-over round $r failed" >&2; exit 1; }
	tk=$(sed -n 's/^show: take-over: .*: \(-\{0,1\}[0-9]*\) ms$/\1/p' "$tmp/take.txt")
	takes+=("${tk:-nan}")
	echo "# round $r: $v RTF $rtf ($w s of world time in $t s); take-over $kill: ${tk:-none} ms of world time"
done
rtf_lab=$(median "${rtfs[@]}")
row "$v" $((seconds * 1000)) "$(awk -v r="$rtf_lab" 'BEGIN {print r * 1000}')" "${us[@]}"

# The reference in the same run: bench/fleet's d<N>-p2-n2.
"$build/bench/fleet" --drones "$drones" --procs 2 --nodes 2 --rounds "$rounds" >"$tmp/fleet.csv" 2>"$tmp/fleet.err" ||
	{ cat "$tmp/fleet.err" >&2; echo "show_lab: bench/fleet failed" >&2; exit 1; }
grep "^fleet,d$drones-p2-n2," "$tmp/fleet.csv"
ops=$(awk -F, -v v="d$drones-p2-n2" '$2 == v {print $11}' "$tmp/fleet.csv")
rtf_n2=$(awk -v o="$ops" 'BEGIN {printf "%.3f", o / 1000}')
take=$(median "${takes[@]}")
row "$v-takeover" "${take%.*}" 0 "$take"
echo "# $v: RTF $rtf_lab (median of ${rtfs[*]}); d$drones-p2-n2: RTF $rtf_n2; ratio $v / d$drones-p2-n2 = $(awk -v a="$rtf_lab" -v b="$rtf_n2" 'BEGIN {printf "%.3f", a / b}')"
echo "# take-over after $kill was killed: median $take ms of world time (rounds: ${takes[*]})"
