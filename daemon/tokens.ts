import { randomBytes } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import { readOrCreateSecret } from './auth.js';

export interface SessionClaims {
  session: { id: string; org_id: string };
}

/**
 * Signs and checks the `jwt` carried by cdp_ws_url (and later the live-view URL). The secret
 * stays in RBROWSE_HOME, so URLs handed out before a restart still verify after it.
 */
export class SessionTokens {
  private constructor(private readonly key: Uint8Array) {}

  static async open(secretFile: string): Promise<SessionTokens> {
    const secret = await readOrCreateSecret(secretFile, () => randomBytes(32).toString('base64url'));
    return new SessionTokens(new TextEncoder().encode(secret));
  }

  sign(sessionId: string, orgId: string): Promise<string> {
    const claims: SessionClaims = { session: { id: sessionId, org_id: orgId } };
    return new SignJWT({ ...claims })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(sessionId)
      .setIssuedAt()
      .setIssuer('rbrowse')
      .sign(this.key);
  }

  /** The session the token names, or null for anything forged, tampered, or malformed. */
  async verify(token: string | undefined | null): Promise<SessionClaims['session'] | null> {
    if (!token) return null;
    try {
      const { payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'], issuer: 'rbrowse' });
      const session = (payload as Partial<SessionClaims>).session;
      if (!session || typeof session.id !== 'string' || session.id !== payload.sub) return null;
      return session;
    } catch {
      return null;
    }
  }
}
