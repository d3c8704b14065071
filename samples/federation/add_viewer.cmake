# Give a generated launch file a "viewer" (docs/hako-launch.md): cmake -DFILE=launch.json
# -DVIEWER='{"port": 8080}' -P add_viewer.cmake. The generator (hako-conductor gen) writes the
# nodes' files; the sample's server shows its URL.
file(READ "${FILE}" text)
string(JSON text SET "${text}" viewer "${VIEWER}")
file(WRITE "${FILE}" "${text}\n")
