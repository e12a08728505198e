import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface AssumeRoleCall {
  params: URLSearchParams;
  /** The access key the request was signed with (from its SigV4 credential scope). */
  signedWith: string | undefined;
}

/**
 * A local STS endpoint for AssumeRole, as a receiver: it records each call (the role, the
 * external id, the key that signed it) and answers with the credentials given (those of the
 * local S3 the test runs), or AccessDenied for a role whose name is "denied".
 */
export async function startStsReceiver(credentials: { accessKeyId: string; secretAccessKey: string }): Promise<{
  url: string;
  calls: AssumeRoleCall[];
  close: () => Promise<void>;
}> {
  const calls: AssumeRoleCall[] = [];
  const server: Server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const params = new URLSearchParams(body);
    const signedWith = /Credential=([^/]+)\//.exec(req.headers.authorization ?? '')?.[1];
    calls.push({ params, signedWith });
    res.setHeader('content-type', 'text/xml');
    if (params.get('Action') !== 'AssumeRole' || params.get('RoleArn')?.endsWith(':role/denied')) {
      res.statusCode = 403;
      res.end(
        '<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>not authorized to perform sts:AssumeRole</Message></Error><RequestId>1</RequestId></ErrorResponse>',
      );
      return;
    }
    const expires = new Date(Date.now() + 900_000).toISOString();
    res.end(`<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>
<Credentials><AccessKeyId>${credentials.accessKeyId}</AccessKeyId><SecretAccessKey>${credentials.secretAccessKey}</SecretAccessKey><SessionToken>session-token</SessionToken><Expiration>${expires}</Expiration></Credentials>
<AssumedRoleUser><AssumedRoleId>AROA:rbrowse</AssumedRoleId><Arn>${params.get('RoleArn')}/rbrowse</Arn></AssumedRoleUser>
</AssumeRoleResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></AssumeRoleResponse>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
