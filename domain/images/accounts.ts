/**
 * The account files (/etc/passwd, /etc/group) of a sandbox on an image: the image's own
 * accounts, which its programs may look up, with the sandbox's user in place of any entry that
 * has its name or its id, so the sandbox's uid always answers to `user` with its home.
 */
export function mergeAccountFile(imageText: string | undefined, ownLine: string): string {
  const [ownName, , ownId] = ownLine.split(':');
  const kept = (imageText ?? '')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .filter((line) => {
      const [name, , id] = line.split(':');
      return name !== ownName && id !== ownId;
    });
  return [...kept, ownLine, ''].join('\n');
}
