import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Secret, TOTP } from 'otpauth';

/** A user of the site: a TOTP secret (Base32) adds a second step. */
export interface SiteUser {
  password: string;
  totpSecret?: string;
}

const page = (title: string, body: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body style="font:16px sans-serif;margin:40px">${body}</body></html>`;

async function formOf(req: IncomingMessage): Promise<URLSearchParams> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

/**
 * A small site with a real login: a username and password form, a one-time code step for users
 * with a TOTP secret, a session cookie kept for an hour, and an account page only a logged-in
 * browser sees. `logOutEveryone()` ends every session on the server, as a site whose sessions
 * expire does; `logins` counts the passwords it accepted.
 */
export async function startLoginSite(users: Record<string, SiteUser>) {
  const sessions = new Map<string, string>();
  const pending = new Map<string, string>();
  const site = { logins: 0, url: '', logOutEveryone: () => sessions.clear(), close: async () => {} };
  const cookie = (req: IncomingMessage, name: string) => new RegExp(`(?:^|; )${name}=([^;]+)`).exec(req.headers.cookie ?? '')?.[1];
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const user = sessions.get(cookie(req, 'sid') ?? '');
    const send = (status: number, html: string, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...headers }).end(html);
    const redirect = (to: string, headers: Record<string, string> = {}) => res.writeHead(302, { location: to, ...headers }).end();
    const logIn = (name: string) => {
      const sid = randomBytes(16).toString('hex');
      sessions.set(sid, name);
      site.logins++;
      redirect('/account', { 'set-cookie': `sid=${sid}; Path=/; Max-Age=3600; HttpOnly` });
    };
    if (url.pathname === '/' || url.pathname === '/account') {
      if (!user) return redirect('/login');
      return send(200, page('Account', `<h1>Welcome, ${user}</h1><p id="account">Signed in as ${user}.</p>`));
    }
    if (url.pathname === '/login' && req.method === 'GET') {
      if (user) return redirect('/account');
      const error = url.searchParams.has('error') ? '<div role="alert" style="color:#b00">Incorrect username or password.</div>' : '';
      return send(
        200,
        page(
          'Sign in',
          `<h1>Sign in</h1>${error}<form method="post" action="/login">
            <label for="username">Username</label> <input id="username" name="username" autocomplete="username" required><br>
            <label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password" required><br>
            <button type="submit">Sign in</button></form>`,
        ),
      );
    }
    if (url.pathname === '/login' && req.method === 'POST') {
      const form = await formOf(req);
      const name = form.get('username') ?? '';
      const known = users[name];
      if (!known || known.password !== form.get('password')) return redirect('/login?error=1');
      if (!known.totpSecret) return logIn(name);
      const ticket = randomBytes(16).toString('hex');
      pending.set(ticket, name);
      return redirect('/verify', { 'set-cookie': `ticket=${ticket}; Path=/; HttpOnly` });
    }
    if (url.pathname === '/verify') {
      const name = pending.get(cookie(req, 'ticket') ?? '');
      if (!name) return redirect('/login');
      if (req.method === 'POST') {
        const code = (await formOf(req)).get('otp') ?? '';
        const totp = new TOTP({ secret: Secret.fromBase32(users[name]!.totpSecret!) });
        if (totp.validate({ token: code, window: 1 }) === null) return redirect('/verify?error=1');
        pending.delete(cookie(req, 'ticket')!);
        return logIn(name);
      }
      const error = url.searchParams.has('error') ? '<p class="error">That code is not right.</p>' : '';
      return send(
        200,
        page(
          'Two-step verification',
          `<h1>Enter your code</h1>${error}<form method="post" action="/verify">
            <label for="otp">Authenticator code</label> <input id="otp" name="otp" inputmode="numeric" autocomplete="one-time-code" aria-describedby="otp-help" required>
            <small id="otp-help">The 6 digits your authenticator app shows</small>
            <button type="submit">Verify</button></form>`,
        ),
      );
    }
    send(404, page('Not found', 'not found'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  site.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  site.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return site;
}

export type LoginSite = Awaited<ReturnType<typeof startLoginSite>>;

/** The code an authenticator app shows now for this secret. */
export const totpNow = (secret: string) => new TOTP({ secret: Secret.fromBase32(secret) }).generate();
