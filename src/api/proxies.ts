import { Type, type Static } from 'typebox';
import { NoContent, type RouteDef } from './route-def.js';
import { IdParamsSchema, PaginationQuery } from './schemas.js';

// Proxies: upstream proxies a session routes through via its local forwarding proxy.

const strict = { additionalProperties: false } as const;

/** Kernel's proxy types; only `custom` can work without Kernel's managed network. */
export const PROXY_TYPES = ['datacenter', 'isp', 'residential', 'mobile', 'custom'] as const;
export type ProxyType = (typeof PROXY_TYPES)[number];
const ProxyTypeSchema = Type.Enum([...PROXY_TYPES], {
  description: "Proxy type; datacenter, isp, residential and mobile need Kernel's managed network",
});
const ProtocolSchema = Type.Enum(['http', 'https'], {
  description: 'How the daemon talks to the proxy: http (default here) or https (TLS to the proxy)',
});

/** A host name or IPv4 address (ajv's hostname format accepts both), or an IPv6 address. */
const HostSchema = Type.Union([Type.String({ format: 'hostname', maxLength: 253 }), Type.String({ format: 'ipv6' })]);
// Basic auth joins user and password with a colon, and both travel in a header line.
const NO_CONTROL = '^[^\\u0000-\\u001f\\u007f]*$';
const UsernameSchema = Type.String({ minLength: 1, maxLength: 255, pattern: '^[^:\\u0000-\\u001f\\u007f]+$' });
const PasswordSchema = Type.String({ minLength: 1, maxLength: 1024, pattern: NO_CONTROL, writeOnly: true });
const ProxyNameSchema = Type.String({ minLength: 1, maxLength: 255, pattern: '\\S' });
/** A host (exact), or `.example.com` / `*.example.com` (its subdomains). */
const BypassHostSchema = Type.String({ minLength: 1, maxLength: 253, pattern: '^(\\*\\.|\\.)?[A-Za-z0-9_.:\\[\\]-]+$' });

export const CreateProxySchema = Type.Object(
  {
    type: ProxyTypeSchema,
    name: Type.Optional(ProxyNameSchema),
    protocol: Type.Optional(ProtocolSchema),
    bypass_hosts: Type.Optional(Type.Array(BypassHostSchema, { maxItems: 100 })),
    // One object for every type's fields, so a typo is refused whatever the type; which fields a
    // type takes (custom: host and port required) is checked by the daemon.
    config: Type.Optional(
      Type.Object(
        {
          host: Type.Optional(HostSchema),
          port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
          username: Type.Optional(UsernameSchema),
          password: Type.Optional(PasswordSchema),
          ca_bundle: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 256 * 1024,
              description:
                'PEM certificates (one or more) of the CA the proxy re-signs TLS with (a MITM proxy): the browsers of sessions created with this proxy trust it',
            }),
          ),
          country: Type.Optional(Type.String()),
          city: Type.Optional(Type.String()),
          state: Type.Optional(Type.String()),
          zip: Type.Optional(Type.String()),
          asn: Type.Optional(Type.String()),
          os: Type.Optional(Type.String()),
        },
        strict,
      ),
    ),
  },
  strict,
);
export type CreateProxyBody = Static<typeof CreateProxySchema>;

export const UpdateProxySchema = Type.Object({ name: ProxyNameSchema }, strict);
export type UpdateProxyBody = Static<typeof UpdateProxySchema>;

export const CheckProxySchema = Type.Object(
  {
    url: Type.Optional(Type.String({ format: 'uri', pattern: '^https?://', maxLength: 8192, description: 'Reach this URL through the proxy' })),
  },
  strict,
);
export type CheckProxyBody = Static<typeof CheckProxySchema>;

export const ListProxiesQuerySchema = Type.Object({
  ...PaginationQuery,
  name: Type.Optional(Type.String({ description: 'Exact name (case- and accent-insensitive)' })),
  query: Type.Optional(Type.String({ description: 'Substring of the name or host; an id matches exactly' })),
});
export type ListProxiesQuery = Static<typeof ListProxiesQuerySchema>;

export const ProxySchema = Type.Object(
  {
    id: Type.String(),
    type: ProxyTypeSchema,
    name: Type.Optional(Type.String()),
    protocol: Type.Optional(ProtocolSchema),
    bypass_hosts: Type.Optional(Type.Array(Type.String())),
    config: Type.Optional(
      Type.Object({
        host: Type.String(),
        port: Type.Integer(),
        username: Type.Optional(Type.String()),
        has_password: Type.Boolean({ description: 'The password itself is never returned' }),
        has_ca_bundle: Type.Boolean({ description: 'Whether the proxy has a CA bundle (config.ca_bundle) its sessions trust' }),
      }),
    ),
    ip_address: Type.Optional(
      Type.String({ description: "The proxy server's address: its host when that is an IP address, else the one its last check reached" }),
    ),
    status: Type.Optional(Type.Enum(['available', 'unavailable'])),
    last_checked: Type.Optional(Type.String({ format: 'date-time' })),
    created_at: Type.String({ format: 'date-time' }),
  },
  { description: 'An upstream proxy sessions may route through' },
);
export type Proxy = Static<typeof ProxySchema>;

export const proxyRoutes = {
  createProxy: {
    method: 'POST',
    url: '/proxies',
    auth: 'key',
    summary: 'Create a proxy (type custom: {host, port, username?, password?}; the password is never returned)',
    tag: 'proxies',
    body: CreateProxySchema,
    success: { status: 200, body: ProxySchema },
  },
  listProxies: {
    method: 'GET',
    url: '/proxies',
    auth: 'key',
    summary: 'List proxies (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'proxies',
    querystring: ListProxiesQuerySchema,
    success: { status: 200, body: Type.Array(ProxySchema) },
  },
  getProxy: {
    method: 'GET',
    url: '/proxies/:id',
    auth: 'key',
    summary: 'Get a proxy',
    tag: 'proxies',
    params: IdParamsSchema,
    success: { status: 200, body: ProxySchema },
  },
  updateProxy: {
    method: 'PATCH',
    url: '/proxies/:id',
    auth: 'key',
    summary: 'Rename a proxy (names need not be unique)',
    tag: 'proxies',
    params: IdParamsSchema,
    body: UpdateProxySchema,
    success: { status: 200, body: ProxySchema },
  },
  deleteProxy: {
    method: 'DELETE',
    url: '/proxies/:id',
    auth: 'key',
    summary: 'Delete a proxy; 409 while a live session or a pool uses it',
    tag: 'proxies',
    params: IdParamsSchema,
    success: NoContent,
  },
  checkProxy: {
    method: 'POST',
    url: '/proxies/:id/check',
    auth: 'key',
    summary: 'Check that the proxy answers and accepts its credentials (or reaches url through it)',
    tag: 'proxies',
    params: IdParamsSchema,
    body: CheckProxySchema,
    success: { status: 200, body: ProxySchema },
  },
} as const satisfies Record<string, RouteDef>;
