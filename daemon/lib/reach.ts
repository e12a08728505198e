import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** What a session may reach through the daemon's own connections (its proxy forwarder, a proxy check). */
export interface ReachPolicy {
  /** The host's loopback services are open to sessions (RBROWSE_HOST_LOOPBACK, on by default). */
  hostLoopback: boolean;
}

/** Never reached for a session: link-local (where clouds serve their metadata and credentials), "this network", multicast. */
const NEVER = new BlockList();
NEVER.addSubnet('169.254.0.0', 16, 'ipv4');
NEVER.addSubnet('0.0.0.0', 8, 'ipv4');
NEVER.addSubnet('224.0.0.0', 4, 'ipv4');
NEVER.addSubnet('fe80::', 10, 'ipv6');
NEVER.addSubnet('ff00::', 8, 'ipv6');
NEVER.addAddress('::', 'ipv6');
// Metadata services outside link-local: Alibaba's, and AWS's over IPv6.
NEVER.addAddress('100.100.100.200', 'ipv4');
NEVER.addAddress('fd00:ec2::254', 'ipv6');

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** Why `address` is out of a session's reach, or undefined when it may be reached. */
export function refusedAddress(address: string, policy: ReachPolicy): string | undefined {
  // An IPv4 address written as IPv6 (::ffff:127.0.0.1) is the IPv4 one.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  const ip = mapped ?? address;
  const family = isIP(ip) === 4 ? 'ipv4' : 'ipv6';
  if (NEVER.check(ip, family)) return `${address} is a link-local, metadata or broadcast address, which sessions never reach`;
  if (!policy.hostLoopback && LOOPBACK.check(ip, family))
    return `${address} is the host's loopback, which sessions do not reach here (RBROWSE_HOST_LOOPBACK=off)`;
  return undefined;
}

/**
 * A DNS lookup for net.connect and http.request that resolves a name once and refuses addresses out
 * of a session's reach: the connection is made to the very address checked, so a name that
 * resolves elsewhere a moment later (DNS rebinding) changes nothing.
 */
export function guardedLookup(policy: ReachPolicy): LookupFunction {
  return ((
    hostname: string,
    options: object,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      const list = addresses as LookupAddress[];
      const refused = list.map((a) => refusedAddress(a.address, policy)).find(Boolean);
      if (refused) {
        const denied: NodeJS.ErrnoException = new Error(`${hostname}: ${refused}`);
        denied.code = 'EACCES';
        return callback(denied, '');
      }
      if ((options as { all?: boolean }).all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  }) as LookupFunction;
}
