import type { HangarConfig } from '../../domain/config';
import { TEMPLATE_VARIABLES } from '../../domain/sandbox/url-template';
import { sandboxApiDocument } from '../../sandbox-agent/contract/openapi';

const VARIABLE_MEANINGS: Record<(typeof TEMPLATE_VARIABLES)[number], string> = {
  workspace_id: 'The workspace the sandbox belongs to.',
  sandbox_id: 'The sandbox\'s name.',
  region: 'The region that runs it.',
  preview_id: 'A preview\'s label (preview URLs only).',
};

/**
 * The sandbox API's OpenAPI document for this installation: the contract's document, its server
 * being the sandbox address template, whose placeholders become server variables. The sandbox
 * gateway serves it at /openapi.json; the management API shows it in /docs.
 */
export function sandboxOpenApiDocument(config: HangarConfig): Record<string, unknown> {
  const template = config.sandboxUrlTemplate.replace(/\/$/, '');
  const variables = Object.fromEntries(
    TEMPLATE_VARIABLES.filter((name) => template.includes(`{${name}}`)).map((name) => [
      name,
      { default: name === 'region' ? config.region : name, description: VARIABLE_MEANINGS[name] },
    ]),
  );
  return sandboxApiDocument([{ url: template, variables }]);
}
