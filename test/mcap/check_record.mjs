// check_record.mjs FILE RECORDED: a recording hako-record made of the hello sample (the writer
// puts its step count, 1, 2, ..., in Robot/counter at every step) read by @mcap/core, indexed
// (McapIndexedReader) and streamed (McapStreamReader), with @mcap/support's decompressors; each
// message decoded with @foxglove/rosmsg2-serialization from the schema in the file. RECORDED is
// the message count hako-record said it wrote. Checked: profile ros2; one schema
// std_msgs/msg/UInt64 (ros2msg) parsed by @foxglove/rosmsg; one channel /Robot/counter (cdr) with
// its metadata; the Statistics and the hako-record Metadata record agree with the messages; every
// message's value is its channel write number (the MCAP sequence), log times never go back and
// each is at least the world time of that write (the writer's step k ends at k ms); both readers
// give the same messages. Exit 0 when all hold; else a line per difference on stderr and exit 1.
import { readFileSync } from "node:fs";

import {
  McapStreamReader,
  MessageReader,
  args,
  decompressHandlers,
  failures,
  openIndexed,
  parse,
} from "./record_kit.mjs";

const [file, recordedArg] = args("check_record.mjs", "FILE RECORDED", 2);
const recorded = Number(recordedArg);
const { fail, done } = failures(file);

const indexed = await openIndexed(file);
if (indexed.header.profile !== "ros2") fail(`profile '${indexed.header.profile}', want ros2`);
if (indexed.schemasById.size !== 1) fail(`${indexed.schemasById.size} schemas, want 1`);
const schema = [...indexed.schemasById.values()][0];
if (schema.name !== "std_msgs/msg/UInt64" || schema.encoding !== "ros2msg")
  fail(`schema ${schema.name} (${schema.encoding}), want std_msgs/msg/UInt64 (ros2msg)`);
const text = new TextDecoder().decode(schema.data);
const reader = new MessageReader(parse(text, { ros2: true }));
if (indexed.channelsById.size !== 1) fail(`${indexed.channelsById.size} channels, want 1`);
const channel = [...indexed.channelsById.values()][0];
const meta = Object.fromEntries(channel.metadata);
if (channel.topic !== "/Robot/counter" || channel.messageEncoding !== "cdr" ||
    meta.robot !== "Robot" || meta.channel_id !== "0" || meta.pdu_size !== "32" ||
    meta.pdu_type !== "std_msgs/UInt64" || meta.pdu_name !== "counter")
  fail(`channel ${channel.topic} ${channel.messageEncoding} ${JSON.stringify(meta)}`);

function check(how, msgs) {
  if (msgs.length !== recorded) fail(`${how}: ${msgs.length} messages, hako-record said ${recorded}`);
  let prevLog = -1n, prevSeq = 0;
  for (const m of msgs) {
    const value = reader.readMessage(m.data).data;
    if (BigInt(m.sequence) !== BigInt(value)) fail(`${how}: sequence ${m.sequence} holds ${value}`);
    if (m.logTime < prevLog) fail(`${how}: log time goes back at sequence ${m.sequence}`);
    if (m.sequence <= prevSeq) fail(`${how}: sequence ${m.sequence} after ${prevSeq}`);
    if (m.logTime < BigInt(value) * 1000000n)
      fail(`${how}: write ${value} logged at ${m.logTime} ns, before its world time`);
    prevLog = m.logTime;
    prevSeq = m.sequence;
  }
  return msgs.map((m) => `${m.sequence}:${m.logTime}:${m.publishTime}`).join(",");
}

const viaIndex = [];
for await (const m of indexed.readMessages()) viaIndex.push(m);
const a = check("indexed", viaIndex);
const stats = indexed.statistics;
if (!stats || stats.messageCount !== BigInt(recorded))
  fail(`Statistics: ${stats && stats.messageCount} messages, want ${recorded}`);
if (stats && stats.metadataCount !== 1) fail(`Statistics: ${stats.metadataCount} metadata records, want 1`);
let found = false;
for await (const md of indexed.readMetadata({ name: "hako-record" })) {
  found = true;
  if (md.metadata.get("recorded") !== String(recorded))
    fail(`hako-record metadata: recorded ${md.metadata.get("recorded")}, want ${recorded}`);
  for (const k of ["missed", "dropped", "decimated", "resets", "domain"])
    if (!md.metadata.has(k)) fail(`hako-record metadata lacks ${k}`);
}
if (!found) fail("no hako-record Metadata record");

const stream = new McapStreamReader({ decompressHandlers });
stream.append(readFileSync(file));
const viaStream = [];
for (let r; (r = stream.nextRecord()); ) if (r.type === "Message") viaStream.push(r);
if (!stream.done()) fail("the stream reader did not reach the end");
const b = check("streamed", viaStream);
if (a !== b) fail("the indexed and the streamed reader give different messages");

done();
console.log(`check_record: ${file}: ${recorded} messages, indexed and streamed, values and times ok`);
