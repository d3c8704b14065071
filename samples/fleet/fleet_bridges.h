/* The fleet across the nodes of a federation: the hako-bridge files that carry the monitor's
 * two raw channels (fleet_share.h) between the client nodes, where the hosts run, and the
 * server node, where fleet-monitor runs. Each node is its own domain (on real machines its own
 * /dev/shm), so:
 *
 *   client node k: FleetHost-<k>/0 (the host's load record) -> tcp -> the server's domain;
 *   server node:   FleetMonitor/0 (the monitor's orders)     -> tcp -> every client's domain.
 *
 * One tcp server on the server node (every client connects to it); the orders are sent again
 * every 100 ms (a ticker), so a client that connected late still gets the last one, and a host
 * ignores an order it has seen (orders are numbered). */
#ifndef FLEET_BRIDGES_H
#define FLEET_BRIDGES_H

/* Write into dir/bridge/: fleet_bridge.json (one file for every node: run
 * `hako-bridge DIR/bridge/fleet_bridge.json --node ID` on each), its endpoint container,
 * endpoint and comm files, and the pdudef of the two channels. server: the server node's id;
 * clients: "n1,n2,...", host k on node nk (as --full names them); addr, port: where the server
 * node's bridge listens and the clients connect. 0, or -1 with errno (EINVAL: a bad list, id,
 * address or port). */
int fleet_bridges_write(const char *dir, const char *server, const char *clients, const char *addr,
                        int port);

#endif
