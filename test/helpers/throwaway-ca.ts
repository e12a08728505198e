import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';

/**
 * A throwaway CA and a certificate for 127.0.0.1 it signed, made with openssl in `dir`: what a
 * TLS-intercepting proxy or a private registry presents. `ca` is the CA's PEM file, `caPem` its text.
 */
export async function throwawayCa(dir: string): Promise<{ ca: string; caPem: string; key: string; cert: string }> {
  const run = (args: string[]) => execa('openssl', args, { cwd: dir });
  await run([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=rbrowse throwaway test CA',
  ]);
  await run(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1']);
  await writeFile(join(dir, 'san.cnf'), 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n');
  await run([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'san.cnf',
  ]);
  const read = (f: string) => readFile(join(dir, f), 'utf8');
  return { ca: join(dir, 'ca.pem'), caPem: await read('ca.pem'), key: await read('server.key'), cert: await read('server.pem') };
}
