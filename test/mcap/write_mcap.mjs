// write_mcap.mjs DUMP_EXE DIR: files written by @mcap/core's McapWriter (a writer nobody here
// wrote: schemas and channels inside the chunks, zstd by @foxglove/wasm-zstd) read by hako_mcap's
// reader (DUMP_EXE --dump FILE prints what it read as JSON), compared with what was written:
//   js-zstd.mcap       chunked, zstd, 3 schemas, 8 channels with metadata
//   js-none.mcap       chunked, uncompressed
//   js-unchunked.mcap  no chunks: bare Message records
//   js-cut.mcap        js-zstd.mcap cut in the middle of a chunk: streamed, whole chunks only
// Exit 0 when all match, else one line per difference on stderr and exit 1.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(path.join(path.dirname(fileURLToPath(import.meta.url)), "node", "x.js"));
const { McapWriter, McapStreamReader, McapIndexedReader } = require("@mcap/core");
const { loadDecompressHandlers } = require("@mcap/support");
const zstd = require("@foxglove/wasm-zstd");

const [dumpExe, dir] = process.argv.slice(2);
if (!dumpExe || !dir) {
  console.error("usage: node write_mcap.mjs DUMP_EXE DIR");
  process.exit(2);
}
mkdirSync(dir, { recursive: true });
await zstd.isLoaded;
let failures = 0;
const fail = (file, what) => {
  failures++;
  if (failures <= 50) console.error(`${file}: ${what}`);
};
const hex = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString("hex");

class Sink {
  chunks = [];
  pos = 0n;
  async write(buf) {
    this.chunks.push(Buffer.from(buf));
    this.pos += BigInt(buf.byteLength);
  }
  position() {
    return this.pos;
  }
  bytes() {
    return Buffer.concat(this.chunks);
  }
}

// The same recording every time: what was written, in file order.
async function write(opts) {
  const sink = new Sink();
  const w = new McapWriter({ writable: sink, chunkSize: 4096, ...opts });
  await w.start({ profile: "ros2", library: "@mcap/core" });
  const schemas = [], channels = [], messages = [];
  for (let k = 0; k < 3; k++) {
    const data = new TextEncoder().encode(`# schema ${k}\nfloat64 x\n`);
    const id = await w.registerSchema({ name: `pkg/msg/T${k}`, encoding: "ros2msg", data });
    schemas.push({ id, name: `pkg/msg/T${k}`, encoding: "ros2msg", data: hex(data) });
  }
  for (let c = 0; c < 8; c++) {
    const metadata = c % 2 ? new Map([["robot", `r${c}`], ["k", "v"]]) : new Map();
    const info = { topic: `/js/${c}`, messageEncoding: "cdr", schemaId: c === 7 ? 0 : schemas[c % 3].id, metadata };
    const id = await w.registerChannel(info);
    channels.push({ id, schema_id: info.schemaId, topic: info.topic, message_encoding: "cdr", metadata: Object.fromEntries(metadata) });
  }
  for (let i = 0; i < 1500; i++) {
    const data = new Uint8Array((i * 13) % 257).map((_, k) => (i * 7 + k * 3) & 0xff);
    const logTime = 1700000000000000000n + BigInt(i) * 1000000n - (i % 9 === 8 ? 2500000n : 0n);
    const m = { channelId: channels[i % 8].id, sequence: i, logTime, publishTime: logTime + 5n, data };
    await w.addMessage(m);
    messages.push({ channel: m.channelId, sequence: i, log_time: String(logTime), publish_time: String(logTime + 5n), data: hex(data) });
  }
  await w.end();
  return { bytes: sink.bytes(), want: { schemas, channels, messages } };
}

function compare(file, got, want, indexed) {
  if (got.indexed !== indexed) fail(file, `indexed ${got.indexed}, want ${indexed}`);
  if (got.profile !== "ros2") fail(file, `profile ${got.profile}`);
  const sorted = (v) => JSON.stringify([...v].sort((a, b) => a.id - b.id));
  // A cut-off file knows only the channels of its whole chunks (and their schemas): those of
  // the messages left.
  const used = new Set(want.messages.map((m) => m.channel));
  const wantChannels = want.partial ? want.channels.filter((c) => used.has(c.id)) : want.channels;
  const usedSchemas = new Set(wantChannels.map((c) => c.schema_id));
  const wantSchemas = want.partial ? want.schemas.filter((s) => usedSchemas.has(s.id)) : want.schemas;
  if (wantChannels.length === 0) fail(file, "no channel expected: not a test");
  if (sorted(got.schemas) !== sorted(wantSchemas)) fail(file, `schemas ${JSON.stringify(got.schemas)}`);
  if (sorted(got.channels) !== sorted(wantChannels)) fail(file, `channels ${JSON.stringify(got.channels)}`);
  if (got.messages.length !== want.messages.length) fail(file, `${got.messages.length} messages, want ${want.messages.length}`);
  for (const [i, m] of got.messages.entries()) {
    if (JSON.stringify(m) !== JSON.stringify(want.messages[i])) {
      fail(file, `message ${i} differs: ${JSON.stringify(m).slice(0, 200)}`);
    }
  }
}

function dump(file) {
  return JSON.parse(execFileSync(dumpExe, ["--dump", path.join(dir, file)], { encoding: "utf8", maxBuffer: 64 << 20 }));
}

const compressChunk = (data) => ({ compression: "zstd", compressedData: zstd.compress(data, 3) });
const files = [
  ["js-zstd.mcap", { compressChunk }, true],
  ["js-none.mcap", {}, true],
  ["js-unchunked.mcap", { useChunks: false }, true],
];
for (const [file, opts, indexed] of files) {
  const { bytes, want } = await write(opts);
  writeFileSync(path.join(dir, file), bytes);
  compare(file, dump(file), want, indexed);
  console.log(`${file}: ${want.messages.length} messages written by @mcap/core, read by hako_mcap`);
  if (file === "js-zstd.mcap") {
    // Cut in the middle of the middle chunk: what @mcap/core's own stream reader still finds
    // (whole chunks) is what ours must find too.
    const readable = {
      size: async () => BigInt(bytes.byteLength),
      read: async (offset, size) => new Uint8Array(bytes.buffer, bytes.byteOffset + Number(offset), Number(size)),
    };
    const decompressHandlers = await loadDecompressHandlers();
    const indexed = await McapIndexedReader.Initialize({ readable, decompressHandlers });
    const mid = indexed.chunkIndexes[Math.floor(indexed.chunkIndexes.length / 2)];
    const cut = bytes.subarray(0, Number(mid.chunkStartOffset + mid.chunkLength / 2n));
    writeFileSync(path.join(dir, "js-cut.mcap"), cut);
    const reader = new McapStreamReader({ decompressHandlers });
    reader.append(cut);
    const seqs = new Set();
    for (let rec; (rec = reader.nextRecord()); ) if (rec.type === "Message") seqs.add(rec.sequence);
    const partial = { ...want, partial: true, messages: want.messages.filter((m) => seqs.has(m.sequence)) };
    const got = dump("js-cut.mcap");
    compare("js-cut.mcap", got, partial, false);
    if (!(got.skips.length >= 1 && got.skips[0].offset + got.skips[0].bytes === cut.byteLength))
      fail("js-cut.mcap", `skips ${JSON.stringify(got.skips)} do not reach the cut at ${cut.byteLength}`);
    if (partial.messages.length === 0 || partial.messages.length === want.messages.length)
      fail("js-cut.mcap", `the cut left ${partial.messages.length} messages: not a test`);
    console.log(`js-cut.mcap: ${partial.messages.length} messages in whole chunks, skipped: ${got.skips[0]?.why}`);
  }
}
if (failures) {
  console.error(`${failures} difference(s)`);
  process.exit(1);
}
