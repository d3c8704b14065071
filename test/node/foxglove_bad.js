// Bad input and slow clients against hako-viewer's Foxglove side: malformed JSON, an unknown
// op, wrong types, a subscribe to an unknown channel, binary garbage each get a status of level
// error and the session goes on; a message over --max-message closes only its own session;
// then N clients that subscribe everything and never read. Afterwards the viewer still
// answers (a new FoxgloveClient gets serverInfo and time frames), the world advanced, and the
// viewer's memory stayed bounded.
//
// usage: node foxglove_bad.js PORT VIEWER_PID N
"use strict";
const fs = require("fs");
const net = require("net");
const crypto = require("crypto");
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const WebSocket = require("ws");

const [port, viewerPid, nSlow] = process.argv.slice(2);
let fails = 0;
const fail = (m) => (console.log("FAIL: " + m), fails++);
const check = (c, m) => c || fail(m);
setTimeout(() => {
  console.log("FAIL: the test took more than 90 s");
  process.exit(1);
}, 90000).unref();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn, ms = 15000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await sleep(20);
  }
}
const rssKb = () => Number(fs.readFileSync(`/proc/${viewerPid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)[1]);

function session() {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`, ["foxglove.websocket.v1"]);
  const st = { ws, json: [], times: [], closed: null, channels: [] };
  ws.on("message", (data, binary) => {
    if (binary) {
      if (data[0] === 2) st.times.push(data.readBigUInt64LE(1));
      return;
    }
    const m = JSON.parse(data.toString());
    st.json.push(m);
    if (m.op === "advertise") st.channels.push(...m.channels);
  });
  ws.on("close", (code) => (st.closed = code));
  ws.on("error", () => {});
  st.statuses = () => st.json.filter((m) => m.op === "status");
  return st;
}

// One WebSocket client by hand that subscribes every channel and then never reads.
function slowClient(ids) {
  return new Promise((resolve) => {
    const s = net.connect(Number(port), "127.0.0.1", () => {
      const key = crypto.randomBytes(16).toString("base64");
      s.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: foxglove.websocket.v1\r\n\r\n`);
      const text = Buffer.from(JSON.stringify({ op: "subscribe", subscriptions: ids.map((id, i) => ({ id: i, channelId: id })) }));
      const mask = crypto.randomBytes(4);
      const len = text.length;
      const hdr = len < 126 ? Buffer.from([0x81, 0x80 | len]) : Buffer.from([0x81, 0x80 | 126, len >> 8, len & 255]);
      const body = Buffer.from(text.map((b, i) => b ^ mask[i % 4]));
      s.write(Buffer.concat([hdr, mask, body]));
      s.pause(); // never read: the server's writes pile up in its socket and lws's buffer
      s.on("error", () => {});
      resolve(s);
    });
    s.setNoDelay(true);
  });
}

async function main() {
  const a = session();
  await until("serverInfo and channels", () => a.json.some((m) => m.op === "serverInfo") && a.channels.length >= 2);
  const cases = [
    ["malformed JSON", "{\"op\": \"subscribe\", ", /not JSON/],
    ["not an object", "[1,2,3]", /needs "op"/],
    ["unknown op", JSON.stringify({ op: "fly" }), /op fly is not supported/],
    ["escape bytes quoted", JSON.stringify({ op: "fly\u001b[31m\u00e9" }), /op fly\?\[31m\?\? is not supported/],
    ["advertise without token", JSON.stringify({ op: "advertise", channels: [] }), /clientPublish refused: no token/],
    ["wrong types", JSON.stringify({ op: "subscribe", subscriptions: [{ id: "x", channelId: {} }] }), /needs integer/],
    ["subscriptions not an array", JSON.stringify({ op: "subscribe", subscriptions: 7 }), /must be an array/],
    ["unknown channel", JSON.stringify({ op: "subscribe", subscriptions: [{ id: 1, channelId: 999999 }] }), /channel 999999 is not advertised/],
    ["unsubscribe unknown", JSON.stringify({ op: "unsubscribe", subscriptionIds: [12345] }), /no subscription/],
    ["binary garbage", Buffer.from([0xff, 1, 2, 3, 4, 5]), /binary opcode 255/],
    ["short publish", Buffer.from([1, 0]), /too short/],
    ["publish without token", Buffer.from([1, 0, 0, 0, 0, 0, 1, 0, 0]), /refused: no token/],
  ];
  for (const [what, msg, want] of cases) {
    const n = a.statuses().length;
    a.ws.send(msg);
    await until(what + ": a status", () => a.statuses().length > n);
    const s = a.statuses()[n];
    check(s.level === 2 && want.test(s.message), `${what}: ${JSON.stringify(s)}`);
  }
  console.log("each bad message got a status of level error; the session goes on");

  // the Foxglove web app may open a Foxglove session from its page; another site may not
  const fromApp = new WebSocket(`ws://127.0.0.1:${port}/`, ["foxglove.websocket.v1"], { origin: "https://app.foxglove.dev" });
  const fromEvil = new WebSocket(`ws://127.0.0.1:${port}/`, ["foxglove.websocket.v1"], { origin: "https://evil.example" });
  const outcome = (ws) => new Promise((r) => { ws.on("open", () => r("open")); ws.on("unexpected-response", (q, res) => r("http " + res.statusCode)); ws.on("error", (e) => r("error " + e.message)); });
  const [oa, oe] = await Promise.all([outcome(fromApp), outcome(fromEvil)]);
  check(oa === "open", "Origin https://app.foxglove.dev: " + oa);
  check(oe === "http 403", "Origin https://evil.example: " + oe);
  fromApp.close();
  console.log(`Origin https://app.foxglove.dev: ${oa}; https://evil.example: ${oe}`);

  // a message over --max-message closes that session (1009), not the server
  const big = session();
  await until("big: serverInfo", () => big.json.length > 0);
  big.ws.send("x".repeat(200000));
  await until("big: closed", () => big.closed !== null);
  check(big.closed === 1009 || big.closed === 1006, "closed with " + big.closed);

  const ids = a.channels.map((c) => c.id);
  await until("time frames", () => a.times.length > 0);
  const rss0 = rssKb();
  const t0 = a.times[a.times.length - 1];
  const slow = [];
  for (let i = 0; i < Number(nSlow); i++) slow.push(await slowClient(ids));
  // the slow clients' queues fill while the world runs on
  await until("2 s of world time with the slow clients", () => a.times[a.times.length - 1] > t0 + 2000000000n, 30000);
  const rss1 = rssKb();
  console.log(`${nSlow} slow clients: viewer RSS ${rss0} kB -> ${rss1} kB; world time ${t0} -> ${a.times[a.times.length - 1]} ns`);
  check(rss1 - rss0 < 200 * 1024, `the viewer grew by ${rss1 - rss0} kB`);
  // and stays there: what a client does not take replaces what it had, it does not pile up
  const t1 = a.times[a.times.length - 1];
  await until("2 s more of world time", () => a.times[a.times.length - 1] > t1 + 2000000000n, 30000);
  const rss2 = rssKb();
  console.log(`2 s later: viewer RSS ${rss2} kB`);
  check(rss2 - rss1 < 16 * 1024, `the viewer went on growing: ${rss1} kB -> ${rss2} kB`);

  // the server still answers a new client, and its time frames advance
  const c = new FoxgloveClient({ ws: new WebSocket(`ws://127.0.0.1:${port}/`, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]) });
  let info = null;
  const times = [];
  c.on("serverInfo", (i) => (info = i));
  c.on("time", (t) => times.push(t.timestamp));
  c.on("error", () => {});
  await until("a new client's serverInfo", () => info !== null);
  await until("its time frames advancing", () => times.length >= 2 && times[times.length - 1] > times[0]);
  for (const s of slow) s.destroy();
  c.close();
  a.ws.close();
  console.log(fails === 0 ? "foxglove_bad: ok" : `foxglove_bad: ${fails} check(s) failed`);
  process.exit(fails === 0 ? 0 : 1);
}
main().catch((e) => {
  console.log("FAIL: " + (e.stack || e));
  process.exit(1);
});
