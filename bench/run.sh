#!/bin/sh
# Run the full benchmarks and keep their CSV output.
#   bench/run.sh <build-dir>        (make bench)
# Installs nothing: the baselines (libzmq, pipes) come with `make deps`. Extra arguments for
# each program can be passed in SHM_LATENCY_ARGS / STEP_RATE_ARGS / PDU_CODEC_ARGS /
# COMPAT_PDU_ARGS / RD_HANDOFF_ARGS / ENDPOINT_THROUGHPUT_ARGS / ENDPOINT_LATENCY_ARGS /
# BRIDGE_OVERHEAD_ARGS / CONDUCTOR_RATE_ARGS / CONDUCTOR_SCALE_ARGS / FLEET_ARGS / SHOW_LAB_ARGS /
# PYTHON_STEP_ARGS / MQTT_THROUGHPUT_ARGS /
# MCAP_WRITE_ARGS, e.g.
# STEP_RATE_ARGS=--quick.
# Results: <build-dir>/bench-results/<bench>-<timestamp>.csv, plus <bench>.csv (the latest run)
# and env-<timestamp>.txt describing the machine.
set -eu

if [ $# -lt 1 ]; then
	echo "usage: $0 <build-dir>" >&2
	exit 2
fi
build=$1
out=$build/bench-results
for b in shm_latency step_rate pdu_codec compat_pdu rd_handoff endpoint_throughput endpoint_latency \
	bridge_overhead conductor_rate fleet python_step mcap_write; do
	if [ ! -x "$build/bench/$b" ]; then
		echo "$0: $build/bench/$b is missing: build with HAKO_BUILD_BENCH=ON (make build)" >&2
		exit 1
	fi
done
mkdir -p "$out"
stamp=$(date +%Y%m%d-%H%M%S)

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "git: $(git -C "$(dirname "$0")/.." describe --always --dirty 2>/dev/null || echo unknown)"
	echo "uname: $(uname -srmv)"
	echo "cpus: $(nproc)"
	lscpu 2>/dev/null | grep -E '^(Model name|Hypervisor vendor|Virtualization type)' || true
	echo "loadavg before: $(cat /proc/loadavg 2>/dev/null || echo unknown)"
	echo "HAKO_SPIN_USEC: ${HAKO_SPIN_USEC:-(unset: core default)}"
} >"$out/env-$stamp.txt"

# Benchmarks spin on every CPU: anything else running skews them (the ratios less so).
run() {
	name=$1
	shift
	echo "== $name $*" >&2
	"$build/bench/$name" "$@" >"$out/$name-$stamp.csv"
	cp "$out/$name-$stamp.csv" "$out/$name.csv"
	cat "$out/$name-$stamp.csv"
	echo
}
# shellcheck disable=SC2086 # word splitting of the extra arguments is intended
run shm_latency ${SHM_LATENCY_ARGS:-}
# shellcheck disable=SC2086
run step_rate ${STEP_RATE_ARGS:-}
# shellcheck disable=SC2086
run pdu_codec ${PDU_CODEC_ARGS:-}
# shellcheck disable=SC2086
run compat_pdu ${COMPAT_PDU_ARGS:-}
# shellcheck disable=SC2086
run rd_handoff ${RD_HANDOFF_ARGS:-}
# shellcheck disable=SC2086
run endpoint_throughput ${ENDPOINT_THROUGHPUT_ARGS:-}
# shellcheck disable=SC2086
run endpoint_latency ${ENDPOINT_LATENCY_ARGS:-}
# shellcheck disable=SC2086
run bridge_overhead ${BRIDGE_OVERHEAD_ARGS:-}
# shellcheck disable=SC2086
run conductor_rate ${CONDUCTOR_RATE_ARGS:-}
# A script, not a program: the server conductor against its number of clients (lab or loopback).
# Its arguments are positional (ROUNDS WORLD_S NODES VARIANTS).
echo "== conductor_scale.sh ${CONDUCTOR_SCALE_ARGS:-}" >&2
# shellcheck disable=SC2086
"$(dirname "$0")/conductor_scale.sh" "$build" ${CONDUCTOR_SCALE_ARGS:-} >"$out/conductor_scale-$stamp.csv"
cp "$out/conductor_scale-$stamp.csv" "$out/conductor_scale.csv"
cat "$out/conductor_scale-$stamp.csv"
echo
# shellcheck disable=SC2086
run fleet ${FLEET_ARGS:-}
# The drone show's cost: 1,024 drones on 8 hako-netlab nodes against d1024-p2-n2 (a script:
# samples/show in a lab as root, on loopback otherwise; SHOW_LAB_ARGS, e.g. --rounds 1).
echo "== show_lab ${SHOW_LAB_ARGS:-}" >&2
# shellcheck disable=SC2086
"$(dirname "$0")/show_lab.sh" "$build" ${SHOW_LAB_ARGS:-} >"$out/show_lab-$stamp.csv"
cp "$out/show_lab-$stamp.csv" "$out/show_lab.csv"
cat "$out/show_lab-$stamp.csv"
echo
# shellcheck disable=SC2086
run python_step ${PYTHON_STEP_ARGS:-}
# Only in a build with the mqtt comm (HAKO_WITH_MQTT), and with mosquitto installed.
if [ -x "$build/bench/mqtt_throughput" ] && [ -x /usr/sbin/mosquitto ]; then
	# shellcheck disable=SC2086
	run mqtt_throughput ${MQTT_THROUGHPUT_ARGS:-}
else
	echo "$0: mqtt_throughput skipped (not built, or no /usr/sbin/mosquitto)" >&2
fi
# shellcheck disable=SC2086
run mcap_write ${MCAP_WRITE_ARGS:-}

echo "loadavg after: $(cat /proc/loadavg 2>/dev/null || echo unknown)" >>"$out/env-$stamp.txt"
echo "results in $out (env-$stamp.txt, *-$stamp.csv)" >&2
