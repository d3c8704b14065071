// hako-viewer's Foxglove side against a client nobody here wrote: @foxglove/ws-protocol's
// FoxgloveClient (over the `ws` package) lists the channels, subscribes, decodes each message
// with the advertised ros2msg schema (@foxglove/rosmsg + rosmsg2-serialization), and the
// values must equal `hako-cmd pdu --json` at a stopped world; time frames advance while the
// world runs; clientPublish is refused without the token and writes the PDU with it.
//
// usage: node foxglove_live.js PORT TOKEN HAKO_CMD PDUDEF
"use strict";
const { execFileSync } = require("child_process");
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const { parse } = require("@foxglove/rosmsg");
const { MessageReader, MessageWriter } = require("@foxglove/rosmsg2-serialization");
const WebSocket = require("ws");

const [port, token, hakoCmd, pdudef] = process.argv.slice(2);
if (!pdudef) {
  console.error("usage: node foxglove_live.js PORT TOKEN HAKO_CMD PDUDEF");
  process.exit(2);
}
let fails = 0;
function fail(msg) {
  console.log("FAIL: " + msg);
  fails++;
}
function check(cond, msg) {
  if (!cond) fail(msg);
}
setTimeout(() => {
  console.log("FAIL: the test took more than 60 s");
  process.exit(1);
}, 60000).unref();

function hako(...args) {
  return execFileSync(hakoCmd, args, { encoding: "utf8" });
}
function pduJson(robot, id) {
  const text = hako("pdu", "--pdudef", pdudef, "--json", robot, String(id));
  return JSON.parse(text.replace(/([:\[,]\s*)(-?\d{16,})(?=\s*[,\]}])/g, '$1"$2"'));
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn, ms = 10000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await sleep(20);
  }
}

function compare(got, want, where) {
  if (typeof got === "bigint") return got.toString() === String(want) ? null : `${where}: ${got} != ${want}`;
  if (typeof got === "number") return got === want || got === Math.fround(want) ? null : `${where}: ${got} != ${want}`;
  if (typeof got === "string" || typeof got === "boolean") return got === want ? null : `${where}: ${got} != ${want}`;
  if (Array.isArray(got) || ArrayBuffer.isView(got)) {
    const g = Array.from(got);
    if (!Array.isArray(want) || want.length !== g.length) return `${where}: length ${g.length} != ${want && want.length}`;
    for (let i = 0; i < g.length; i++) {
      const e = compare(g[i], want[i], `${where}[${i}]`);
      if (e) return e;
    }
    return null;
  }
  for (const k of Object.keys(want)) {
    const e = compare(got[k], want[k], `${where}.${k}`);
    if (e) return e;
  }
  return null;
}

// A FoxgloveClient that records what the server says.
function connect(query = "") {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/${query}`, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]);
  const c = new FoxgloveClient({ ws });
  const st = { client: c, ws, info: null, channels: new Map(), statuses: [], times: [], msgs: new Map(), subs: new Map(), closed: false };
  c.on("serverInfo", (i) => (st.info = i));
  c.on("advertise", (chs) => chs.forEach((ch) => st.channels.set(ch.id, { ...ch, reader: new MessageReader(parse(ch.schema, { ros2: true })) })));
  c.on("unadvertise", (ids) => ids.forEach((id) => st.channels.delete(id)));
  c.on("status", (s) => st.statuses.push(s));
  c.on("time", (t) => st.times.push(t.timestamp));
  c.on("message", (m) => {
    const ch = st.channels.get(st.subs.get(m.subscriptionId));
    if (!ch) return fail(`a message for subscription ${m.subscriptionId}, which is no channel`);
    const bytes = new Uint8Array(m.data.buffer, m.data.byteOffset, m.data.byteLength);
    st.msgs.set(ch.topic, { timestamp: m.timestamp, value: ch.reader.readMessage(bytes) });
  });
  c.on("error", (e) => console.log("client error: " + e));
  c.on("close", () => (st.closed = true));
  st.subscribe = (id) => st.subs.set(c.subscribe(id), id);
  return st;
}
const topicId = (st, topic) => [...st.channels.values()].find((c) => c.topic === topic)?.id;

async function main() {
  // ---- read-only session: list, subscribe, decode, time ----
  const a = connect();
  await until("serverInfo and channels", () => a.info && a.channels.size >= 5);
  check(a.ws.protocol === "foxglove.websocket.v1", `subprotocol ${a.ws.protocol}`);
  check(a.info.capabilities.includes("time") && a.info.capabilities.includes("clientPublish"), "capabilities: " + a.info.capabilities);
  check(a.info.supportedEncodings.includes("cdr"), "supportedEncodings");
  check(typeof a.info.sessionId === "string" && a.info.sessionId.length > 0, "sessionId");
  const byTopic = new Map([...a.channels.values()].map((c) => [c.topic, c]));
  console.log("advertised: " + [...byTopic.keys()].join(" "));
  const expect = {
    "/Robot/counter": "std_msgs/msg/UInt64",
    "/Drone1/pos": "geometry_msgs/msg/Twist",
    "/Drone2/pos": "geometry_msgs/msg/Twist",
    "/Drone3/pos": "geometry_msgs/msg/Twist",
    "/tf": "tf2_msgs/msg/TFMessage",
  };
  for (const [t, type] of Object.entries(expect)) {
    const c = byTopic.get(t);
    check(c && c.schemaName === type && c.encoding === "cdr" && c.schemaEncoding === "ros2msg", `channel ${t}: ${JSON.stringify(c && { ...c, reader: undefined })}`);
  }
  for (const c of a.channels.values()) a.subscribe(c.id);
  await until("a message on every channel", () => a.msgs.size >= a.channels.size);
  await until("time frames", () => a.times.length >= 3);
  const t0 = a.times[a.times.length - 1];
  await until("world time advancing", () => a.times[a.times.length - 1] > t0 + 100000000n);
  console.log(`world time advanced: ${t0} -> ${a.times[a.times.length - 1]} ns`);
  const c0 = a.msgs.get("/Robot/counter");
  await until("counter advancing", () => a.msgs.get("/Robot/counter").value.data > c0.value.data);

  // ---- unsubscribe stops the messages (what was in flight may still come: let it settle) ----
  const sid = [...a.subs].find(([, ch]) => ch === topicId(a, "/Robot/counter"))[0];
  a.client.unsubscribe(sid);
  const at = (d) => a.times[a.times.length - 1] + d;
  const t1 = at(100000000n);
  await until("100 ms of world time", () => a.times[a.times.length - 1] >= t1);
  const last = a.msgs.get("/Robot/counter").value.data;
  const t2 = at(300000000n);
  await until("300 ms more", () => a.times[a.times.length - 1] >= t2);
  check(a.msgs.get("/Robot/counter").value.data === last, "counter messages after unsubscribe");
  check(BigInt(pduJson("Robot", 0).data) > last, "the counter did not move");

  // ---- at a stopped world the values equal hako-cmd pdu's ----
  hako("stop");
  await until("stopped", () => /status=stopped/.test(hako("status")));
  const b = connect(); // a fresh session gets the current value of each channel it subscribes
  await until("channels", () => b.channels.size >= 5);
  for (const c of b.channels.values()) b.subscribe(c.id);
  await until("a message on every channel", () => b.msgs.size >= b.channels.size);
  const secs = hako("status").match(/world time\s+([\d.]+) s/);
  const stopped = secs ? BigInt(Math.round(Number(secs[1]) * 1000) + 1) * 1000000n : -1n;
  for (const [topic, m] of b.msgs) {
    if (topic === "/tf") continue;
    const [, robot] = topic.split("/");
    const want = pduJson(robot, 0);
    const e = compare(m.value, want, topic);
    check(!e, e);
    check(m.timestamp <= stopped || stopped < 0n, `${topic}: timestamp ${m.timestamp} after the world time ${stopped}`);
  }
  const tf = b.msgs.get("/tf").value;
  check(tf.transforms.length === 3, `/tf has ${tf.transforms.length} transforms`);
  for (const tr of tf.transforms) {
    const want = pduJson(tr.child_frame_id, 0);
    check(tr.header.frame_id === "world", "/tf frame_id " + tr.header.frame_id);
    const e = compare(tr.transform.translation, want.linear, `/tf ${tr.child_frame_id}`);
    check(!e, e);
    const q = tr.transform.rotation;
    const yaw = Math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z));
    check(Math.abs(yaw - want.angular.z) < 1e-9, `/tf ${tr.child_frame_id}: yaw ${yaw} != ${want.angular.z}`);
  }
  console.log(`values equal hako-cmd pdu's: ${[...b.msgs.keys()].join(" ")}`);

  // ---- clientPublish: refused without the token, written with it ----
  const twist = byTopic.get("/Drone1/pos");
  const writer = new MessageWriter(parse(twist.schema, { ros2: true }));
  const value = { linear: { x: 42.5, y: -7.25, z: 3 }, angular: { x: 0, y: 0, z: 1.5 } };
  const bytes = writer.writeMessage(value);
  const before = hako("pdu", "--pdudef", pdudef, "--json", "Drone1", "0");
  const n0 = b.statuses.length;
  const bid = b.client.advertise({ topic: "/Drone1/pos", encoding: "cdr", schemaName: "geometry_msgs/msg/Twist" });
  b.client.sendMessage(bid, bytes);
  await until("refusals", () => b.statuses.length >= n0 + 2);
  for (const s of b.statuses.slice(n0)) check(s.level === 2 && /refused: no token/.test(s.message), "status " + JSON.stringify(s));
  console.log("without the token: " + b.statuses[n0].message);
  check(hako("pdu", "--pdudef", pdudef, "--json", "Drone1", "0") === before, "the PDU changed without the token");

  const w = connect(`?token=${token}`);
  await until("channels", () => w.channels.size >= 5);
  const wid = w.client.advertise({ topic: "/Drone1/pos", encoding: "cdr", schemaName: "geometry_msgs/msg/Twist" });
  w.client.sendMessage(wid, bytes);
  await until("the PDU written", () => compare(value, pduJson("Drone1", 0), "Drone1") === null);
  check(w.statuses.every((s) => s.level !== 2), "statuses to the writer: " + JSON.stringify(w.statuses));
  // and the readers see it: b subscribed /Drone1/pos
  await until("the write seen by a subscriber", () => b.msgs.get("/Drone1/pos").value.linear.x === 42.5);
  console.log("with the token: /Drone1/pos written and seen by a subscriber");
  // a bad CDR payload is refused with a status, the session goes on
  w.client.sendMessage(wid, new Uint8Array([0, 1, 0, 0, 1, 2]));
  await until("status for bad CDR", () => w.statuses.some((s) => s.level === 2 && /not written/.test(s.message)));
  console.log("bad CDR: " + w.statuses.find((s) => s.level === 2).message);

  for (const s of [a, b, w]) s.client.close();
  console.log(fails === 0 ? "foxglove_live: ok" : `foxglove_live: ${fails} check(s) failed`);
  process.exit(fails === 0 ? 0 : 1);
}
main().catch((e) => {
  console.log("FAIL: " + (e.stack || e));
  process.exit(1);
});
