// What Foxglove's 3D panel would show of the fleet, drawn from what the real client decodes
// (the app itself cannot run here): FoxgloveClient connects to hako-viewer, subscribes /tf and
// every /<drone>/pos, decodes them with the advertised schemas, and once the world time reaches
// WORLD_S writes a page with the drones seen from above (/tf's frames) and their altitude.
// A headless Chromium then takes its screenshot (test/viewer/foxglove_shot.sh).
//
// usage: node foxglove_shot.js PORT OUT_HTML [WORLD_S (12)]
"use strict";
const fs = require("fs");
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const { parse } = require("@foxglove/rosmsg");
const { MessageReader } = require("@foxglove/rosmsg2-serialization");
const WebSocket = require("ws");

const [port, out, worldS = "12"] = process.argv.slice(2);
const atNs = BigInt(Math.round(Number(worldS) * 1e9));
const c = new FoxgloveClient({ ws: new WebSocket(`ws://127.0.0.1:${port}/`, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]) });
const channels = new Map(), subs = new Map(), pos = new Map();
let tf = null, info = null, time = 0n;
setTimeout(() => (console.error("foxglove_shot: timed out"), process.exit(1)), 120000).unref();
c.on("serverInfo", (i) => (info = i));
c.on("time", (t) => (time = t.timestamp));
c.on("advertise", (chs) => {
  for (const ch of chs) {
    channels.set(ch.id, { ...ch, reader: new MessageReader(parse(ch.schema, { ros2: true })) });
    if (ch.topic === "/tf" || ch.topic.endsWith("/pos")) subs.set(c.subscribe(ch.id), ch.id);
  }
});
c.on("message", (m) => {
  const ch = channels.get(subs.get(m.subscriptionId));
  const v = ch.reader.readMessage(new Uint8Array(m.data.buffer, m.data.byteOffset, m.data.byteLength));
  if (ch.topic === "/tf") {
    if (m.timestamp >= atNs && !tf) {
      tf = { stamp: m.timestamp, v };
      write();
    }
  } else pos.set(ch.topic.split("/")[1], v);
});

function write() {
  const t = tf.v.transforms;
  const xs = t.map((e) => e.transform.translation);
  // top-down, x to the right, y up (the frame the fleet draws its letters in)
  const sx = (p) => p.x, sy = (p) => -p.y;
  const minX = Math.min(...xs.map(sx)) - 1, maxX = Math.max(...xs.map(sx)) + 1;
  const minY = Math.min(...xs.map(sy)) - 1, maxY = Math.max(...xs.map(sy)) + 1;
  const W = 1000, H = 640, k = Math.min(W / (maxX - minX), H / (maxY - minY));
  const zs = xs.map((p) => p.z), zmin = Math.min(...zs), zmax = Math.max(...zs);
  const span = Math.max(zmax - zmin, 1);
  const col = (z) => `hsl(${210 - 160 * ((z - zmin) / span)},70%,45%)`;
  let agree = 0;
  for (const e of t) {
    const p = pos.get(e.child_frame_id);
    if (p && Math.abs(p.linear.x - e.transform.translation.x) < 0.5) agree++;
  }
  const dots = t.map((e) => {
    const p = e.transform.translation, X = (sx(p) - minX) * k, Y = (sy(p) - minY) * k;
    return `<circle cx="${X.toFixed(1)}" cy="${Y.toFixed(1)}" r="5" fill="${col(p.z)}"><title>${e.child_frame_id}</title></circle>`;
  }).join("\n");
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>hako fleet via Foxglove</title>
<style>body{font:14px sans-serif;margin:16px;background:#fafafa}svg{background:#fff;border:1px solid #ccc}
.k{color:#555}</style></head><body>
<h2>The fleet as Foxglove's client decodes it</h2>
<p class="k">@foxglove/ws-protocol FoxgloveClient &rarr; hako-viewer (${info.name}, domain ${info.metadata.domain}),
${channels.size} channels advertised; <b>/tf</b> (${channels.get(subs.get([...subs.keys()].find((s) => channels.get(subs.get(s)).topic === "/tf"))).schemaName}, cdr, ros2msg schema)
decoded by @foxglove/rosmsg2-serialization: ${t.length} frames world &rarr; drone at world time
${(Number(tf.stamp) / 1e9).toFixed(3)} s; ${agree} of them agree with their /&lt;drone&gt;/pos (geometry_msgs/msg/Twist).
Seen from above, x to the right, y up; colour = altitude ${zmin.toFixed(2)} m (blue) to ${zmax.toFixed(2)} m.</p>
<svg width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">${dots}</svg></body></html>`;
  fs.writeFileSync(out, html);
  console.log(`foxglove_shot: ${t.length} drones at ${(Number(tf.stamp) / 1e9).toFixed(3)} s, ${agree} agree with pos; wrote ${out}`);
  c.close();
  process.exit(t.length > 0 ? 0 : 1);
}
