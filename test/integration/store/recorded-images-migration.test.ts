import { randomUUID } from 'node:crypto';
import { testStack } from '../../setup/stack';
import { scratchDatabase, type ScratchDatabase } from '../../helpers/scratch-database';

// Migration 028 on a database as release 027 left it: every spec stored before names `base`,
// the default then, so that resources made before base-image became the default keep the host's
// folders; specs that name an image, and resources that run nothing, are left as they were.
describe('migration 028_recorded_images', () => {
  let db: ScratchDatabase;
  const ids: Record<string, string> = {};

  const insert = async (kind: string, name: string, spec: unknown) => {
    ids[name] = randomUUID();
    await db.pool.query(`INSERT INTO resources (id, workspace_id, kind, name, display_name, spec, status) VALUES ($1, 'ws-m', $2, $3, $3, $4, 'DEPLOYED')`, [ids[name], kind, name, JSON.stringify(spec)]);
  };
  const specOf = async (name: string) => (await db.pool.query('SELECT spec FROM resources WHERE id = $1', [ids[name]])).rows[0].spec;

  beforeAll(async () => {
    db = await scratchDatabase(testStack().databaseUrl, 'recorded_images');
    await db.migrateUpTo('028_recorded_images');
    await db.pool.query("INSERT INTO accounts (id, name) VALUES ('acc-m', 'm')");
    await db.pool.query("INSERT INTO workspaces (id, account_id, name, display_name) VALUES ('ws-m', 'acc-m', 'migrated', 'migrated')");
    await insert('sandboxes', 'bare', {});
    await insert('sandboxes', 'with-runtime', { runtime: { memory: 1024, envs: [{ name: 'A', value: 'b' }] } });
    await insert('sandboxes', 'runtime-null', { runtime: null, region: 'local' });
    await insert('sandboxes', 'empty-image', { runtime: { image: '' } });
    await insert('sandboxes', 'named', { runtime: { image: 'base-image' } });
    await insert('sandboxes', 'pulled', { runtime: { image: '127.0.0.1:5000/team/box:1' } });
    for (const kind of ['agents', 'functions', 'models', 'jobs']) await insert(kind, `a-${kind}`, { runtime: { command: ['node', 'main.js'] } });
    await insert('volumes', 'vol', { size: 1024 });
    await db.pool.query("INSERT INTO workload_revisions (resource_id, revision, spec, status) VALUES ($1, 1, '{}', 'DEPLOYED'), ($1, 2, $2, 'DEPLOYED')", [
      ids['a-agents'],
      JSON.stringify({ runtime: { image: 'tools:1', memory: 256 } }),
    ]);
    await db.pool.query(
      `INSERT INTO sandbox_snapshots (id, workspace_id, name, source_id, source_name, source_spec, node_queue, status)
       VALUES ($1, 'ws-m', 'snap-old', $2, 'bare', '{"runtime": {"memory": 512}}', 'q', 'READY'), ($3, 'ws-m', 'snap-named', $2, 'named', '{"runtime": {"image": "base-image"}}', 'q', 'READY')`,
      [randomUUID(), ids.bare, randomUUID()],
    );
    await db.migrateUpTo();
  });

  afterAll(() => db?.drop());

  it("records 'base' in the specs of sandboxes, agents, MCP servers, models and jobs that named no image, keeping the rest of their spec", async () => {
    expect(await specOf('bare')).toEqual({ runtime: { image: 'base' } });
    expect(await specOf('with-runtime')).toEqual({ runtime: { memory: 1024, envs: [{ name: 'A', value: 'b' }], image: 'base' } });
    expect(await specOf('runtime-null')).toEqual({ runtime: { image: 'base' }, region: 'local' });
    expect(await specOf('empty-image')).toEqual({ runtime: { image: 'base' } });
    for (const kind of ['agents', 'functions', 'models', 'jobs']) expect(await specOf(`a-${kind}`)).toEqual({ runtime: { command: ['node', 'main.js'], image: 'base' } });
  });

  it('leaves specs naming an image, and resources that run nothing, as they were', async () => {
    expect(await specOf('named')).toEqual({ runtime: { image: 'base-image' } });
    expect(await specOf('pulled')).toEqual({ runtime: { image: '127.0.0.1:5000/team/box:1' } });
    expect(await specOf('vol')).toEqual({ size: 1024 });
  });

  it('records it in the revisions deployed and in the snapshots forks start from', async () => {
    const revisions = await db.pool.query('SELECT revision, spec FROM workload_revisions ORDER BY revision');
    expect(revisions.rows).toEqual([
      { revision: 1, spec: { runtime: { image: 'base' } } },
      { revision: 2, spec: { runtime: { image: 'tools:1', memory: 256 } } },
    ]);
    const snapshots = await db.pool.query('SELECT name, source_spec FROM sandbox_snapshots ORDER BY name');
    expect(snapshots.rows).toEqual([
      { name: 'snap-named', source_spec: { runtime: { image: 'base-image' } } },
      { name: 'snap-old', source_spec: { runtime: { memory: 512, image: 'base' } } },
    ]);
  });
});
