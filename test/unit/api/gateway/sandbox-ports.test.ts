import fc from 'fast-check';
import { SandboxPortSockets, type SandboxUpstream } from '../../../../api/gateway/sandbox-ports';
import { ApiError } from '../../../../domain/errors';

// The gateway's memory of port sockets under generated interleavings of requests, openings that
// succeed or fail, and upstreams found dead or merely not answering. The node's opening is a
// fake whose answers the schedule decides: what is checked is the gateway's own bookkeeping.
const KEYS = [
  { sandbox: 'sb-a', port: 8000 },
  { sandbox: 'sb-a', port: 3000 },
  { sandbox: 'sb-b', port: 8000 },
];

type Step =
  | { kind: 'request'; key: number }
  | { kind: 'settle'; ok: boolean }
  | { kind: 'failure'; key: number; code: 'ECONNREFUSED' | 'ENOENT' | 'ECONNRESET' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('request' as const), key: fc.integer({ min: 0, max: KEYS.length - 1 }) }),
  fc.record({ kind: fc.constant('settle' as const), ok: fc.boolean() }),
  fc.record({ kind: fc.constant('failure' as const), key: fc.integer({ min: 0, max: KEYS.length - 1 }), code: fc.constantFrom('ECONNREFUSED' as const, 'ENOENT' as const, 'ECONNRESET' as const) }),
);

interface Opening {
  key: number;
  resolve(path: string): void;
  reject(err: Error): void;
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

test('one opening per sandbox and port at a time; a failed opening or a dead forwarder is opened again, a silent port is not', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
      const openings: Opening[] = [];
      let calls = 0;
      const ports = new SandboxPortSockets((sandbox, port) => {
        calls++;
        const key = KEYS.findIndex((k) => k.sandbox === sandbox && k.port === port);
        return new Promise<string>((resolve, reject) => openings.push({ key, resolve, reject }));
      });
      // The model: per key, nothing known, an opening under way, or a socket.
      const state: ('none' | 'opening' | 'ready')[] = KEYS.map(() => 'none');
      const upstreams: (SandboxUpstream | undefined)[] = KEYS.map(() => undefined);
      const answers: Promise<unknown>[] = [];
      let opened = 0;
      for (const next of steps) {
        if (next.kind === 'request') {
          const { sandbox, port } = KEYS[next.key];
          const answer = ports.upstream(sandbox, { port, path: '/' }).then(
            (upstream) => {
              expect(upstream.via).toEqual({ socketPath: `/pinned/${sandbox}/${port}` });
              upstreams[next.key] = upstream;
            },
            (err: unknown) => expect(err).toMatchObject({ statusCode: 502, code: 'sandbox_unreachable' }),
          );
          answers.push(answer);
          if (state[next.key] === 'none') {
            opened++;
            state[next.key] = 'opening';
          }
        } else if (next.kind === 'settle') {
          const opening = openings.shift();
          if (!opening) continue;
          const { sandbox, port } = KEYS[opening.key];
          if (next.ok) opening.resolve(`/pinned/${sandbox}/${port}`);
          else opening.reject(new Error('the sandbox API did not answer'));
          state[opening.key] = next.ok ? 'ready' : 'none';
        } else {
          const upstream = upstreams[next.key];
          if (!upstream || state[next.key] !== 'ready') continue;
          const body = upstream.unreachable(Object.assign(new Error('gone'), { code: next.code }));
          expect(body).toMatchObject({ error: 'port_unreachable', message: expect.stringContaining(`port ${KEYS[next.key].port}`) });
          // Only a forwarder that is itself gone is forgotten; a port nothing answers on keeps its socket.
          if (next.code !== 'ECONNRESET') state[next.key] = 'none';
        }
        await flush();
        expect(calls).toBe(opened);
        for (const [key] of KEYS.entries()) expect(openings.filter((o) => o.key === key).length).toBe(state[key] === 'opening' ? 1 : 0);
      }
      for (const opening of openings) opening.reject(new Error('end of schedule'));
      await Promise.all(answers);
    }),
    { numRuns: 300 },
  );
});

test('an opening that fails is a 502 naming the port', async () => {
  const ports = new SandboxPortSockets(async () => {
    throw new Error('connect ENOENT /run/agent.sock');
  });
  const error = await ports.upstream('sb', { port: 5173, path: '/' }).catch((err: unknown) => err);
  expect(error).toBeInstanceOf(ApiError);
  expect(error).toMatchObject({ statusCode: 502, message: 'the sandbox could not forward port 5173: connect ENOENT /run/agent.sock' });
});
