// Channels follow the domain: a FoxgloveClient connected to hako-viewer sees every channel
// unadvertised when the domain's conductor goes, and advertised again, under new ids, when a
// new domain of the same name has them. Prints "ready" once it has the first list (the shell
// then replaces the domain).
//
// usage: node foxglove_gone.js PORT
"use strict";
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const WebSocket = require("ws");

const port = process.argv[2];
setTimeout(() => (console.log("FAIL: timed out"), process.exit(1)), 60000).unref();
const c = new FoxgloveClient({ ws: new WebSocket(`ws://127.0.0.1:${port}/`, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]) });
const live = new Map();
let phase = 0, firstIds = [];
c.on("advertise", (chs) => {
  chs.forEach((ch) => live.set(ch.id, ch.topic));
  if (phase === 0 && [...live.values()].includes("/Drone1/pos")) {
    phase = 1;
    firstIds = [...live.keys()];
    c.subscribe([...live.entries()].find(([, t]) => t === "/Drone1/pos")[0]);
    console.log(`ready: ${live.size} channels`);
  } else if (phase === 2 && [...live.values()].includes("/Drone1/pos")) {
    const reused = [...live.keys()].filter((id) => firstIds.includes(id));
    console.log(`advertised again: ${[...live.values()].join(" ")}`);
    if (reused.length > 0) {
      console.log(`FAIL: ids reused: ${reused}`);
      process.exit(1);
    }
    console.log("foxglove_gone: ok");
    process.exit(0);
  }
});
c.on("unadvertise", (ids) => {
  ids.forEach((id) => live.delete(id));
  if (phase === 1 && live.size === 0) {
    phase = 2;
    console.log(`all ${firstIds.length} channels unadvertised`);
  }
});
