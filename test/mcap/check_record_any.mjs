// check_record_any.mjs FILE RECORDED TYPES: any recording hako-record made, read by @mcap/core
// (indexed, with @mcap/support's decompressors). Every message is decoded by
// @foxglove/rosmsg2-serialization's MessageReader with its channel's schema from the file and
// written again by its MessageWriter: the bytes must be the file's, so Foxglove reads every value
// hako wrote. Also: the message count is RECORDED and the Statistics', the schemas are exactly
// TYPES (comma-separated pkg/msg/Type), every cdr channel has a schema, log times never go back.
import { MessageReader, MessageWriter, args, failures, openIndexed, parse } from "./record_kit.mjs";

const [file, recordedArg, typesArg] = args("check_record_any.mjs", "FILE RECORDED TYPES", 3);
const { fail, done } = failures(file);
const r = await openIndexed(file);
const names = [...r.schemasById.values()].map((s) => s.name).sort().join(",");
const want = typesArg.split(",").sort().join(",");
if (names !== want) fail(`schemas ${names}, want ${want}`);
const codecs = new Map();
for (const [id, ch] of r.channelsById) {
  if (ch.messageEncoding !== "cdr") continue;
  const s = r.schemasById.get(ch.schemaId);
  if (!s || s.encoding !== "ros2msg") { fail(`channel ${ch.topic}: no ros2msg schema`); continue; }
  const defs = parse(new TextDecoder().decode(s.data), { ros2: true });
  codecs.set(id, { reader: new MessageReader(defs), writer: new MessageWriter(defs), topic: ch.topic });
}
let n = 0, prev = -1n;
const hex = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString("hex");
for await (const m of r.readMessages()) {
  n++;
  if (m.logTime < prev) fail(`log time goes back at message ${n}`);
  prev = m.logTime;
  const c = codecs.get(m.channelId);
  if (!c) continue;
  let back;
  try {
    back = c.writer.writeMessage(c.reader.readMessage(m.data));
  } catch (e) {
    fail(`${c.topic} sequence ${m.sequence}: ${e.message}`);
    continue;
  }
  if (hex(back) !== hex(m.data)) fail(`${c.topic} sequence ${m.sequence}: Foxglove writes ${hex(back)} for ${hex(m.data)}`);
}
if (n !== Number(recordedArg)) fail(`${n} messages, hako-record said ${recordedArg}`);
if (!r.statistics || r.statistics.messageCount !== BigInt(n)) fail(`Statistics say ${r.statistics?.messageCount}`);
done();
console.log(`check_record_any: ${file}: ${n} messages on ${r.channelsById.size} channels, each decoded and written again byte for byte`);
