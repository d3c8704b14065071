// npm's mqtt client against hako's mqtt comm through a real mosquitto (ctest endpoint.mqtt_npm,
// test/endpoint/test_mqtt_npm.sh). The hako side is hako-endpoint: `probe --raw` on an inout
// endpoint prints every PDU it receives with all its bytes and its statistics on SIGUSR1;
// `send --hex` publishes through an out endpoint. Topics are Hakoniwa's <prefix>/<robot>/<channel
// id>, payloads the PDU's raw bytes. Checked, each by waiting for what can be seen:
//  - npm -> hako and hako -> npm, both channels of the pdudef, bytes exact;
//  - a burst of 1000 PDUs at QoS 1 from npm arrives whole, in order, bytes exact;
//  - the broker killed and restarted on its port while npm streams: the endpoint reconnects,
//    values flow again (the last one sent is the last one received), both ways;
//  - payloads of the wrong size are counted in `rejected`, dropped, and the endpoint serves on.
//
// usage: node mqtt_interop.js TMP_DIR PORT HAKO_ENDPOINT MOSQUITTO PDUDEF
"use strict";
const fs = require("fs");
const net = require("net");
const path = require("path");
const readline = require("readline");
const { spawn, execFile } = require("child_process");
const mqtt = require("mqtt");

const [tmp, port, tool, mosquittoBin, pdudef] = process.argv.slice(2);
const PREFIX = "hako_npm";
const POS = 72; // Drone/1 (pos), Drone/0 (motor): the sizes of the pdudef fixture
const MOTOR = 112;
const BURST = 1000;

let fails = 0;
const fail = (m) => (console.log("FAIL: " + m), fails++);
const check = (c, m) => c || fail(m);
setTimeout(() => {
  console.log("FAIL: the test took more than 150 s");
  process.exit(1);
}, 150000).unref();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (probe !== null && probe.exitCode !== null) throw new Error(`hako-endpoint probe exited (${probe.exitCode}) while waiting for ${what}`);
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await sleep(10);
  }
}

// A PDU of n bytes for sequence number seq: the pattern of test_mqtt.c, seq (u32 LE) first.
function pdu(seq, n = POS) {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (seq * 7 + i) & 0xff;
  b.writeUInt32LE(seq, 0);
  return b;
}

// Children: their pids go to TMP_DIR/pids, so that the shell kills them if we cannot.
const children = new Set();
function started(child) {
  fs.appendFileSync(path.join(tmp, "pids"), child.pid + "\n");
  children.add(child);
  child.on("exit", () => children.delete(child));
  return child;
}
process.on("exit", () => children.forEach((c) => c.kill("SIGKILL")));

// ---- the broker: started (and restarted) on PORT ----
const brokerLog = path.join(tmp, "mosquitto.log");
fs.writeFileSync(path.join(tmp, "mosquitto.conf"),
  `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\n` +
  // the queue per subscriber must hold a burst the endpoint has not read yet
  "max_queued_messages 20000\nlog_type error\nlog_type warning\nlog_type notice\n");
let broker = null;
const listening = () => new Promise((resolve) => {
  const s = net.connect(Number(port), "127.0.0.1");
  s.on("connect", () => (s.destroy(), resolve(true)));
  s.on("error", () => resolve(false));
});
async function startBroker() {
  const log = fs.openSync(brokerLog, "a");
  broker = started(spawn(mosquittoBin, ["-c", path.join(tmp, "mosquitto.conf")],
    { stdio: ["ignore", log, log] }));
  fs.closeSync(log);
  const b = broker;
  let exited = false;
  b.on("exit", () => (exited = true));
  await until("mosquitto to listen on " + port, async () => exited || (await listening()), 10000);
  if (exited) throw new Error("mosquitto exited; its log:\n" + fs.readFileSync(brokerLog, "utf8"));
}
async function killBroker() {
  const b = broker;
  const gone = new Promise((r) => b.on("exit", r));
  b.kill("SIGKILL");
  await gone;
  broker = null;
}

// ---- the hako side ----
function writeEndpoint(name, direction) {
  fs.writeFileSync(path.join(tmp, name + ".comm.json"), JSON.stringify({
    protocol: "mqtt", direction,
    mqtt: { broker: `tcp://127.0.0.1:${port}`, topic_prefix: PREFIX, qos: 1, client_id: "hako_" + name },
    options: { reconnect_min_ms: 20, reconnect_max_ms: 200 },
  }));
  fs.writeFileSync(path.join(tmp, name + ".cache.json"),
    JSON.stringify({ type: "buffer", store: { mode: "queue", depth: 1024 } }));
  const file = path.join(tmp, name + ".json");
  fs.writeFileSync(file, JSON.stringify({
    name, cache: name + ".cache.json", comm: name + ".comm.json", pdu_def_path: pdudef,
  }));
  return file;
}
const ioFile = writeEndpoint("io", "inout");
const txFile = writeEndpoint("tx", "out");

// probe --raw: every PDU as a JSON line with all its bytes; statistics on stderr.
const got = []; // {robot, channel_id, bytes, hex}
const statLines = [];
let probeErr = "";
let probe = null;
function startProbe() {
  probe = started(spawn(tool, ["probe", "--raw", ioFile], { stdio: ["ignore", "pipe", "pipe"] }));
  readline.createInterface({ input: probe.stdout }).on("line", (l) => got.push(JSON.parse(l)));
  readline.createInterface({ input: probe.stderr }).on("line", (l) => {
    probeErr += l + "\n";
    const m = l.match(/^hako-endpoint: io: (.*)$/);
    if (m) statLines.push(Object.fromEntries(m[1].split(" ").map((kv) => kv.split("=")).map(([k, v]) => [k, Number(v)])));
  });
}
// The endpoint's statistics now (SIGUSR1: probe prints them).
async function stats() {
  const n = statLines.length;
  probe.kill("SIGUSR1");
  await until("the probe's statistics", () => statLines.length > n);
  return statLines[statLines.length - 1];
}
const seqOf = (g) => Buffer.from(g.hex, "hex").readUInt32LE(0);
const posLines = (from = 0) => got.slice(from).filter((g) => g.robot === "Drone" && g.channel_id === 1 && g.bytes === POS);
const seen = (robot, ch, buf) => got.some((g) => g.robot === robot && g.channel_id === ch && g.hex === buf.toString("hex"));

function hakoSend(pduName, buf) {
  return new Promise((resolve) => {
    execFile(tool, ["send", txFile, "Drone", pduName, "--hex", buf.toString("hex")], { timeout: 20000 },
      (err, stdout, stderr) => resolve(err ? `hako-endpoint send ${pduName}: ${err.message}\n${stderr}` : null));
  });
}

async function main() {
  await startBroker();
  startProbe();
  const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, { clientId: "npm_interop", clean: true, reconnectPeriod: 50 });
  client.on("error", () => {}); // refused while the broker is away: it retries
  const fromHako = []; // {topic, hex}
  client.on("message", (topic, payload) => fromHako.push({ topic, hex: payload.toString("hex") }));
  await until("npm's client to connect", () => client.connected);
  await client.subscribeAsync(PREFIX + "/#", { qos: 1 });
  const received = (topic, buf) => fromHako.some((m) => m.topic === topic && m.hex === buf.toString("hex"));

  // The endpoint is subscribed once a probe PDU (seq 0) reaches it: published until one does.
  await until("the endpoint to subscribe", async () => {
    await client.publishAsync(PREFIX + "/Drone/1", pdu(0), { qos: 1 });
    return posLines().length > 0;
  });

  // ---- npm -> hako, bytes exact ----
  const a = pdu(4242), m = pdu(77, MOTOR);
  await client.publishAsync(PREFIX + "/Drone/1", a, { qos: 1 });
  await client.publishAsync(PREFIX + "/Drone/0", m, { qos: 1 });
  await until("npm's Drone/1 and Drone/0 at the endpoint", () => seen("Drone", 1, a) && seen("Drone", 0, m));
  console.log("npm -> hako: Drone/1 (72 bytes) and Drone/0 (112 bytes) exact");

  // ---- hako -> npm, bytes exact ----
  const b = pdu(9001), bm = pdu(9002, MOTOR);
  for (const e of [await hakoSend("pos", b), await hakoSend("motor", bm)]) if (e) fail(e);
  await until("hako's PDUs at npm", () => received(PREFIX + "/Drone/1", b) && received(PREFIX + "/Drone/0", bm));
  console.log("hako -> npm: Drone/1 and Drone/0 exact");

  // ---- a QoS 1 burst from npm: whole, in order ----
  const first = 100000;
  let from = got.length;
  const sends = [];
  for (let s = first + 1; s <= first + BURST; s++) sends.push(client.publishAsync(PREFIX + "/Drone/1", pdu(s), { qos: 1 }));
  await Promise.all(sends);
  const burst = () => posLines(from).filter((g) => seqOf(g) > first && seqOf(g) <= first + BURST);
  await until(`${BURST} PDUs of the burst`, () => burst().length >= BURST || burst().some((g) => seqOf(g) === first + BURST));
  const bl = burst();
  check(bl.length === BURST, `the burst: ${bl.length} of ${BURST} PDUs arrived`);
  const wrong = bl.findIndex((g, i) => seqOf(g) !== first + 1 + i || g.hex !== pdu(first + 1 + i).toString("hex"));
  check(wrong < 0, `the burst: PDU #${wrong + 1} is seq ${wrong >= 0 ? seqOf(bl[wrong]) : 0} or its bytes differ`);
  let s = await stats();
  check(s.recv_dropped === 0 && s.rejected === 0, `after the burst: recv_dropped=${s.recv_dropped} rejected=${s.rejected}`);
  console.log(`burst: ${bl.length} PDUs at QoS 1, in order, bytes exact`);

  // ---- the broker killed and restarted while npm streams ----
  const base = 200000;
  let seq = base;
  from = got.length;
  const stream = () => posLines(from).filter((g) => seqOf(g) > base);
  const last = () => { const l = stream(); return l.length ? seqOf(l[l.length - 1]) : base; };
  const timer = setInterval(() => client.publish(PREFIX + "/Drone/1", pdu(++seq), { qos: 1 }, () => {}), 2);
  await until("the stream at the endpoint", () => last() >= base + 50);
  await killBroker();
  await until("the endpoint to see the broker gone", async () => (await stats()).peers === 0);
  const atKill = seq;
  await until("npm to go on streaming", () => seq >= atKill + 50);
  await startBroker();
  const atRestart = seq;
  await until("values to flow again after the restart", () => last() >= atRestart + 50);
  clearInterval(timer);
  const final = seq;
  await until(`the last PDU of the stream (${final})`, () => last() === final);
  s = await stats();
  check(s.peers === 1 && s.reconnects >= 1, `after the restart: peers=${s.peers} reconnects=${s.reconnects}`);
  const bad = stream().find((g) => g.hex !== pdu(seqOf(g)).toString("hex"));
  check(bad === undefined, `the stream: bytes of seq ${bad && seqOf(bad)} differ`);
  // and hako -> npm after the restart
  const c = pdu(9100);
  const e = await hakoSend("pos", c);
  if (e) fail(e);
  await until("hako's PDU at npm after the restart", () => received(PREFIX + "/Drone/1", c));
  console.log(`restart: the endpoint reconnected (reconnects=${s.reconnects}), the stream went on to ${final}, both ways`);

  // ---- hostile payloads: counted, dropped, the endpoint serves on ----
  const rejected0 = s.rejected, disconnects0 = s.disconnects;
  const junk = Buffer.alloc(MOTOR + 88, 0xab);
  await client.publishAsync(PREFIX + "/Drone/1", junk.subarray(0, POS + 1), { qos: 1 }); // 73 for 72
  await client.publishAsync(PREFIX + "/Drone/0", junk, { qos: 1 }); // over 112
  await client.publishAsync(PREFIX + "/Drone/1", Buffer.alloc(0), { qos: 1 }); // empty
  const good = pdu(300000);
  await client.publishAsync(PREFIX + "/Drone/1", good, { qos: 1 });
  await until("a good PDU after the hostile ones", () => seen("Drone", 1, good));
  await until("the hostile ones counted", async () => (await stats()).rejected >= rejected0 + 3);
  s = await stats();
  check(s.rejected === rejected0 + 3, `hostile: rejected went from ${rejected0} to ${s.rejected}, expected +3`);
  check(!got.some((g) => g.bytes !== POS && g.bytes !== MOTOR), "a PDU of a wrong size was delivered");
  check(probe.exitCode === null && s.peers === 1 && s.disconnects === disconnects0,
    `after the hostile ones: peers=${s.peers} disconnects=${s.disconnects} (${disconnects0} before)`);
  const after = pdu(300001);
  await client.publishAsync(PREFIX + "/Drone/1", after, { qos: 1 });
  await until("a PDU after the hostile ones", () => seen("Drone", 1, after));
  console.log(`hostile: 3 rejected and dropped, the endpoint serves on`);

  await client.endAsync();
  const exited = new Promise((r) => probe.on("exit", r));
  probe.kill("SIGTERM");
  check((await exited) === 0, "probe did not exit 0 on SIGTERM");
  await killBroker();
}

main().then(
  () => {
    if (fails) console.log("---- probe's stderr\n" + probeErr);
    console.log(fails ? `mqtt_interop: ${fails} check(s) failed` : "mqtt_interop: ok");
    process.exit(fails ? 1 : 0);
  },
  (err) => {
    console.log("FAIL: " + err.message + "\n---- probe's stderr\n" + probeErr +
      (fs.existsSync(brokerLog) ? "---- mosquitto.log\n" + fs.readFileSync(brokerLog, "utf8") : ""));
    process.exit(1);
  });
