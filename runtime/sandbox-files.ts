import fsp from 'node:fs/promises';
import path from 'node:path';
import { processEnvironment } from '../domain/images/oci-image';
import type { AgentConfig } from '../sandbox-agent/contract/agent-config';
import { AGENT_ROOT } from './bwrap-args';
import { sandboxEtcFiles } from './etc-files';
import type { ImageRunSettings } from './image';
import { SANDBOX_AGENT_CONFIG, SANDBOX_API_DIR, SANDBOX_EVENT_LOG, SANDBOX_HOME, SANDBOX_RUN_DIR, SANDBOX_SOCKET, type SandboxLayout } from './layout';
import type { RuntimeSandboxSpec } from './sandbox-runtime';

/** The host uid and gid of the sandbox user. */
export interface SandboxUser {
  uid: number;
  gid: number;
}

/** The environment every process of a sandbox starts from. */
export const SANDBOX_ENV = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: SANDBOX_HOME,
  USER: 'user',
  LOGNAME: 'user',
  LANG: 'C.UTF-8',
};

/** Creates the writable layer (kept across starts) and rewrites the per-start files. */
export async function prepareSandboxFolders(spec: RuntimeSandboxSpec, layout: SandboxLayout, user: SandboxUser, image?: ImageRunSettings, egress?: SandboxEgress): Promise<void> {
  await fsp.mkdir(layout.root, { recursive: true, mode: 0o700 });
  // Independent steps, run together: creation time is what a user waits for.
  await Promise.all([
    ...layout.writable.map(async (folder) => {
      if (await fsp.stat(folder.hostPath).then(() => true, () => false)) return;
      await fsp.mkdir(folder.hostPath, { recursive: true });
      if (folder.shared) await fsp.chmod(folder.hostPath, 0o1777);
      else await fsp.chown(folder.hostPath, user.uid, user.gid);
    }),
    // Owned by the sandbox user while it starts: the agent creates its socket and log here.
    ...[layout.runDir, layout.apiDir].map(async (dir) => {
      await fsp.mkdir(dir, { recursive: true });
      await Promise.all([fsp.chown(dir, user.uid, user.gid), fsp.chmod(dir, 0o700)]);
    }),
    fsp.rm(layout.socketPath, { force: true }),
    fsp.mkdir(layout.platformDir, { recursive: true, mode: 0o755 }),
    fsp.mkdir(layout.etcDir, { recursive: true }).then(() => writeIdentityFiles(spec, layout, user, image, egress)),
    installCode(spec.code, layout.codeDir),
  ]);
}

/**
 * Puts the code a spec names into the sandbox's code folder (seen read-only at /app), replacing
 * what a previous start left there. Files are hard links to the node's copy (owned by root and
 * read-only inside, so the sandbox cannot change them), copies across file systems; the folder
 * itself stays, so a running sandbox's mount of it sees the new content.
 */
export async function installCode(source: string | undefined, codeDir: string): Promise<void> {
  await fsp.mkdir(codeDir, { recursive: true, mode: 0o755 });
  await Promise.all((await fsp.readdir(codeDir)).map((name) => fsp.rm(path.join(codeDir, name), { recursive: true, force: true })));
  if (source) await linkTree(source, codeDir);
}

async function linkTree(from: string, to: string): Promise<void> {
  await Promise.all(
    (await fsp.readdir(from, { withFileTypes: true })).map(async (entry) => {
      const source = path.join(from, entry.name);
      const target = path.join(to, entry.name);
      if (entry.isDirectory()) {
        await fsp.mkdir(target, { mode: 0o755 });
        await linkTree(source, target);
      } else if (entry.isSymbolicLink()) {
        await fsp.symlink(await fsp.readlink(source), target);
      } else if (entry.isFile()) {
        await fsp.link(source, target).catch(async (err: NodeJS.ErrnoException) => {
          if (err.code !== 'EXDEV' && err.code !== 'EPERM') throw err;
          await fsp.copyFile(source, target);
          await fsp.chmod(target, 0o644);
        });
      }
    }),
  );
}

/** The node's egress services as a networked sandbox reaches them. */
export interface SandboxEgress {
  nameserver: string;
  proxyUrl: string;
}

/**
 * The proxy variables of a networked sandbox's processes, in both spellings tools read; the
 * user's own envs come after and may replace them.
 */
function proxyEnv(egress: SandboxEgress | undefined): Record<string, string> {
  if (!egress) return {};
  const noProxy = 'localhost,127.0.0.1,::1';
  return { HTTP_PROXY: egress.proxyUrl, HTTPS_PROXY: egress.proxyUrl, http_proxy: egress.proxyUrl, https_proxy: egress.proxyUrl, NO_PROXY: noProxy, no_proxy: noProxy };
}

/**
 * The files that tell a sandbox who it is: /etc/hosts, /etc/hostname, /etc/resolv.conf and the
 * agent's configuration. Rewritten in place (same inodes), so a running sandbox sees the new content.
 * A pulled image's settings (`image`) give its processes' environment under the sandbox's own
 * envs, and their default working folder; `egress`, the node's egress services when it has outbound network.
 */
export async function writeIdentityFiles(spec: RuntimeSandboxSpec, layout: SandboxLayout, user: SandboxUser, image?: ImageRunSettings, egress?: SandboxEgress): Promise<void> {
  const config: AgentConfig = {
    sandboxId: spec.id,
    sandboxName: spec.name ?? spec.id,
    workspaceId: spec.workspaceId,
    socketPath: SANDBOX_SOCKET,
    eventLog: SANDBOX_EVENT_LOG,
    processEnv: processEnvironment(SANDBOX_ENV, image?.env ?? [], { HOSTNAME: spec.id, ...proxyEnv(egress), ...Object.fromEntries(spec.envs.map((e) => [e.name, e.value])) }),
    defaultWorkingDir: image?.workingDir ?? SANDBOX_HOME,
    // On an image's overlay the whole tree is writable (the kernel checks the user's rights); its own folders stay roots that cannot be deleted.
    writableRoots: [...(image?.rootWritable ? ['/'] : []), ...layout.writable.map((f) => f.sandboxPath), ...spec.volumes.filter((v) => !v.readOnly).map((v) => v.mountPath)],
    hiddenRoots: ['/proc', '/sys', '/dev', SANDBOX_RUN_DIR, SANDBOX_API_DIR, AGENT_ROOT, path.dirname(SANDBOX_AGENT_CONFIG)],
  };
  await Promise.all([
    ...Object.entries(sandboxEtcFiles(spec.id, egress?.nameserver)).map(([name, text]) => fsp.writeFile(path.join(layout.etcDir, name), text, { mode: 0o644 })),
    // The user's own variables: readable by the sandbox user (they are theirs), by nobody else.
    fsp.writeFile(layout.agentConfig, JSON.stringify(config), { mode: 0o400 }).then(() => fsp.chown(layout.agentConfig, user.uid, user.gid)),
  ]);
}
