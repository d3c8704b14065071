#!/bin/sh
# Run one of Hakoniwa's published federations (hakoniwalab/hakoniwa-conductor, samples/<name>)
# from its generated files, one hako-launch per node on this machine, and print each node's
# drift table. Usage:
#
#   samples/hakoniwa-federations/run.sh [--build DIR] SAMPLE_DIR
#
# SAMPLE_DIR is the published sample's folder (the one with config/generated/). The launch
# files of this folder's <name>/ (and the stand-in programs) are copied to SAMPLE_DIR/hako/;
# the generated files are used as they are. Keys for the control plane are made once
# (hako-conductor keygen) in config/generated/conductor/keys. --build: hako's build folder
# (default: build/ of this checkout; without one, the installed tools on PATH).
# Each node runs in domain <$HAKO_DOMAIN or the sample's name>-<node>. On separate machines,
# run on each node the line this prints for it.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../build
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -eq 1 ] || { echo "usage: run.sh [--build DIR] SAMPLE_DIR" >&2; exit 2; }
sample=$(cd "$1" && pwd)
name=$(basename "$sample")
[ -d "$here/$name" ] || {
	echo "run.sh: $sample: no launch files for a sample named '$name' (have: $(cd "$here" && ls -d */ | tr -d / | tr '\n' ' '))" >&2
	exit 2
}
gen=$sample/config/generated
[ -d "$gen/conductor" ] || { echo "run.sh: $gen/conductor: not found (not a generated tree)" >&2; exit 2; }

path=
if [ -x "$build/bin/hako-launch" ]; then
	bin=$(cd "$build" && pwd)/bin
	path="--path $bin --path $(cd "$build" && pwd)/samples/fleet"
	PYTHONPATH=$(cd "$build" && pwd)/python${PYTHONPATH:+:$PYTHONPATH}
	export PYTHONPATH
	launch=$bin/hako-launch
	conductor=$bin/hako-conductor
else
	launch=hako-launch
	conductor=hako-conductor
fi

rm -rf "$sample/hako"
cp -r "$here/$name" "$sample/hako"
nodes=$(cd "$sample/hako" && ls *.launch.json | sed 's/\.launch\.json$//')
files=
for n in $nodes; do files="$files $gen/conductor/$n.json"; done
# shellcheck disable=SC2086
"$conductor" keygen $files | head -1

# Each node's domain: <prefix>-<node>, the prefix $HAKO_DOMAIN or the sample's name.
prefix=${HAKO_DOMAIN:-$name}
pids=
cleanup() {
	for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
	wait
}
trap 'cleanup; exit 130' INT TERM
cd "$sample/hako"
for n in $nodes; do
	echo "node $n: (cd $sample/hako && HAKO_DOMAIN=$prefix-$n hako-launch $n.launch.json)"
	# shellcheck disable=SC2086
	HAKO_DOMAIN=$prefix-$n "$launch" $path --no-echo --quiet "$n.launch.json" >"$n.out" 2>&1 &
	pids="$pids $!"
done
# As a federation file does: once a node fails, the others are ended (a client that lost its
# server would wait for it to come back).
status=0
left=$pids
while [ -n "$left" ]; do
	alive=
	for p in $left; do
		if kill -0 "$p" 2>/dev/null; then
			alive="$alive $p"
		elif ! wait "$p"; then
			status=1
		fi
	done
	left=$alive
	if [ $status -ne 0 ] && [ -n "$left" ]; then
		for p in $left; do kill -TERM "$p" 2>/dev/null || true; done
		for p in $left; do wait "$p" || true; done
		left=
	fi
	[ -z "$left" ] || sleep 0.2
done
pids=
for n in $nodes; do
	echo "== $n"
	grep -E '^hako-launch: (federation|  |done|FAILED)' "$n.out" || tail -5 "$n.out"
done
# A sample whose checks need the logs of several nodes (they are all on this machine here).
if [ $status -eq 0 ] && [ -x "$sample/hako/check.sh" ]; then
	"$sample/hako/check.sh" || status=1
fi
[ $status -eq 0 ] && echo "run.sh: every node ended well; logs in $sample/hako/logs" ||
	echo "run.sh: FAILED: see $sample/hako/*.out and $sample/hako/logs" >&2
exit $status
