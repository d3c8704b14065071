// record_kit.mjs: what check_record.mjs and check_record_any.mjs share: the npm packages (the MCAP
// ones in test/mcap/node, Foxglove's ROS 2 codec in test/node), their arguments, a failure count
// that says at most 30 lines, and a file opened for McapIndexedReader.
import { openSync, readSync, fstatSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const mcapRequire = createRequire(path.join(here, "node", "x.js"));
const foxRequire = createRequire(path.join(here, "..", "node", "x.js"));
export const { McapIndexedReader, McapStreamReader } = mcapRequire("@mcap/core");
const { loadDecompressHandlers } = mcapRequire("@mcap/support");
export const { parse } = foxRequire("@foxglove/rosmsg");
export const { MessageReader, MessageWriter } = foxRequire("@foxglove/rosmsg2-serialization");

// The command line's n arguments (named in usage), or exit 2 with "usage: node SCRIPT USAGE".
export function args(script, usage, n) {
  const a = process.argv.slice(2);
  if (a.length < n || a.slice(0, n).some((x) => !x)) {
    console.error(`usage: node ${script} ${usage}`);
    process.exit(2);
  }
  return a;
}

// fail(what): a line "FILE: what" on stderr (the first 30); done(): exit 1 if any failed.
export function failures(file) {
  let count = 0;
  return {
    fail: (what) => {
      count++;
      if (count <= 30) console.error(`${file}: ${what}`);
    },
    done: () => {
      if (count) process.exit(1);
    },
  };
}

export const decompressHandlers = await loadDecompressHandlers();

// file read through McapIndexedReader.
export async function openIndexed(file) {
  const fd = openSync(file, "r");
  const size = BigInt(fstatSync(fd).size);
  const readable = {
    size: async () => size,
    read: async (offset, length) => {
      const buf = new Uint8Array(Number(length));
      readSync(fd, buf, 0, Number(length), Number(offset));
      return buf;
    },
  };
  return McapIndexedReader.Initialize({ readable, decompressHandlers });
}
