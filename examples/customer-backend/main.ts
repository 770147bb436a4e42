import { createCustomerBackend } from './backend';

/** Runs the example backend; see docs/integrations.md for the walk-through. */
function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

try {
  const port = Number(process.env.PORT || 3000);
  const { server } = createCustomerBackend({
    publicUrl: process.env.PUBLIC_URL || `http://localhost:${port}`,
    hangar: { baseUrl: process.env.HANGAR_BASE_URL || 'http://127.0.0.1:8080', apiKey: required('HANGAR_API_KEY'), workspace: process.env.HANGAR_WORKSPACE || 'default' },
    oauth: { clientId: required('OAUTH_CLIENT_ID'), clientSecret: required('OAUTH_CLIENT_SECRET') },
  });
  server.listen(port, () => console.log(`customer backend on http://localhost:${port}: open /connect?user=<tenant key>`));
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
