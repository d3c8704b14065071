#!/bin/sh
# registry.cdr_foxglove: hako's CDR of every built-in type against @foxglove/rosmsg2-serialization,
# both ways: Foxglove reads and rewrites hako's bytes, then hako decodes the bytes Foxglove wrote.
# usage: cdr_foxglove.sh CDR_VECTORS_PROGRAM TEST_NODE_DIR
set -e
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$1" "$dir"
"$2/run.sh" cdr_foxglove.js "$dir"
"$1" --decode "$dir"
