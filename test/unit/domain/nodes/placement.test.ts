import { chooseNode, type PlacementCandidate } from '../../../../domain/nodes/placement';
import type { NodeState } from '../../../../domain/nodes/node';

/** A small deterministic generator (mulberry32), so a failing case can be replayed by its seed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

const STATES: NodeState[] = ['READY', 'UNREACHABLE', 'LOST'];

function candidates(next: () => number): PlacementCandidate[] {
  return Array.from({ length: Math.floor(next() * 6) }, (_, i) => ({
    id: `n${Math.floor(next() * 4)}${i}`,
    taskQueue: `q-node-n${i}`,
    region: next() < 0.5 ? 'eu' : 'us',
    state: STATES[Math.floor(next() * 3)],
    drained: next() < 0.2,
    // Few distinct values, so ties happen.
    freeMemoryBytes: Math.floor(next() * 3) * 2 ** 30,
  }));
}

test('the chosen node is READY, undrained, of the region, not excluded, with the most free memory, ties to the lowest id; none only when none is eligible (2,000 generated cases)', () => {
  const seed = Number(process.env.HANGAR_PLACEMENT_SEED ?? 20261127);
  const next = random(seed);
  for (let run = 0; run < 2000; run++) {
    const nodes = candidates(next);
    const request = { region: next() < 0.5 ? 'eu' : undefined, exclude: next() < 0.3 && nodes.length > 0 ? [nodes[0].id] : undefined };
    const eligible = nodes.filter((n) => n.state === 'READY' && !n.drained && (!request.region || n.region === request.region) && !request.exclude?.includes(n.id));
    const chosen = chooseNode(nodes, request);
    const context = JSON.stringify({ seed, run, nodes, request });
    if (eligible.length === 0) {
      expect({ context, chosen }).toEqual({ context, chosen: undefined });
      continue;
    }
    const most = Math.max(...eligible.map((n) => n.freeMemoryBytes));
    const expected = eligible.filter((n) => n.freeMemoryBytes === most).sort((a, b) => (a.id < b.id ? -1 : 1))[0];
    expect({ context, chosen: chosen?.id }).toEqual({ context, chosen: expected.id });
    // The order the nodes are listed in does not change the choice.
    expect(chooseNode([...nodes].reverse(), request)?.id).toBe(expected.id);
  }
});
