import { decodeSegment } from './http';
import { parsePort, type PortProxy } from './port-proxy';
import type { RouteContext, RouteHandlers, UpgradeHandler } from './route-handler';

const portOf = ({ params }: RouteContext) => parsePort(decodeSegment(params.port));

/** The /port routes of the contract: HTTP requests and upgrades for a port of the sandbox. */
export function portRoutes(proxy: PortProxy) {
  return {
    handlers: {
      forwardToPort: async (req, res, context) => proxy.forward(req, res, portOf(context)),
    } satisfies RouteHandlers<'forwardToPort'>,
    upgrades: {
      forwardToPort: (req, socket, head, context) => proxy.upgrade(req, socket, head, portOf(context)),
    } satisfies Record<'forwardToPort', UpgradeHandler>,
  };
}
