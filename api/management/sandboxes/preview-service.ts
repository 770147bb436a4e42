import { randomBytes } from 'node:crypto';
import type { HangarConfig } from '../../../domain/config';
import { ApiError, badRequest, conflict } from '../../../domain/errors';
import type { WorkspaceGrant } from '../../../domain/principal';
import { previewExpiresAt, previewLabel, previewSpecProblem, previewTokenDigest, previewUrlTemplate, type PreviewSpec } from '../../../domain/sandbox/preview';
import { renderSandboxUrl } from '../../../domain/sandbox/url-template';
import type { SecretBox } from '../../../domain/secret-box';
import type { ResourceRow, ResourceStore } from '../../../store/resources';
import type { PreviewRow, PreviewTokenRow, PreviewWrite, SandboxPreviewStore } from '../../../store/sandbox-previews';
import { findNamed } from '../resources/named';

/** What the preview operations work with. */
export interface PreviewServices {
  resources: ResourceStore;
  previews: SandboxPreviewStore;
  secrets: SecretBox;
  config: HangarConfig;
}

/** A preview as a request gives it. */
export interface PreviewRequest {
  metadata: { name: string; displayName?: string };
  spec: PreviewSpec & { url?: string; region?: string };
}

/** The sandbox a preview route names, after dropping its expired previews (the gateway refuses them already). */
async function sandboxOf(services: PreviewServices, workspace: WorkspaceGrant, sandboxName: string): Promise<ResourceRow> {
  const sandbox = await findNamed(services.resources, 'sandboxes', 'sandbox', workspace, sandboxName);
  await services.previews.deleteExpired(sandbox.id);
  return sandbox;
}

/**
 * 404 for a preview or token, with the numeric `code` beside `error`: the reference SDK's
 * `previews.createIfNotExists` tells a missing preview by `code === 404`.
 */
function missing(message: string): ApiError {
  return new ApiError(404, 'not_found', message, { code: 404 });
}

async function previewOf(services: PreviewServices, sandbox: ResourceRow, name: string): Promise<PreviewRow> {
  const preview = await services.previews.get(sandbox.id, name);
  if (!preview) throw missing(`preview '${name}' not found on sandbox '${sandbox.name}'`);
  return preview;
}

/** The stored spec: what the request said, without the read-only fields it may echo. */
function checkedWrite(workspace: WorkspaceGrant, body: PreviewRequest, createdAt: Date, actor: string, label?: string): PreviewWrite {
  const { url: _url, region: _region, ...given } = body.spec;
  const spec: PreviewSpec = { ...given, public: given.public ?? false };
  const problem = previewSpecProblem(spec, Date.now());
  if (problem) throw badRequest(problem);
  return {
    name: body.metadata.name,
    displayName: body.metadata.displayName ?? body.metadata.name,
    label: label ?? previewLabel(spec.prefixUrl, workspace.name, randomBytes(12).toString('hex')),
    spec,
    expiresAt: previewExpiresAt(spec, createdAt),
    actor,
  };
}

function labelTaken(label: string) {
  return conflict(`the preview URL label '${label}' is taken; choose another prefixUrl, or pass force=true to take it from the preview of this workspace holding it`);
}

export function previewUrl(config: HangarConfig, preview: PreviewRow): string {
  return renderSandboxUrl(previewUrlTemplate(config), { preview_id: preview.label, region: config.region });
}

export async function listPreviews(services: PreviewServices, workspace: WorkspaceGrant, sandboxName: string): Promise<{ sandbox: ResourceRow; previews: PreviewRow[] }> {
  const sandbox = await sandboxOf(services, workspace, sandboxName);
  return { sandbox, previews: await services.previews.list(sandbox.id) };
}

export async function getPreview(services: PreviewServices, workspace: WorkspaceGrant, sandboxName: string, name: string): Promise<{ sandbox: ResourceRow; preview: PreviewRow }> {
  const sandbox = await sandboxOf(services, workspace, sandboxName);
  return { sandbox, preview: await previewOf(services, sandbox, name) };
}

/** A new preview; a name taken on the sandbox is a 409, and so is a prefix another preview holds unless `force` takes it. */
export async function createPreview(services: PreviewServices, workspace: WorkspaceGrant, sandboxName: string, body: PreviewRequest, options: { force: boolean; actor: string }) {
  const sandbox = await sandboxOf(services, workspace, sandboxName);
  const write = checkedWrite(workspace, body, new Date(), options.actor);
  let created = await services.previews.create(workspace.id, sandbox.id, write);
  if (created === 'label' && options.force && (await services.previews.deleteByLabel(workspace.id, write.label))) {
    created = await services.previews.create(workspace.id, sandbox.id, write);
  }
  if (created === 'name') throw conflict(`preview '${write.name}' already exists on sandbox '${sandbox.name}'`);
  if (created === 'label') throw labelTaken(write.label);
  return { sandbox, preview: created };
}

/** Replaces a preview's spec and display name; its URL changes only with its prefix. */
export async function updatePreview(services: PreviewServices, workspace: WorkspaceGrant, sandboxName: string, name: string, body: PreviewRequest, actor: string) {
  if (body.metadata.name !== name) throw badRequest(`body.metadata.name '${body.metadata.name}' differs from the name in the path; names are immutable`);
  const sandbox = await sandboxOf(services, workspace, sandboxName);
  const current = await previewOf(services, sandbox, name);
  const keepsLabel = (body.spec.prefixUrl ?? undefined) === (current.spec.prefixUrl ?? undefined);
  const write = checkedWrite(workspace, body, current.created_at, actor, keepsLabel ? current.label : undefined);
  const updated = await services.previews.update(current.id, write);
  if (updated === 'label' || updated === 'name') throw labelTaken(write.label);
  if (!updated) throw missing(`preview '${name}' not found on sandbox '${sandbox.name}'`);
  return { sandbox, preview: updated };
}

export async function deletePreview(services: PreviewServices, workspace: WorkspaceGrant, sandboxName: string, name: string) {
  const sandbox = await sandboxOf(services, workspace, sandboxName);
  const preview = await services.previews.delete(sandbox.id, name);
  if (!preview) throw missing(`preview '${name}' not found on sandbox '${sandbox.name}'`);
  return { sandbox, preview };
}

/** A token and its value, opened from its sealed form (bound to its preview). */
export interface OpenedToken {
  row: PreviewTokenRow;
  value: string;
}

function opened(services: PreviewServices, row: PreviewTokenRow): OpenedToken {
  return { row, value: services.secrets.open(row.sealed_token, row.preview_id) };
}

export async function listPreviewTokens(services: PreviewServices, workspace: WorkspaceGrant, sandboxName: string, previewName: string) {
  const { sandbox, preview } = await getPreview(services, workspace, sandboxName, previewName);
  return { sandbox, preview, tokens: (await services.previews.listTokens(preview.id)).map((row) => opened(services, row)) };
}

/** A new token for a preview, valid until `expiresAt` (in the future); a name taken on the preview is a 409. */
export async function createPreviewToken(services: PreviewServices, workspace: WorkspaceGrant, sandboxName: string, previewName: string, body: { name?: string; expiresAt: string }) {
  const { sandbox, preview } = await getPreview(services, workspace, sandboxName, previewName);
  const expiresAt = new Date(body.expiresAt);
  if (Number.isNaN(expiresAt.getTime())) throw badRequest(`body.spec.expiresAt '${body.expiresAt}' is not an RFC 3339 date-time`);
  if (expiresAt.getTime() <= Date.now()) throw badRequest(`body.spec.expiresAt '${body.expiresAt}' is in the past`);
  const value = randomBytes(32).toString('base64url');
  const name = body.name ?? `token-${randomBytes(6).toString('hex')}`;
  const row = await services.previews.createToken(preview.id, { name, digest: previewTokenDigest(value), sealed: services.secrets.seal(value, preview.id), expiresAt });
  if (!row) throw conflict(`token '${name}' already exists on preview '${preview.name}'`);
  return { sandbox, preview, token: { row, value } };
}

export async function deletePreviewToken(services: PreviewServices, workspace: WorkspaceGrant, sandboxName: string, previewName: string, tokenName: string): Promise<void> {
  const { preview } = await getPreview(services, workspace, sandboxName, previewName);
  if (!(await services.previews.deleteToken(preview.id, tokenName))) throw missing(`token '${tokenName}' not found on preview '${preview.name}'`);
}
