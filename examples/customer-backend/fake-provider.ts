import { EMAIL_MCP_ENV } from '../../domain/integrations/catalog';
import { FakeOAuthProvider } from '../../test/fakes/oauth-provider';

/**
 * The tests' fake OAuth provider as a program, to try the example without a real provider
 * account: one application (OAUTH_CLIENT_ID / OAUTH_CLIENT_SECRET, default demo-client /
 * demo-secret) whose redirect URI is the example backend's callback. Prints the environment
 * Hangar needs to talk to it.
 */
async function main() {
  const port = Number(process.env.FAKE_PROVIDER_PORT || 9400);
  const backend = (process.env.PUBLIC_URL || 'http://localhost:3000').replace(/\/+$/, '');
  const provider = await FakeOAuthProvider.start(
    [{ clientId: process.env.OAUTH_CLIENT_ID || 'demo-client', clientSecret: process.env.OAUTH_CLIENT_SECRET || 'demo-secret', redirectUris: [`${backend}/oauth/callback`] }],
    port,
  );
  const endpoints = provider.endpoints;
  console.log(`fake OAuth provider on ${provider.url}; start Hangar with:`);
  for (const [key, variable] of Object.entries(EMAIL_MCP_ENV)) console.log(`  export ${variable}=${endpoints[key as keyof typeof endpoints]}`);
  const report = setInterval(() => {
    const message = provider.received.shift();
    if (message) console.log(`received: from ${message.from} to ${message.to}: ${message.subject}`);
  }, 500);
  process.on('SIGINT', () => {
    clearInterval(report);
    void provider.close().then(() => process.exit(0));
  });
}

main().catch((err) => {
  console.error((err as Error).message);
  process.exit(1);
});
