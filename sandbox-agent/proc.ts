import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { parseStat, parseTcpTable, type TcpSocket } from './proc-net';

/**
 * The sandbox's processes and sockets, read from /proc. Inside the sandbox's pid namespace,
 * /proc shows exactly this sandbox's processes, so "a live process of this sandbox" is simply
 * a live pid here.
 */
export interface ProcessEntry {
  pid: number;
  ppid: number;
  state: string;
  pgrp: number;
}

export async function processTable(): Promise<Map<number, ProcessEntry>> {
  const table = new Map<number, ProcessEntry>();
  const names = await fsp.readdir('/proc');
  await Promise.all(
    names
      .filter((name) => /^\d+$/.test(name))
      .map(async (name) => {
        const stat = await fsp.readFile(`/proc/${name}/stat`, 'utf8').catch(() => undefined);
        const parsed = stat && parseStat(stat);
        if (parsed) table.set(Number(name), { pid: Number(name), ...parsed });
      }),
  );
  return table;
}

/** Live: exists and is not a zombie waiting to be reaped. */
export function isLiveProcess(pid: number): boolean {
  try {
    const parsed = parseStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return parsed !== undefined && parsed.state !== 'Z' && parsed.state !== 'X';
  } catch {
    return false;
  }
}

/** The process and every descendant of it. */
export function processTree(pid: number, table: Map<number, ProcessEntry>): number[] {
  const children = new Map<number, number[]>();
  for (const entry of table.values()) {
    const siblings = children.get(entry.ppid);
    if (siblings) siblings.push(entry.pid);
    else children.set(entry.ppid, [entry.pid]);
  }
  const tree: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (tree.includes(next)) continue;
    tree.push(next);
    queue.push(...(children.get(next) ?? []));
  }
  return tree;
}

/** Socket inodes held open by the processes. */
export async function socketInodes(pids: number[]): Promise<Set<string>> {
  const inodes = new Set<string>();
  await Promise.all(
    pids.map(async (pid) => {
      const fds = await fsp.readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
      await Promise.all(
        fds.map(async (fd) => {
          const target = await fsp.readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
          if (target.startsWith('socket:[')) inodes.add(target.slice(8, -1));
        }),
      );
    }),
  );
  return inodes;
}

export async function tcpSockets(): Promise<TcpSocket[]> {
  const [v4, v6] = await Promise.all([
    fsp.readFile('/proc/net/tcp', 'utf8').catch(() => ''),
    fsp.readFile('/proc/net/tcp6', 'utf8').catch(() => ''),
  ]);
  return [...parseTcpTable(v4, 'tcp'), ...parseTcpTable(v6, 'tcp6')];
}

/** TCP sockets of a process and its descendants. */
export async function socketsOfProcessTree(pid: number): Promise<TcpSocket[]> {
  const table = await processTable();
  const [inodes, sockets] = await Promise.all([socketInodes(processTree(pid, table)), tcpSockets()]);
  return sockets.filter((socket) => inodes.has(socket.inode));
}
