import type { HangarConfig, OAuthProviderEndpoints } from '../config';
import { PROVIDER_API_KEY_SECRET, PROVIDER_INTEGRATION } from '../workloads/provider-model';

/** One key of a connection's `spec.secret`. */
export interface IntegrationSecret {
  name: string;
  required: boolean;
  description: string;
}

/**
 * What Hangar knows about one third-party integration: the secrets a connection to it holds, and,
 * when it has them, the OAuth provider and scopes of its tenant flow and the MCP server a function
 * bound to such a connection runs. An integration without an MCP server (a model provider) is
 * used by other workloads: its connection only holds their credentials.
 */
export interface IntegrationDefinition {
  name: string;
  displayName: string;
  description: string;
  secrets: readonly IntegrationSecret[];
  oauth?: {
    /** Scopes the customer's backend asks for in step 2 of the tenant flow. */
    scopes: readonly string[];
    /** Scopes without which the integration cannot work; a grant lacking one is refused. */
    requiredScopes: readonly string[];
    endpoints(config: HangarConfig): OAuthProviderEndpoints;
  };
  mcp?: {
    /** Module (relative to the repository, without extension) whose `main` serves the MCP server. */
    entry: string;
    tools: readonly string[];
    /**
     * The environment of a hosted instance: the connection's secrets and the provider's endpoints
     * (from the platform's configuration) under the names the entry point reads.
     */
    environment(secrets: Record<string, string>, config: HangarConfig): Record<string, string>;
    /** URLs whose origins the hosted server may reach (its sandbox has no other network). */
    egress(config: HangarConfig): string[];
  };
}

export const EMAIL_SEND_SCOPE = 'https://www.googleapis.com/auth/gmail.send';

/** The environment variables of a hosted email MCP server, besides PORT and HOST. */
export const EMAIL_MCP_ENV = {
  authorizationUrl: 'HANGAR_OAUTH_EMAIL_AUTH_URL',
  tokenUrl: 'HANGAR_OAUTH_EMAIL_TOKEN_URL',
  apiBase: 'HANGAR_OAUTH_EMAIL_API_BASE',
  userinfoUrl: 'HANGAR_OAUTH_EMAIL_USERINFO_URL',
} as const satisfies Record<keyof OAuthProviderEndpoints, string>;

const oauthClientSecrets: readonly IntegrationSecret[] = [
  { name: 'CLIENT_ID', required: true, description: "Client id of the customer's OAuth application at the provider." },
  { name: 'CLIENT_SECRET', required: true, description: 'Client secret of that application.' },
  { name: 'REFRESH_TOKEN', required: true, description: 'Refresh token obtained for the end user through the OAuth flow.' },
];

const email: IntegrationDefinition = {
  name: 'email',
  displayName: 'Email',
  description: "Sends email as the connected user through the provider's mail API (Gmail-compatible).",
  secrets: oauthClientSecrets,
  oauth: {
    scopes: [EMAIL_SEND_SCOPE, 'openid', 'profile', 'email'],
    requiredScopes: [EMAIL_SEND_SCOPE],
    endpoints: (config) => config.integrations.email,
  },
  mcp: {
    entry: 'integrations/email-mcp/main',
    tools: ['send_email', 'whoami'],
    environment: (secrets, config) => ({
      CLIENT_ID: secrets.CLIENT_ID,
      CLIENT_SECRET: secrets.CLIENT_SECRET,
      REFRESH_TOKEN: secrets.REFRESH_TOKEN,
      ...Object.fromEntries(Object.entries(EMAIL_MCP_ENV).map(([key, variable]) => [variable, config.integrations.email[key as keyof OAuthProviderEndpoints]])),
    }),
    egress: ({ integrations: { email: endpoints } }) => [endpoints.tokenUrl, endpoints.apiBase, endpoints.userinfoUrl],
  },
};

const openai: IntegrationDefinition = {
  name: PROVIDER_INTEGRATION,
  displayName: 'OpenAI-compatible provider',
  description:
    "The API key of an OpenAI-compatible model API (OpenAI, vLLM, Ollama, ...), for models with spec.runtime.type 'openai' to call it through the run gateway.",
  secrets: [{ name: PROVIDER_API_KEY_SECRET, required: true, description: 'API key sent upstream as a bearer token; never returned or forwarded to clients.' }],
};

/** The integration whose connections hold an OCI registry's credentials (see registry-credentials.ts). */
export const REGISTRY_INTEGRATION = 'oci-registry';

const ociRegistry: IntegrationDefinition = {
  name: REGISTRY_INTEGRATION,
  displayName: 'OCI registry',
  description: "Credentials of a private OCI registry, for sandboxes whose spec.runtime.image it holds (named by spec.runtime.registryConnection).",
  secrets: [
    { name: 'REGISTRY', required: true, description: "The registry's host[:port], as image references write it: the credentials go to it and no other." },
    { name: 'USERNAME', required: true, description: 'The account at the registry (for a token, the name the registry asks for with it).' },
    { name: 'PASSWORD', required: true, description: 'Its password or access token; never returned, logged or put on a command line.' },
  ],
};

export const INTEGRATIONS: readonly IntegrationDefinition[] = [email, openai, ociRegistry];

export function findIntegration(name: string): IntegrationDefinition | undefined {
  return INTEGRATIONS.find((integration) => integration.name === name);
}

/** The integrations a tenant can be provisioned for: those with an OAuth flow and an MCP server. */
export type ProvisionableIntegration = IntegrationDefinition & Required<Pick<IntegrationDefinition, 'oauth' | 'mcp'>>;

export function isProvisionable(integration: IntegrationDefinition): integration is ProvisionableIntegration {
  return integration.oauth !== undefined && integration.mcp !== undefined;
}
