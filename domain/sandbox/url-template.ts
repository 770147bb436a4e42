/**
 * A sandbox's address comes from a template with three variables, each 'unknown' when not given:
 * `{sandbox_id}`, `{workspace_id}` and `{region}` (and `{preview_id}` in a preview's). The sandbox gateway matches incoming requests
 * against the same template, so host-based (`http://{sandbox_id}.{workspace_id}.example`) and
 * path-based (`http://127.0.0.1:8082/{workspace_id}/{sandbox_id}`) layouts both work.
 */
export const TEMPLATE_VARIABLES = ['sandbox_id', 'workspace_id', 'region', 'preview_id'] as const;
export type TemplateVariable = (typeof TEMPLATE_VARIABLES)[number];
export type TemplateValues = Partial<Record<TemplateVariable, string>>;

const PLACEHOLDER = /\{(sandbox_id|workspace_id|region|preview_id)\}/g;

export function renderSandboxUrl(template: string, values: TemplateValues): string {
  return template.replace(PLACEHOLDER, (_, name: TemplateVariable) => encodeURIComponent(values[name] || 'unknown'));
}

export interface SandboxAddressMatcher {
  /** Values found in a request's host and path, and the rest of the path for the sandbox API. */
  match(host: string, path: string): { values: TemplateValues; rest: string } | undefined;
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function sandboxAddressMatcher(template: string): SandboxAddressMatcher {
  const url = new URL(template.replace(PLACEHOLDER, 'x'));
  // Rebuild host and path patterns from the raw template text, keeping placeholders as captures.
  const withoutScheme = template.replace(/^[a-z]+:\/\//i, '');
  const slash = withoutScheme.indexOf('/');
  const hostPart = slash < 0 ? withoutScheme : withoutScheme.slice(0, slash);
  const pathPart = slash < 0 ? '' : withoutScheme.slice(slash).replace(/\/$/, '');
  const order: TemplateVariable[] = [];
  const toPattern = (text: string, segment: string) =>
    text
      .split(PLACEHOLDER)
      .map((piece, i) => {
        if (i % 2 === 1) {
          order.push(piece as TemplateVariable);
          return `(${segment})`;
        }
        return escapeRegex(piece);
      })
      .join('');
  const hostRegex = new RegExp(`^${toPattern(hostPart, '[^./:]+')}$`, 'i');
  const hostVars = order.length;
  const pathRegex = new RegExp(`^${toPattern(pathPart, '[^/]+')}(/.*)?$`);
  const port = url.port;

  return {
    match(host, path) {
      const hostWithPort = port && !host.includes(':') ? `${host}:${port}` : host;
      const hostMatch = hostRegex.exec(hostWithPort) ?? hostRegex.exec(host);
      if (!hostMatch) return undefined;
      const pathMatch = pathRegex.exec(path);
      if (!pathMatch) return undefined;
      const captures = [...hostMatch.slice(1), ...pathMatch.slice(1, 1 + order.length - hostVars)];
      const values: TemplateValues = {};
      order.forEach((name, i) => {
        values[name] = decodeURIComponent(captures[i]);
      });
      return { values, rest: pathMatch[1 + order.length - hostVars] || '/' };
    },
  };
}
