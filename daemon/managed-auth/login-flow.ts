import { randomUUID } from 'node:crypto';
import type { CanonicalField, DiscoveredField, ManagedAuth, SubmitAuthConnectionBody } from '../../src/api/auth-connections.js';
import { BadRequestError, ConflictError, NotFoundError } from '../../src/errors.js';
import type { PageSend } from '../browser/cdp-page.js';
import { canonicalFields, isOneTimeCode, refOf, valuesFromCredential, valuesFromSubmission } from './form-fields.js';
import { fillAndSubmit, scanPage, type PageScan } from './login-page.js';

export type FlowStatus = NonNullable<ManagedAuth['flow_status']>;
export type FlowStep = NonNullable<ManagedAuth['flow_step']>;

/** What a connection shows of its latest flow (kept in its record, so it outlives the daemon). */
export interface FlowView {
  id: string;
  type: 'LOGIN' | 'REAUTH';
  status: FlowStatus;
  step: FlowStep;
  started_at: string;
  updated_at: string;
  expires_at: string;
  browser_session_id: string | null;
  hosted_url: string | null;
  live_view_url: string | null;
  discovered_fields: DiscoveredField[] | null;
  fields: CanonicalField[] | null;
  website_error: string | null;
  error_code: string | null;
  error_message: string | null;
  /** Kernel's interaction_id: names one pause for input, new at each; a submit that names another is refused. */
  interaction_id: string | null;
  post_login_url?: string;
}

export interface FlowDeps {
  /** Runs on the active page of the flow's browser; a NotFoundError once the session has ended. */
  page: <T>(run: (send: PageSend) => Promise<T>) => Promise<T>;
  /** Whether a page of this host belongs to the login (the domain, its subdomains, allowed_domains). */
  allowedHost: (host: string) => boolean;
  /** The stored credential's values, if the connection has one. */
  stored: () => Promise<{ values: Record<string, string>; totpCode?: string } | undefined>;
  /** The view changed: saved and sent to followers. */
  changed: (view: FlowView) => void;
  /**
   * The login worked: what it typed (by credential ref, one-time codes aside) is saved and the
   * profile with it, before anyone is told, so a client told SUCCESS finds both in place.
   */
  succeeded: (postLoginUrl: string, typed: Record<string, string>) => Promise<void>;
}

/** Between looks at the page while nothing happens. */
const POLL_MS = 400;
/** How long a submit may take to show its outcome (another page, other fields, an error) before the form is asked for again. */
const SUBMIT_SETTLE_MS = 8000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fieldsKey = (fields: DiscoveredField[]) => fields.map((f) => `${f.name}:${f.type}`).join(',');
const hostOf = (url: string) => {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
};

/**
 * One login flow in a browser session of the connection's organization. It looks at the page
 * again and again: a login form whose values the stored credential has is filled and submitted
 * (once per form, so a wrong stored password is not retried); otherwise the flow waits for a
 * submit, or for a person in the live view. It succeeds when the page, on the connection's
 * domain, shows no login form twice in a row.
 */
export class LoginFlow {
  readonly view: FlowView;
  private pending?: string[];
  private wake?: () => void;
  private readonly autoTried = new Set<string>();
  private readonly typed: Record<string, string> = {};
  private lastSubmitKey?: string;
  /** The form of the pause for input under way. */
  private awaitingKey?: string;
  private succeeding = false;

  constructor(
    private readonly deps: FlowDeps,
    init: Pick<FlowView, 'id' | 'type' | 'expires_at' | 'browser_session_id' | 'hosted_url' | 'live_view_url'>,
  ) {
    const now = new Date().toISOString();
    this.view = {
      ...init,
      status: 'IN_PROGRESS',
      step: 'DISCOVERING',
      started_at: now,
      updated_at: now,
      discovered_fields: null,
      fields: null,
      website_error: null,
      error_code: null,
      error_message: null,
      interaction_id: null,
    };
  }

  get done(): boolean {
    return this.view.status !== 'IN_PROGRESS';
  }

  /** Runs to a terminal state (or until end() is called); never throws. */
  async run(): Promise<FlowView> {
    let emptyLooks = 0;
    try {
      while (!this.done) {
        if (Date.now() > Date.parse(this.view.expires_at)) {
          this.end('EXPIRED', 'flow_expired', 'the login was not completed before the flow expired');
          break;
        }
        const scan = await this.look();
        if (!scan?.ready) {
          await sleep(POLL_MS / 2);
          continue;
        }
        if (scan.fields.length === 0) {
          emptyLooks = this.deps.allowedHost(hostOf(scan.url)) ? emptyLooks + 1 : 0;
          if (emptyLooks >= 2) {
            // From here the flow succeeds: the end of its browser (which saves the profile) is part of that.
            this.succeeding = true;
            await this.deps.succeeded(scan.url, this.typed);
            this.update({
              status: 'SUCCESS',
              step: 'COMPLETED',
              discovered_fields: null,
              fields: null,
              website_error: null,
              post_login_url: scan.url,
            });
            break;
          }
          await sleep(POLL_MS);
          continue;
        }
        emptyLooks = 0;
        const key = fieldsKey(scan.fields);
        const values = this.pending ?? (await this.autoValues(scan.fields, key));
        this.pending = undefined;
        if (values) {
          await this.submitForm(scan, values);
          continue;
        }
        // The same form back after its submit: its values were turned down.
        const rejected = key === this.lastSubmitKey;
        const same = this.view.step === 'AWAITING_INPUT' && this.awaitingKey === key;
        this.awaitingKey = key;
        this.update({
          step: 'AWAITING_INPUT',
          discovered_fields: scan.fields,
          fields: canonicalFields(scan.fields, rejected),
          // The site's message about the last submit of this same form.
          website_error: rejected ? scan.error : null,
          // One pause, one id: looking at the same form again keeps it.
          interaction_id: same && this.view.interaction_id ? this.view.interaction_id : randomUUID(),
        });
        await new Promise<void>((r) => {
          this.wake = r;
          setTimeout(r, POLL_MS);
        });
      }
    } catch (err) {
      if (!this.done) {
        if (err instanceof NotFoundError) this.end('FAILED', 'browser_session_ended', "the login's browser session ended");
        else this.end('FAILED', 'internal_error', (err as Error).message);
      }
    }
    return this.view;
  }

  /**
   * A submit of Kernel's API: values for the form awaiting input, typed at the next look. Choices
   * (MFA methods, SSO buttons, account pickers) are never offered here, so selecting one is a 400.
   */
  submit(body: SubmitAuthConnectionBody): void {
    if (this.done || this.view.step !== 'AWAITING_INPUT' || !this.view.discovered_fields) {
      throw new ConflictError(`the login flow is ${this.done ? this.view.status : this.view.step}, not AWAITING_INPUT`);
    }
    if (body.interaction_id !== undefined && body.interaction_id !== this.view.interaction_id) {
      throw new ConflictError(
        `interaction_id ${body.interaction_id} is not the flow's current one (${this.view.interaction_id}): read the connection again and submit for what it asks now`,
      );
    }
    const choice = body.selected_choice_id ?? body.mfa_option_id ?? body.sign_in_option_id ?? body.sso_provider ?? body.sso_button_selector;
    if (choice !== undefined) throw new BadRequestError('this login form offers no choices (MFA methods, SSO buttons, sign-in options) to select');
    const given = { ...body.fields, ...body.field_values };
    if (Object.keys(given).length === 0) throw BadRequestError.field('fields', 'must give the values of the login form (fields or field_values)');
    this.pending = valuesFromSubmission(this.view.discovered_fields, given);
    this.update({ step: 'SUBMITTING', interaction_id: null });
    this.wake?.();
  }

  /** Ends the flow from outside (canceled, superseded, the connection deleted). */
  end(status: Exclude<FlowStatus, 'IN_PROGRESS' | 'SUCCESS'>, code: string, message: string): void {
    if (this.done || this.succeeding) return;
    this.update({ status, step: 'COMPLETED', error_code: code, error_message: message });
    this.wake?.();
  }

  private async look(): Promise<PageScan | undefined> {
    try {
      return await this.deps.page(scanPage);
    } catch (err) {
      // A page between two documents has no context to look in for a moment.
      if (err instanceof NotFoundError) throw err;
      return undefined;
    }
  }

  private async autoValues(fields: DiscoveredField[], key: string): Promise<string[] | undefined> {
    if (this.autoTried.has(key)) return undefined;
    const stored = await this.deps.stored();
    const values = stored && valuesFromCredential(fields, stored);
    if (values) this.autoTried.add(key);
    return values;
  }

  private async submitForm(scan: PageScan, values: string[]): Promise<void> {
    this.update({ step: 'SUBMITTING', website_error: null, interaction_id: null });
    const key = fieldsKey(scan.fields);
    this.lastSubmitKey = key;
    scan.fields.forEach((f, i) => {
      if (!isOneTimeCode(f) && values[i]) this.typed[refOf(f)] = values[i]!;
    });
    await this.deps.page((send) =>
      fillAndSubmit(
        send,
        scan.fields.map((f, i) => ({ selector: f.selector, value: values[i] ?? '' })),
      ),
    );
    // The outcome: another page, another form, or the site's error on this one.
    const until = Date.now() + SUBMIT_SETTLE_MS;
    await sleep(POLL_MS / 2);
    while (Date.now() < until && !this.done) {
      const now = await this.look();
      if (now?.ready && (now.url !== scan.url || fieldsKey(now.fields) !== key || now.error)) return;
      await sleep(POLL_MS / 2);
    }
  }

  /** A change of the view is saved and sent; the same state seen again at the next look is not (it would write the state file every 400 ms). */
  private update(change: Partial<FlowView>): void {
    if (this.done) return;
    const view = this.view as unknown as Record<string, unknown>;
    if (Object.entries(change).every(([k, v]) => JSON.stringify(view[k]) === JSON.stringify(v))) return;
    Object.assign(this.view, change, { updated_at: new Date().toISOString() });
    this.deps.changed(this.view);
  }
}
