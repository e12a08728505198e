/** Where a session's forwarder sends its traffic, and what goes direct instead. */
export interface Upstream {
  /** The upstream proxy's URL with its credentials, for proxy-chain only: never logged or returned. */
  url: string;
  /** The upstream's host name or IP address, as configured (the name its TLS certificate must carry). */
  host: string;
  /** Hosts that skip the upstream (the proxy's bypass_hosts). */
  bypasses(hostname: string): boolean;
  /** The operator's own (RBROWSE_STEALTH_PROXY), reached wherever it is; an organization's is held to a session's reach. */
  trusted?: boolean;
}

export interface UpstreamConfig {
  protocol: 'http' | 'https';
  host: string;
  port: number;
  username?: string;
  bypass_hosts?: string[];
}

export function upstreamFor(config: UpstreamConfig, password: string | undefined): Upstream {
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = new URL(`${config.protocol}://${host}:${config.port}`);
  // The URL setters leave '%' alone, and proxy-chain decodes what it finds: encode it all first.
  if (config.username) url.username = encodeURIComponent(config.username);
  if (password) url.password = encodeURIComponent(password);
  const rules = (config.bypass_hosts ?? []).map((h) => h.toLowerCase());
  return { url: url.href, host: config.host, bypasses: (hostname) => bypassMatches(rules, hostname.toLowerCase()) };
}

/** Chromium's bypass-list forms: `example.com` is that host only; `.example.com` and `*.example.com` its subdomains. */
export function bypassMatches(rules: string[], hostname: string): boolean {
  const bare = hostname.replace(/^\[(.*)\]$/, '$1');
  return rules.some((rule) => {
    const suffix = rule.startsWith('*.') ? rule.slice(1) : rule.startsWith('.') ? rule : undefined;
    return suffix ? bare.endsWith(suffix) : bare === rule.replace(/^\[(.*)\]$/, '$1');
  });
}
