import fc from 'fast-check';

/**
 * Spellings of one request path that some server along the way could read as the same path:
 * escapes (single and double, either hex case), another letter case, doubled slashes, `.` and
 * `x/..` segments, `\` for `/`, `;parameters`, a trailing slash and a query string. Used to try
 * to reach the sandbox agent's internal routes through the gateway.
 */
export function pathVariant(path: string): fc.Arbitrary<string> {
  const segments = path.split('/').filter(Boolean);
  const character = (c: string) => {
    const hex = c.charCodeAt(0).toString(16).padStart(2, '0');
    return fc.constantFrom(c, c.toUpperCase(), `%${hex.toUpperCase()}`, `%${hex}`, `%25${hex}`);
  };
  const spelt = (segment: string) => fc.tuple(...[...segment].map(character)).map((chars) => chars.join(''));
  const separator = fc.constantFrom('/', '//', '/./', '/x/../', '\\', '/%2F', '/%2e/');
  const parameter = fc.constantFrom('', '', ';', ';x=1');
  const ending = fc.constantFrom('', '/', '/.', '?a=1', '/?a=1', '?', '/more');
  return fc
    .tuple(fc.tuple(...segments.map((segment) => fc.tuple(separator, spelt(segment), parameter))), ending)
    .map(([parts, end]) => `${parts.map(([sep, segment, param]) => `${sep}${segment}${param}`).join('')}${end}`)
    .map((variant) => (variant.startsWith('/') ? variant : `/${variant}`));
}
