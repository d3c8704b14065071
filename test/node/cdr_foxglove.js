// hako's CDR and ros2msg schemas against a client nobody here wrote: for every type in
// DIR/index.txt (written by test/registry/cdr_vectors), @foxglove/rosmsg parses the schema,
// @foxglove/rosmsg2-serialization's MessageReader reads hako's CDR and must give hako's JSON
// of the same value, and its MessageWriter must write the value back byte for byte: the value
// it read, and the value built from hako's JSON alone. The latter's bytes go to
// <type>.fox.cdr, for hako's decoder to read back (cdr_vectors --decode).
"use strict";
const fs = require("fs");
const path = require("path");
const { parse } = require("@foxglove/rosmsg");
const { MessageReader, MessageWriter } = require("@foxglove/rosmsg2-serialization");

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node cdr_foxglove.js DIR");
  process.exit(2);
}

// hako's JSON with integers too long for a double kept as strings, so 64-bit values compare
// exactly with the reader's BigInts.
function parseJson(text) {
  return JSON.parse(text.replace(/([:\[,]\s*)(-?\d{16,})(?=\s*[,\]}])/g, '$1"$2"'));
}

// Does the reader's value `got` equal hako's JSON value `want`? Returns a path on mismatch.
function compare(got, want, where) {
  if (typeof got === "bigint") {
    return got.toString() === String(want) ? null : `${where}: ${got} != ${want}`;
  }
  if (typeof got === "number") {
    if (typeof want === "string") {
      const w = want === "nan" ? NaN : want === "inf" ? Infinity : want === "-inf" ? -Infinity : NaN;
      return Object.is(got, w) ? null : `${where}: ${got} != ${want}`;
    }
    // float32 values come back widened; hako prints the shortest float32 decimal
    return got === want || got === Math.fround(want) ? null : `${where}: ${got} != ${want}`;
  }
  if (typeof got === "boolean" || typeof got === "string") {
    return got === want ? null : `${where}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`;
  }
  if (ArrayBuffer.isView(got) || Array.isArray(got)) {
    if (!Array.isArray(want) || want.length !== got.length) {
      return `${where}: length ${got.length} != ${Array.isArray(want) ? want.length : typeof want}`;
    }
    for (let i = 0; i < got.length; i++) {
      const m = compare(got[i], want[i], `${where}[${i}]`);
      if (m) return m;
    }
    return null;
  }
  if (got !== null && typeof got === "object") {
    if (want === null || typeof want !== "object") return `${where}: object != ${want}`;
    const gk = Object.keys(got);
    const wk = Object.keys(want);
    if (gk.join(",") !== wk.join(",")) return `${where}: fields ${gk} != ${wk}`;
    for (const k of gk) {
      const m = compare(got[k], want[k], where ? `${where}.${k}` : k);
      if (m) return m;
    }
    return null;
  }
  return `${where}: unexpected ${typeof got}`;
}

// hako's JSON value as MessageWriter takes it, led by the parsed schema: 64-bit integers as
// BigInt, "nan" / "inf" / "-inf" as numbers.
function toWriterValue(defs, fields, value) {
  const out = {};
  for (const f of fields) {
    if (f.isConstant === true) continue;
    const v = value[f.name];
    const one = (x) => {
      if (f.isComplex === true) {
        return toWriterValue(defs, defs.get(f.type), x);
      }
      if (f.type === "int64" || f.type === "uint64") return BigInt(String(x));
      if (typeof x === "string" && (f.type === "float32" || f.type === "float64")) {
        return x === "nan" ? NaN : x === "inf" ? Infinity : -Infinity;
      }
      return x;
    };
    out[f.name] = f.isArray === true ? v.map(one) : one(v);
  }
  return out;
}

const names = fs.readFileSync(path.join(dir, "index.txt"), "utf8").split("\n").filter(Boolean);
let failed = 0;
for (const name of names) {
  const base = path.join(dir, name.replace("/", "."));
  try {
    const schema = fs.readFileSync(base + ".msg", "utf8");
    const cdr = new Uint8Array(fs.readFileSync(base + ".cdr"));
    const want = parseJson(fs.readFileSync(base + ".json", "utf8"));
    const defs = parse(schema, { ros2: true });
    const reader = new MessageReader(defs);
    const got = reader.readMessage(cdr);
    if (reader.lastReadByteLength() !== cdr.byteLength) {
      throw new Error(`read ${reader.lastReadByteLength()} of ${cdr.byteLength} bytes`);
    }
    const m = compare(got, want, "");
    if (m) throw new Error(`value differs at ${m}`);
    const writer = new MessageWriter(defs);
    const sameBytes = (bytes, what) => {
      if (Buffer.compare(Buffer.from(bytes), Buffer.from(cdr)) !== 0) {
        let i = 0;
        while (i < bytes.length && i < cdr.length && bytes[i] === cdr[i]) i++;
        throw new Error(`MessageWriter's ${bytes.length} bytes of ${what} differ from hako's ${cdr.length} at byte ${i}`);
      }
    };
    sameBytes(writer.writeMessage(got), "the value it read");
    const byName = new Map(defs.map((d) => [d.name ?? "", d.definitions]));
    const fromJson = writer.writeMessage(toWriterValue(byName, defs[0].definitions, want));
    sameBytes(fromJson, "hako's JSON value");
    fs.writeFileSync(base + ".fox.cdr", fromJson);
  } catch (e) {
    failed++;
    console.error(`FAIL ${name}: ${e.message}`);
  }
}
console.log(`${names.length - failed}/${names.length} types: Foxglove reads hako's CDR as its JSON and writes the same bytes`);
process.exit(failed === 0 && names.length > 0 ? 0 : 1);
