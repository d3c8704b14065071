#!/bin/bash
# mcap.record_reader: a hello run recorded by hako-record (under hako-launch, in a domain of its
# own, paced at 4x so that most writes are seen), then read by @mcap/core + @mcap/support and
# decoded by @foxglove/rosmsg2-serialization (check_record.mjs). The npm packages are checked
# here, at run time (make test-deps installs them).
# Then 8 drones of the fleet (fleet-host: Twist, HakoHilActuatorControls with its arrays,
# DroneStatus) recorded for 0.3 s, each message decoded and written again by Foxglove's codec
# (check_record_any.mjs).
#   run_record_reader.sh BIN_DIR HELLO_WRITER HELLO_PDUDEF FLEET_HOST FLEET_PDUDEF WORK_DIR
set -u
bin=$1
writer=$2
pdudef=$3
fleet_host=$4
fleet_pdudef=$5
work=$6
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1; then
	echo "mcap.record_reader: node is missing: make test-deps" >&2
	exit 1
fi
for p in "mcap/node/node_modules/@mcap/core" "mcap/node/node_modules/@mcap/support" \
	"node/node_modules/@foxglove/rosmsg2-serialization" "node/node_modules/@foxglove/rosmsg"; do
	if [ ! -d "$here/../$p" ]; then
		echo "mcap.record_reader: test/$p is missing: make test-deps" >&2
		exit 1
	fi
done
rm -rf "$work"
mkdir -p "$work"
trap 'for d in rec-reader-$$ rec-reader-fleet-$$; do HAKO_DOMAIN=$d "$bin/hako-cmd" clean --force >/dev/null 2>&1; done; rm -rf "$work"' EXIT
cat >"$work/launch.json" <<JSON
{
  "domain": "rec-reader-$$",
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "real_time_factor": 4,
                "stop_at_usec": 1000000},
  "log_dir": "$work/logs",
  "processes": [
    {"name": "rec", "command": "$bin/hako-record",
     "args": ["-o", "$work/hello.mcap", "--pdudef", "$pdudef", "--until-stop", "--chunk-kb", "8"],
     "wait_for": {"log": "recording domain"}},
    {"name": "writer", "command": "$writer", "wait_for": {"asset": "writer"}}
  ]
}
JSON
"$bin/hako-launch" --quiet --no-echo "$work/launch.json" || { cat "$work/logs/rec.log"; exit 1; }
recorded=$(sed -nE 's/.*hako-record: done.*: ([0-9]+) messages on.*/\1/p' "$work/logs/rec.log")
[ -n "$recorded" ] && [ "$recorded" -gt 0 ] || { echo "nothing recorded"; cat "$work/logs/rec.log"; exit 1; }
node "$here/check_record.mjs" "$work/hello.mcap" "$recorded" || exit 1

cat >"$work/fleet.json" <<JSON
{
  "domain": "rec-reader-fleet-$$",
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "real_time_factor": 2,
                "stop_at_usec": 300000},
  "log_dir": "$work/logs-fleet",
  "processes": [
    {"name": "rec", "command": "$bin/hako-record",
     "args": ["-o", "$work/fleet.mcap", "--pdudef", "$fleet_pdudef", "--until-stop",
              "--chunk-kb", "64", "--wake-on-write"],
     "wait_for": {"log": "recording domain"}},
    {"name": "host", "command": "$fleet_host", "args": ["--drones", "8", "--asset", "host"],
     "wait_for": {"asset": "host"}}
  ]
}
JSON
"$bin/hako-launch" --quiet --no-echo "$work/fleet.json" || { cat "$work/logs-fleet/rec.log"; exit 1; }
recorded=$(sed -nE 's/.*hako-record: done.*: ([0-9]+) messages on 32 channels.*/\1/p' "$work/logs-fleet/rec.log")
[ -n "$recorded" ] && [ "$recorded" -gt 0 ] || { echo "fleet: not 32 channels recorded"; cat "$work/logs-fleet/rec.log"; exit 1; }
node "$here/check_record_any.mjs" "$work/fleet.mcap" "$recorded" \
	"geometry_msgs/msg/Twist,hako_mavlink_msgs/msg/HakoHilActuatorControls,hako_msgs/msg/DroneStatus" || exit 1
