#!/bin/sh
# run.sh's check of this sample (expected/success.yaml), run in the sample's hako/ folder.
exec python3 "$(dirname "$0")/check_ticks.py" logs/cli-01/hello-asset-a.log logs/cli-02/hello-asset-b.log
