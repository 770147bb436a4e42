export const name = '008_custom_domains';

// Custom domains are resources of kind 'customdomains' with their host name in spec.domain.
// Routing by Host is global, so a host name belongs to one domain across every workspace: this
// index enforces it (two workspaces claiming it at once cannot both win) and serves the
// gateway's lookup by host.
export const sql = `
CREATE UNIQUE INDEX resources_custom_domain_host ON resources ((spec->>'domain')) WHERE kind = 'customdomains';
`;
