/**
 * The /etc a sandbox sees is written for it, never the host's: the host's accounts, shadow
 * file, keys and service settings stay out. These functions only compose the text.
 */
export const SANDBOX_USER = 'user';

/** Files shared by every sandbox of an image on this node. */
export function imageEtcFiles(identity: { uid: number; gid: number; home: string }): Record<string, string> {
  const { uid, gid, home } = identity;
  return {
    passwd: [
      'root:x:0:0:root:/root:/usr/sbin/nologin',
      `${SANDBOX_USER}:x:${uid}:${gid}:sandbox user:${home}:/bin/bash`,
      'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
      '',
    ].join('\n'),
    group: ['root:x:0:', `${SANDBOX_USER}:x:${gid}:`, 'nogroup:x:65534:', ''].join('\n'),
    'nsswitch.conf': ['passwd: files', 'group: files', 'shadow: files', 'hosts: files dns', 'networks: files', 'protocols: files', 'services: files', ''].join('\n'),
  };
}

/**
 * Files naming the sandbox itself and its resolver, laid over the image's /etc at start. Without
 * a `nameserver` (the node's DNS answerer on the bridge) the sandbox has loopback only: name
 * lookups end at /etc/hosts without waiting on a resolver.
 */
export function sandboxEtcFiles(hostname: string, nameserver?: string): Record<string, string> {
  return {
    'resolv.conf': nameserver
      ? `# the node answers the names this sandbox's network policy allows\nnameserver ${nameserver}\noptions timeout:2 attempts:2\n`
      : '# this sandbox has no outside network\nnameserver 127.0.0.1\noptions timeout:1 attempts:1\n',
    hosts: [`127.0.0.1\tlocalhost ${hostname}`, `::1\tlocalhost ip6-localhost ip6-loopback ${hostname}`, ''].join('\n'),
    hostname: `${hostname}\n`,
  };
}

export const SANDBOX_ETC_FILE_NAMES = Object.keys(sandboxEtcFiles('x'));
