/** How the tests start Chromium, apart from browser.ts so that the run's service broker can start it without the server's modules. */

/** The Chromium the tests drive: `CHROMIUM_PATH` if set, else Debian's `/usr/bin/chromium`. */
export const CHROMIUM_EXECUTABLE = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Quiet, headless, no background traffic; no sandbox because test containers run as root. */
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
