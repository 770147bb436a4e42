import http, { type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { UpgradedConnections } from '../../runtime/upgrade-relay';

/** An upgrade's connection, and the bytes its client sent after the request. */
export interface UpgradeConnection {
  socket: Duplex;
  head: Buffer;
}

const pending = new WeakMap<IncomingMessage, UpgradeConnection>();

/**
 * HTTP upgrades (WebSocket) go through the app's own routes, as any request does: its hooks
 * (credentials, versions), its handlers and its JSON errors. Node hands an upgrade to the server's
 * `upgrade` listeners, not to the router; here the router gets it with a response written on its
 * connection, which is closed after an answer. A handler that serves the upgrade takes the
 * connection (`upgradeOf`) and hijacks the reply. So any route of the app, `/port/{port}` or
 * `/terminal/ws` of the sandbox API alike, relays upgrades without an upgrade path of its own.
 */
export function routeUpgrades(app: FastifyInstance, closeGraceMs: number): void {
  // WebSockets still open at close (UpgradedConnections) get the same grace as requests in flight,
  // then are cut: otherwise one would hold the gateway's close forever (and a relay closing after
  // it, such as the console's terminal, with it).
  const upgraded = new UpgradedConnections();
  app.addHook('preClose', (done) => {
    setTimeout(() => upgraded.destroyAll(), closeGraceMs).unref();
    done();
  });
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    pending.set(req, { socket, head });
    upgraded.add(socket);
    socket.on('error', () => socket.destroy());
    const res = new http.ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket as Socket);
    res.once('finish', () => socket.end());
    app.routing(req, res);
  });
}

/** The connection of a request that asks for an upgrade, taken from its reply; undefined for any other request. */
export function upgradeOf(req: IncomingMessage, res: http.ServerResponse): UpgradeConnection | undefined {
  const upgrade = pending.get(req);
  if (upgrade) res.detachSocket(upgrade.socket as Socket);
  return upgrade;
}
