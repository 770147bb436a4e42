import { fork, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { formatTable } from '../../domain/text-table';
import { AGENT_NODE_FLAGS } from '../../runtime/bwrap-runtime';
import { percentile } from '../common/stats';
import type { Variant } from './agent-router-child';

/**
 * Memory per idle sandbox of the agent's router: the agent as it runs (its own matcher over the
 * route table), and the same agent with `find-my-way` (Fastify's router) loaded and every row of
 * the table registered in it, as adopting it would. Each agent is its own process started with
 * the agent's Node flags, idle on its socket; the floor is a bare idle `node` with the same flags,
 * measured the same way in the same run. Issue 16 asks for the library unless this says otherwise.
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 8);
const SETTLE_MS = 1_500;

/** Proportional and resident memory of a process, MB. */
function memoryMb(pid: number): { pss: number; rss: number } {
  const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? 0);
  return { pss: kb('Pss') / 1024, rss: kb('Rss') / 1024 };
}

async function measure(child: ChildProcess, ready: Promise<unknown>): Promise<{ pss: number; rss: number }> {
  await ready;
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const memory = memoryMb(child.pid!);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  return memory;
}

function agent(variant: Variant): Promise<{ pss: number; rss: number }> {
  const child = fork(path.join(__dirname, 'agent-router-child.js'), [variant], { stdio: 'ignore', execArgv: [...AGENT_NODE_FLAGS] });
  return measure(child, new Promise((resolve) => child.once('message', resolve)));
}

function bareNode(): Promise<{ pss: number; rss: number }> {
  const child = spawn(process.execPath, [...AGENT_NODE_FLAGS, '-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  return measure(child, new Promise((resolve) => child.once('spawn', resolve)));
}

async function main(): Promise<void> {
  const samples: Record<Variant | 'floor', { pss: number[]; rss: number[] }> = {
    'own matcher': { pss: [], rss: [] },
    'find-my-way': { pss: [], rss: [] },
    floor: { pss: [], rss: [] },
  };
  // Interleaved, so that a slow moment of the machine weighs on all three alike.
  for (let i = 0; i < RUNS; i++) {
    for (const [name, run] of [['own matcher', () => agent('own matcher')], ['find-my-way', () => agent('find-my-way')], ['floor', bareNode]] as const) {
      const { pss, rss } = await run();
      samples[name].pss.push(pss);
      samples[name].rss.push(rss);
    }
  }
  const p50 = (xs: number[]) => percentile(xs, 50);
  const rows = (['own matcher', 'find-my-way'] as const).map((variant) => [
    `idle agent, ${variant}`,
    p50(samples[variant].pss).toFixed(2),
    p50(samples[variant].rss).toFixed(2),
    'bare idle node',
    p50(samples.floor.pss).toFixed(2),
    `${(p50(samples[variant].pss) / p50(samples.floor.pss)).toFixed(2)}x`,
  ]);
  const delta = (field: 'pss' | 'rss') => (p50(samples['find-my-way'][field]) - p50(samples['own matcher'][field])).toFixed(2);
  console.log(`\nagent router: ${RUNS} runs, memory per idle sandbox\n`);
  console.log(formatTable(['measure', 'PSS p50 MB', 'RSS p50 MB', 'floor', 'PSS p50 MB', 'ratio (PSS)'], rows));
  console.log(`\nfind-my-way costs +${delta('pss')} MB PSS, +${delta('rss')} MB RSS per idle sandbox over the agent's own matcher`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
