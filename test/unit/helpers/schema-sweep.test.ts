import { Type } from 'typebox';
import { fieldSites, fieldName, minimalValue, wrongTypeMutations } from '../../helpers/schema-sweep';

// The sweep is only as good as its walk: it must reach nested objects, lists, records and unions.
const Schema = Type.Object({
  metadata: Type.Object({ name: Type.String({ pattern: '^[a-z]+$' }), labels: Type.Optional(Type.Record(Type.String(), Type.String())) }),
  spec: Type.Optional(
    Type.Object({
      memory: Type.Optional(Type.Integer({ minimum: 64 })),
      ratio: Type.Optional(Type.Number()),
      command: Type.Optional(Type.Array(Type.String())),
      envs: Type.Optional(Type.Array(Type.Object({ name: Type.String(), secret: Type.Optional(Type.Boolean()) }))),
      mode: Type.Optional(Type.Union([Type.Literal('a'), Type.Literal('b')])),
      note: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    }),
  ),
});

test('every field is found, nested ones included', () => {
  expect(fieldSites(Schema).map((site) => fieldName(site.path))).toEqual([
    'body',
    'body.metadata',
    'body.metadata.name',
    'body.metadata.labels',
    'body.metadata.labels.k',
    'body.spec',
    'body.spec.memory',
    'body.spec.ratio',
    'body.spec.command',
    'body.spec.command.0',
    'body.spec.envs',
    'body.spec.envs.0',
    'body.spec.envs.0.name',
    'body.spec.envs.0.secret',
    'body.spec.mode',
    'body.spec.note',
  ]);
});

test('the minimal body holds the required fields only, valid', () => {
  expect(minimalValue(Schema)).toEqual({ metadata: { name: 'a' } });
});

test('each mutation changes one field to a kind it refuses, in an otherwise minimal body', () => {
  const mutations = wrongTypeMutations(Schema);
  const of = (field: string) => mutations.filter((m) => m.field === field);
  expect(of('body.spec.memory').map((m) => [m.kind, m.body])).toEqual([
    ['string', { metadata: { name: 'a' }, spec: { memory: '64' } }],
    ['fraction', { metadata: { name: 'a' }, spec: { memory: 1.5 } }],
    ['boolean', { metadata: { name: 'a' }, spec: { memory: true } }],
    ['null', { metadata: { name: 'a' }, spec: { memory: null } }],
    ['object', { metadata: { name: 'a' }, spec: { memory: {} } }],
    ['array', { metadata: { name: 'a' }, spec: { memory: [64] } }],
  ]);
  expect(of('body.spec.ratio').map((m) => m.kind)).toEqual(['string', 'boolean', 'null', 'object', 'array']);
  expect(of('body.spec.command').find((m) => m.kind === 'string')?.body).toEqual({ metadata: { name: 'a' }, spec: { command: 'a' } });
  expect(of('body.spec.envs.0.secret').find((m) => m.kind === 'string')?.body).toEqual({
    metadata: { name: 'a' },
    spec: { envs: [{ name: 'a', secret: 'false' }] },
  });
  expect(of('body.metadata.labels.k').find((m) => m.kind === 'integer')?.body).toEqual({ metadata: { name: 'a', labels: { k: 7 } } });
  expect(of('body.spec.mode').map((m) => m.kind)).toEqual(['integer', 'fraction', 'boolean', 'null', 'object', 'array']);
  expect(of('body.spec.note').map((m) => m.kind)).toEqual(['integer', 'fraction', 'boolean', 'object', 'array']);
});
