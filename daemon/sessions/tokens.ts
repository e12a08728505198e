import { randomBytes } from 'node:crypto';
import { SignJWT, decodeJwt, jwtVerify } from 'jose';
import { readOrCreateSecret } from '../lib/secret-file.js';

/**
 * cdp: the CDP websocket; live: the live view (a URL handed to a watcher must not drive CDP);
 * view: the read-only live view (its websocket takes no input); replay: watching a session's replays.
 */
export type TokenScope = 'cdp' | 'live' | 'view' | 'replay';

export interface SessionClaims {
  session: { id: string; org_id: string };
  scope: TokenScope;
}

/**
 * Signs and checks the `jwt` carried by cdp_ws_url and browser_live_view_url. The secret
 * stays in RBROWSE_HOME, so URLs handed out before a restart still verify after it.
 */
export class SessionTokens {
  private constructor(private readonly key: Uint8Array) {}

  static async open(secretFile: string): Promise<SessionTokens> {
    const secret = await readOrCreateSecret(secretFile, () => randomBytes(32).toString('base64url'));
    return new SessionTokens(new TextEncoder().encode(secret));
  }

  /**
   * The token of a session for a scope. It depends only on its claims and the key (issued at the
   * session's creation), so it is derived again whenever it is needed and never stored.
   */
  sign(sessionId: string, orgId: string, scope: TokenScope, issuedAt: Date): Promise<string> {
    const claims: SessionClaims = { session: { id: sessionId, org_id: orgId }, scope };
    return new SignJWT({ ...claims })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(sessionId)
      .setIssuedAt(Math.floor(issuedAt.getTime() / 1000))
      .setIssuer('rbrowse')
      .sign(this.key);
  }

  /**
   * The session id a token claims, its signature unchecked: a token equal to the one issued to
   * that session needs no check (jose's is a thread-pool job, which a websocket's connect would
   * wait for), and any other must still pass verify().
   */
  claimedSession(token: string): string | undefined {
    try {
      return decodeJwt(token).sub;
    } catch {
      return undefined;
    }
  }

  /** The session the token names for this scope, or null for anything forged, tampered, malformed or of another scope. */
  async verify(token: string | undefined | null, scope: TokenScope): Promise<SessionClaims['session'] | null> {
    if (!token) return null;
    try {
      const { payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'], issuer: 'rbrowse' });
      const { session, scope: tokenScope } = payload as Partial<SessionClaims>;
      if (!session || typeof session.id !== 'string' || session.id !== payload.sub || tokenScope !== scope) return null;
      return session;
    } catch {
      return null;
    }
  }
}
