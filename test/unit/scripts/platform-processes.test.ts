import { PLATFORM_PROCESSES, selectedProcesses } from '../../../scripts/platform-processes';

const names = (env: NodeJS.ProcessEnv) => selectedProcesses(env).map((process) => process.name);

test('without HANGAR_PROCESSES a host runs every platform process', () => {
  expect(names({})).toEqual(PLATFORM_PROCESSES.map((process) => process.name));
  expect(names({ HANGAR_PROCESSES: ' ' })).toEqual(PLATFORM_PROCESSES.map((process) => process.name));
});

test('HANGAR_PROCESSES picks processes, in the platform order whatever the order written', () => {
  expect(names({ HANGAR_PROCESSES: 'node-worker' })).toEqual(['node-worker']);
  expect(names({ HANGAR_PROCESSES: 'node-worker, api' })).toEqual(['api', 'node-worker']);
});

test('an unknown name stops the start, naming the variable and the name', () => {
  expect(() => selectedProcesses({ HANGAR_PROCESSES: 'node-worker,nodes' })).toThrow(/HANGAR_PROCESSES: unknown process 'nodes' \(known: api, control-worker, node-worker\)/);
  expect(() => selectedProcesses({ HANGAR_PROCESSES: 'api,' })).toThrow(/unknown process ''/);
});
