/** Where the daemon serves a session's gateways: the session core builds its URLs with them, the gateways listen on them. */
export const CDP_PATH = '/browser/cdp';
export const WEBDRIVER_PATH = '/browser/webdriver/session';
