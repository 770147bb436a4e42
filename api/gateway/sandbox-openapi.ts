import type { HangarConfig } from '../../domain/config';
import { TEMPLATE_VARIABLES } from '../../domain/sandbox/url-template';
import { sandboxApiDocument } from '../../sandbox-agent/contract/openapi';

const VARIABLE_MEANINGS: Record<(typeof TEMPLATE_VARIABLES)[number], string> = {
  workspace_id: 'The workspace the sandbox belongs to.',
  sandbox_id: 'The sandbox\'s name.',
  region: 'The region that runs it.',
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
  const document = sandboxApiDocument([{ url: template, variables }]);
  Object.assign(document.paths as Record<string, unknown>, { '/port/{port}/{path}': portPathItem() });
  return document;
}

const PORT_METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options'];

/**
 * `/port/{port}/...`, which the gateway serves itself (sandbox-ports.ts) rather than the sandbox's
 * API, so it is not in the API's route table: any method, WebSocket upgrades included.
 */
function portPathItem(): Record<string, unknown> {
  const error = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } } });
  return Object.fromEntries(
    PORT_METHODS.map((method) => [
      method,
      {
        operationId: `forwardToPort${method[0].toUpperCase()}${method.slice(1)}`,
        summary: 'Forward a request (or a WebSocket upgrade) to 127.0.0.1:{port} inside the sandbox; path, query, headers and bodies as sent',
        tags: ['port'],
        parameters: [
          { name: 'port', in: 'path', required: true, schema: { type: 'integer', minimum: 1, maximum: 65535 }, description: 'A TCP port inside the sandbox.' },
          { name: 'path', in: 'path', required: true, schema: { type: 'string' }, description: 'The path on that port, of any depth (may be empty).' },
        ],
        responses: {
          '200': { description: 'What the program on the port answers, status and headers included', content: { '*/*': { schema: { type: 'string', format: 'binary' } } } },
          '400': error('The port is not a number from 1 to 65535.'),
          '502': error('Nothing answered on the port (`port_unreachable`).'),
        },
      },
    ]),
  );
}
