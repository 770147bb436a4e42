import { Type } from 'typebox';

/**
 * `spec.network`, one shape for sandboxes and every workload kind (agents, functions, models,
 * jobs). Entries are checked one by one after the schema (domain/sandbox/network-policy.ts), so a
 * 400 names the bad one.
 */
const DomainList = (description: string) => Type.Optional(Type.Array(Type.String({ maxLength: 300 }), { maxItems: 1000, description }));
const NetworkRules = {
  allowedDomains: DomainList("Only these may be reached: domains ('*.example.com' for its subdomains), IP addresses or CIDR blocks. Wins over forbiddenDomains."),
  forbiddenDomains: DomainList('These may not be reached (same forms as allowedDomains).'),
};

export const NetworkSpecSchema = Type.Object(
  {
    ...NetworkRules,
    internet: Type.Optional(
      Type.Boolean({ description: 'false: no outbound network at all (loopback only). Fixed for a sandbox’s life; a workload changes it with a new revision.' }),
    ),
    proxy: Type.Optional(Type.Object(NetworkRules, { additionalProperties: false, description: 'The same rules; both places apply.' })),
  },
  {
    additionalProperties: false,
    description: 'Outbound network. A sandbox without it reaches the internet (where the node has networking); a workload without it has loopback only.',
  },
);
