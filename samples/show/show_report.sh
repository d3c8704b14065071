#!/bin/bash
# show_report.sh: the drone show's report, from the files of a run of show.sh.
#
#   show_report.sh --dir OUT --build BUILD_DIR [--kill NODE] [--wall S] [--loopback]
#
# Prints, and checks (exit 1 when one fails):
#   - formations: fleet-report on every host's trajectories (every drone within 0.1 m of its
#     target in "HAKO" and in the circle, every drone landed);
#   - per node: drones at the start and at the end, hand-offs to and from other hosts, drones
#     restarted from a lost node (take-overs), and the monitor's orders and lost hosts;
#   - the take-over: the first restart's world time minus the lost node's last world time;
#   - drift per node: each node's drift table (hako-launch), and every node's conductor.trace
#     checked with hako-conductor check --dmax-usec D (the killed node's too, up to its death);
#   - hako-rd check on the hosts' RD traces (one owner at a time, each model step once);
#   - the final states of the surviving hosts against the one-process run, byte for byte;
#   - where the view was.
set -u
dir='' build='' kill='' wall='' where=lab
while [ $# -gt 0 ]; do
	case $1 in
	--dir) dir=$2 && shift ;;
	--build) build=$2 && shift ;;
	--kill) kill=$2 && shift ;;
	--wall) wall=$2 && shift ;;
	--loopback) where=loopback ;;
	*)
		echo "show_report.sh: unknown argument $1" >&2
		exit 2
		;;
	esac
	shift
done
cfg=$dir/config
bin=$build/bin
drones=0 nodes=0 dmax=0 stop=0
# shellcheck disable=SC1091 # written by show_config.sh: drones, nodes, dmax, stop, balance
. "$cfg/show.env"
fails=0
bad() {
	echo "  FAIL: $*"
	fails=$((fails + 1))
}
section() { printf '\n== %s\n' "$1"; }
mapfile -t ids < <(awk '{print $1}' "$cfg/nodes")
total=0

echo "drone show: $drones drones, $nodes client nodes + srv-01, RD-Full balance, Dmax $((dmax / 1000)) ms, $((stop / 1000000)) s of world time ($where${wall:+, $wall s of wall time})"

section "formations (fleet-report)"
# The one-process run's flight is the yardstick: at 1024 drones the fleet's mission (15 s a
# leg) is too short for every drone to reach the circle, in one process as on the nodes.
"$build/samples/fleet/fleet-report" --dir "$dir/ref-out" >"$dir/fleet-report-ref.txt" 2>&1
ref_ok=$?
if "$build/samples/fleet/fleet-report" --dir "$cfg/out" >"$dir/fleet-report.txt" 2>&1; then
	grep -vE "^\s*$" "$dir/fleet-report.txt" | sed 's/^/  /'
else
	sed 's/^/  /' "$dir/fleet-report.txt"
	if [ "$ref_ok" -ne 0 ] && diff -q <(grep -E "^  (hako|circle|landed) " "$dir/fleet-report.txt") \
		<(grep -E "^  (hako|circle|landed) " "$dir/fleet-report-ref.txt") >/dev/null; then
		echo "  NOTE: the one-process run of the same mission misses the same formations by the"
		echo "  same figures: the mission's limit at $drones drones, not the nodes'"
	else
		bad "fleet-report: a formation was not reached (the one-process run's figures:"
		grep -E "^  (hako|circle|landed) " "$dir/fleet-report-ref.txt"
	fi
fi

section "hand-offs and take-overs per node"
printf '  %-8s %6s %6s %8s %8s %10s  %s\n' node start end "handed" "taken" "from lost" "orders done"
for ((k = 1; k <= nodes; k++)); do
	id=${ids[$k]}
	f=$dir/$id.txt
	s=$(sed -n "s/.*fleet-zone-$k: host $k of [0-9]* drones, \([0-9]*\) at the start.*/\1/p" "$f" | head -n 1)
	line=$(grep -m1 "fleet-zone-$k: [0-9]* drones handed to other hosts" "$f")
	h=$(sed -n 's/.*: \([0-9]*\) drones handed to other hosts.*/\1/p' <<<"$line")
	t=$(sed -n 's/.*, \([0-9]*\) taken over from them.*/\1/p' <<<"$line")
	l=$(sed -n 's/.*, \([0-9]*\) taken from a lost host.*/\1/p' <<<"$line")
	e=$(sed -n 's/.*; \([0-9]*\) drones at the end.*/\1/p' <<<"$line")
	o=$(grep -c "fleet-zone-$k: order [0-9]*: .* asked of the server" "$f")
	if [ "$id" = "$kill" ]; then
		e="killed"
	elif [ -z "$line" ]; then
		bad "$id: its host said no summary"
	fi
	printf '  %-8s %6s %6s %8s %8s %10s  %s\n' "$id" "${s:--}" "${e:--}" "${h:--}" "${t:--}" "${l:--}" "$o"
	[[ $e =~ ^[0-9]+$ ]] && total=$((total + e))
done
[ "$total" -eq "$drones" ] || bad "the surviving hosts end with $total drones, not $drones"
grep -hE "fleet-monitor: t=.*(moving|lost)|fleet-monitor: [0-9]+ moves ordered" "$dir/srv-01.txt" |
	sed 's/^\[monitor\] /  /' | awk 'NR <= 6 || /lost|moves ordered/' | uniq
n=$(grep -c "fleet-monitor: t=.*moving" "$dir/srv-01.txt")
echo "  ($n orders of the monitor in all)"

if [ -n "$kill" ] && [ "$kill" != none ]; then
	section "the lost node ($kill)"
	grep -h "client $kill lost\|killed $kill\|node $kill killed" "$dir/srv-01.txt" "$dir/killed.txt" 2>/dev/null |
		sed 's/^/  /'
	last=$(sed -n "s/.*client $kill lost (its last world time \([0-9.]*\) s).*/\1/p" "$dir/srv-01.txt")
	first=$(cat "$cfg"/trace/rd-*.jsonl 2>/dev/null | grep '"ev":"restart"' |
		sed 's/.*"t":\([0-9]*\).*/\1/' | sort -n | head -n 1)
	if [ -n "$last" ] && [ -n "$first" ]; then
		gap=$(awk -v a="$last" -v b="$first" 'BEGIN {printf "%d", b / 1000 - a * 1000 + 0.5}')
		echo "  take-over: $kill's last world time $last s, first restart of its drones at $((first / 1000)) ms: carried on by the others $gap ms of world time after"
		echo "$gap" >"$dir/takeover-ms"
	else
		bad "no restart of $kill's drones found (server line: '${last:-none}')"
	fi
fi

section "drift per node (hako-launch's tables; Dmax $dmax us)"
for id in "${ids[@]}"; do
	if grep -q "drift against each peer" "$dir/$id.txt"; then
		sed -n '/drift against each peer/,/done:\|FAILED:\|logs in/p' "$dir/$id.txt" |
			grep -E "^hako-launch:  " | sed "s/^hako-launch:  /  $id /"
	else
		echo "  $id: no table (killed)"
	fi
done
echo "  conductor.trace checked with hako-conductor check --dmax-usec $dmax:"
for id in "${ids[@]}"; do
	tr=$cfg/trace/conductor-$id.csv
	if [ "$id" = "$kill" ] && [ -s "$tr" ]; then
		# Killed while it wrote: a last line cut short is not a sample.
		[ -z "$(tail -c 1 "$tr")" ] || sed -i '$d' "$tr"
	fi
	if r=$("$bin/hako-conductor" check --dmax-usec "$dmax" "$tr" 2>&1); then
		echo "    $id: $r"
	else
		echo "    $id: $r"
		bad "$id: its conductor trace is not within Dmax"
	fi
done

section "ownership (hako-rd check on the hosts' RD traces)"
if "$bin/hako-rd" check "$cfg"/trace/rd-*.jsonl >"$dir/rd-check.txt" 2>&1; then
	sed 's/^/  /' "$dir/rd-check.txt"
else
	sed 's/^/  /' "$dir/rd-check.txt"
	bad "hako-rd check"
fi

section "final states against one host in one process"
sort -n "$cfg"/final/*.txt >"$dir/final-nodes.txt" 2>/dev/null
sort -n "$dir/final-ref.txt" >"$dir/final-ref-sorted.txt" 2>/dev/null
got=$(wc -l <"$dir/final-nodes.txt")
if [ "$got" -eq "$drones" ] && [ -s "$dir/final-ref-sorted.txt" ] &&
	cmp -s "$dir/final-nodes.txt" "$dir/final-ref-sorted.txt"; then
	echo "  $got drones: the same bytes ($(cksum <"$dir/final-nodes.txt" | awk '{print $1}'))"
else
	bad "the final states of the nodes ($got drones) differ from the one-process run's"
fi

section "the view"
if [ -s "$dir/viewer.txt" ]; then
	url=$(sed -n "s/.*read-only at \(http[^ ]*\).*/\1/p" "$dir/viewer.txt")
	echo "  hako-viewer ran on srv-01's domain ($url while it ran): its dashboard's Federation"
	echo "  section shows every client node joined, its world time and drift against Dmax (cli-0x"
	echo "  lost when killed); its channels list the hosts' load records (FleetHost-<k>) and the"
	echo "  monitor's orders (FleetMonitor) that the bridges carried to srv-01."
else
	echo "  no viewer (--viewer-port 0)"
fi
echo "  The drones from above, coloured by the host that flew each at each moment: $cfg/out/fleet-xy.svg"

echo
if [ "$fails" -eq 0 ]; then
	echo "show: every check held"
else
	echo "show: $fails check(s) failed"
	exit 1
fi
