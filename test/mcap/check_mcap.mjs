// check_mcap.mjs DIR: the files mcap_fixture wrote in DIR, read by @mcap/core (indexed with
// McapIndexedReader, streamed with McapStreamReader) with @mcap/support's decompressors, must hold
// exactly what DIR/manifest.json says: profile, schemas, channels, and every message (channel,
// sequence, log and publish times, data bytes). Indexed reading must come in log-time order.
// Exit 0 when all match; else one line per difference on stderr and exit 1.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(path.join(path.dirname(fileURLToPath(import.meta.url)), "node", "x.js"));
const { McapIndexedReader, McapStreamReader } = require("@mcap/core");
const { loadDecompressHandlers } = require("@mcap/support");

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node check_mcap.mjs DIR");
  process.exit(2);
}
const manifest = JSON.parse(readFileSync(path.join(dir, "manifest.json"), "utf8"));
const decompressHandlers = await loadDecompressHandlers();
let failures = 0;
const fail = (file, what) => {
  failures++;
  if (failures <= 50) console.error(`${file}: ${what}`);
};
const hex = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString("hex");

function checkTables(file, want, schemas, channels) {
  if (schemas.size !== want.schemas.length) fail(file, `${schemas.size} schemas, want ${want.schemas.length}`);
  for (const s of want.schemas) {
    const got = schemas.get(s.id);
    if (!got) { fail(file, `schema ${s.id} missing`); continue; }
    if (got.name !== s.name || got.encoding !== s.encoding || hex(got.data) !== s.data)
      fail(file, `schema ${s.id}: got ${got.name} ${got.encoding} ${hex(got.data)}`);
  }
  if (channels.size !== want.channels.length) fail(file, `${channels.size} channels, want ${want.channels.length}`);
  for (const c of want.channels) {
    const got = channels.get(c.id);
    if (!got) { fail(file, `channel ${c.id} missing`); continue; }
    const meta = Object.fromEntries(got.metadata);
    if (got.topic !== c.topic || got.schemaId !== c.schema_id || got.messageEncoding !== c.message_encoding ||
        JSON.stringify(meta) !== JSON.stringify(c.metadata))
      fail(file, `channel ${c.id}: got ${got.topic} schema ${got.schemaId} ${got.messageEncoding} ${JSON.stringify(meta)}`);
  }
}

// got: messages in the order read; want: the manifest's, in file order.
function checkMessages(file, how, got, want, logTimeOrder) {
  if (got.length !== want.length) fail(file, `${how}: ${got.length} messages, want ${want.length}`);
  const bySeq = new Map(want.map((m) => [m.sequence, m]));
  let prev = -1n;
  for (const [i, m] of got.entries()) {
    if (logTimeOrder && m.logTime < prev) fail(file, `${how}: message ${i} goes back in log time`);
    prev = m.logTime;
    const w = logTimeOrder ? bySeq.get(m.sequence) : want[i];
    if (!w) { fail(file, `${how}: unexpected message sequence ${m.sequence}`); continue; }
    if (m.channelId !== w.channel || m.sequence !== w.sequence || String(m.logTime) !== w.log_time ||
        String(m.publishTime) !== w.publish_time || hex(m.data) !== w.data)
      fail(file, `${how}: message ${i} (sequence ${m.sequence}) differs: channel ${m.channelId} log ${m.logTime} publish ${m.publishTime} ${m.data.byteLength} B`);
  }
}

for (const f of manifest.files) {
  const bytes = readFileSync(path.join(dir, f.file));
  // Streamed: the whole file, record by record, as a live reader would take it.
  {
    const reader = new McapStreamReader({ decompressHandlers, validateCrcs: true });
    reader.append(bytes);
    const schemas = new Map(), channels = new Map(), msgs = [];
    let profile;
    try {
      for (let rec; (rec = reader.nextRecord()); ) {
        if (rec.type === "Header") profile = rec.profile;
        else if (rec.type === "Schema") schemas.set(rec.id, rec);
        else if (rec.type === "Channel") channels.set(rec.id, rec);
        else if (rec.type === "Message") msgs.push(rec);
      }
    } catch (e) {
      fail(f.file, `streamed: ${e.message}`);
    }
    if (profile !== f.profile) fail(f.file, `streamed: profile ${profile}, want ${f.profile}`);
    if (f.indexed && !reader.done()) fail(f.file, "streamed: the reader did not reach the end magic");
    if (!f.indexed && reader.done()) fail(f.file, "streamed: a cut-off file read to its end");
    checkTables(f.file, f, schemas, channels);
    checkMessages(f.file, "streamed", msgs, f.messages, false);
  }
  // Indexed: footer, summary, chunk and message indexes.
  const readable = {
    size: async () => BigInt(bytes.byteLength),
    read: async (offset, size) => new Uint8Array(bytes.buffer, bytes.byteOffset + Number(offset), Number(size)),
  };
  if (f.indexed) {
    try {
      const reader = await McapIndexedReader.Initialize({ readable, decompressHandlers });
      if (reader.header.profile !== f.profile) fail(f.file, `indexed: profile ${reader.header.profile}`);
      checkTables(f.file, f, reader.schemasById, reader.channelsById);
      const st = reader.statistics;
      if (!st || st.messageCount !== BigInt(f.messages.length))
        fail(f.file, `indexed: statistics say ${st?.messageCount} messages, want ${f.messages.length}`);
      const msgs = [];
      for await (const m of reader.readMessages()) msgs.push(m);
      checkMessages(f.file, "indexed", msgs, f.messages, true);
    } catch (e) {
      fail(f.file, `indexed: ${e.message}`);
    }
  } else {
    // A cut-off file has no footer: the indexed reader must refuse it, not misread it.
    try {
      await McapIndexedReader.Initialize({ readable, decompressHandlers });
      fail(f.file, "indexed: a file without footer was accepted");
    } catch (e) {
      // expected
    }
  }
  console.log(`${f.file}: ${f.messages.length} messages, ${f.channels.length} channels, ${f.schemas.length} schemas checked`);
}
if (failures) {
  console.error(`${failures} difference(s)`);
  process.exit(1);
}
