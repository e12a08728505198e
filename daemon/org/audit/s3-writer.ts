import type { AwsCredentialIdentity } from '@smithy/types';

/** Where one destination's objects go, and the role that may write them. */
export interface S3Target {
  bucket: string;
  region: string;
  roleArn: string;
  externalId: string;
  kmsKeyId?: string;
}

/** Temporary credentials of an assumed role, and when to assume it again. */
export interface RoleCredentials extends AwsCredentialIdentity {
  renewAt: number;
}

/** Assumed-role sessions last this long; they are renewed a minute before. */
const SESSION_SECONDS = 900;
/** No AWS call waits longer (the SDK's default is forever): a black-holed endpoint must not hold a test call or the daemon's stop. */
const TIMEOUTS = { requestHandler: { connectionTimeout: 5_000, requestTimeout: 10_000 } };

/**
 * Writes objects into organizations' buckets with the AWS SDK: the role is assumed through STS
 * with the AWS credentials of the daemon's own environment (the SDK's usual chain), then each
 * object is written with the role's temporary credentials. The SDK is loaded on first use, so a
 * daemon that exports nothing never carries it. Endpoints other than AWS's may be given (an
 * S3-compatible store: paths then name the bucket).
 */
export class S3Writer {
  private readonly sessions = new Map<string, Promise<RoleCredentials>>();

  constructor(private readonly opts: { principal: string; stsEndpoint?: string; s3Endpoint?: string }) {}

  /** The role's credentials, assumed again when they are near their end (or the last try failed). */
  assumeRole(target: S3Target): Promise<RoleCredentials> {
    const key = `${target.roleArn}\n${target.externalId}\n${target.region}`;
    const known = this.sessions.get(key);
    if (known) {
      return known.then(
        (c) => (c.renewAt > Date.now() ? c : this.assume(key, target)),
        () => this.assume(key, target),
      );
    }
    return this.assume(key, target);
  }

  async put(target: S3Target, credentials: RoleCredentials, key: string, body: Buffer, contentType: string, contentEncoding?: string): Promise<void> {
    const { S3Client, PutObjectCommand } = await import('@aws-sdk/client-s3');
    const client = new S3Client({
      region: target.region,
      credentials,
      ...(this.opts.s3Endpoint ? { endpoint: this.opts.s3Endpoint, forcePathStyle: true } : {}),
      maxAttempts: 2,
      ...TIMEOUTS,
    });
    try {
      await client.send(
        new PutObjectCommand({
          Bucket: target.bucket,
          Key: key,
          Body: body,
          ContentType: contentType,
          ...(contentEncoding ? { ContentEncoding: contentEncoding } : {}),
          ...(target.kmsKeyId ? { ServerSideEncryption: 'aws:kms', SSEKMSKeyId: target.kmsKeyId } : {}),
        }),
      );
    } finally {
      client.destroy();
    }
  }

  private assume(key: string, target: S3Target): Promise<RoleCredentials> {
    const session = (async () => {
      const { STSClient, AssumeRoleCommand } = await import('@aws-sdk/client-sts');
      const client = new STSClient({
        region: target.region,
        ...(this.opts.stsEndpoint ? { endpoint: this.opts.stsEndpoint } : {}),
        maxAttempts: 2,
        ...TIMEOUTS,
      });
      try {
        const { Credentials: c } = await client.send(
          new AssumeRoleCommand({
            RoleArn: target.roleArn,
            ExternalId: target.externalId,
            RoleSessionName: this.opts.principal,
            DurationSeconds: SESSION_SECONDS,
          }),
        );
        if (!c?.AccessKeyId || !c.SecretAccessKey) throw new Error('STS answered without credentials');
        const expires = c.Expiration?.getTime() ?? Date.now() + SESSION_SECONDS * 1000;
        return { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, sessionToken: c.SessionToken, renewAt: expires - 60_000 };
      } finally {
        client.destroy();
      }
    })();
    this.sessions.set(key, session);
    return session;
  }
}
