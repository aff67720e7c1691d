// Restore drills and the end of a session in a real browser (Debian's chromium driven by
// playwright-core).
//
//   node drills_flow.mjs '{"console": "http://127.0.0.1:PORT", "shots": "DIR", "idTokenTtl": N}'
//
// bob may not create Clusters: his drill is refused by the API server. alice starts a drill of
// orders' completed backup and sees it verified; the console refuses to delete a Cluster that
// is not its drill (orders itself, another console's drill) even though her RBAC would allow
// it; she outlives her first ID token (the console renews it with the refresh token) and
// deletes her drill. Signing out ends her session at the provider too (RP-initiated logout),
// so signing in again asks for her login. Any failed check throws: exit code 1, the reason on
// stderr.
import { check, flash, launch, shot as shotIn, signIn as signInWith } from './flow_support.mjs';

const args = JSON.parse(process.argv[2]);
const shot = (page, name) => shotIn(page, args.shots, name);
const signIn = (browser, user, prefix) => signInWith(browser, args, user, prefix);

// Signs out through the provider's RP-initiated logout: its confirmation, then back to the
// console's sign-in page.
async function signOutAtProvider(page, prefix) {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForSelector('button[name=logout]');
  check(!page.url().startsWith(args.console), `sign-out leads to the provider: ${page.url()}`);
  await shot(page, `${prefix}-provider-sign-out`);
  await page.click('button[name=logout]');
  await page.waitForURL(`${args.console}/`);
  check(await page.getByRole('link', { name: 'Sign in' }).isVisible(), 'back at the console, signed out');
}

async function csrfOf(page) {
  return page.locator('input[name=csrf]').first().getAttribute('value');
}

// Posts the delete of `name` with the page's own CSRF token (a person crafting the request
// with the page open), then shows the drills page with its answer.
async function postDelete(page, name) {
  const csrf = await csrfOf(page);
  const answer = await page.request.post(`${args.console}/drills/${name}/delete`, { form: { csrf }, maxRedirects: 0 });
  check(answer.status() === 303, `delete of ${name} answered ${answer.status()}`);
  await page.goto(`${args.console}/drills`);
  return flash(page);
}

const browser = await launch();
try {
  // bob: sees the backups but may not create a Cluster.
  const bob = await signIn(browser, 'bob', 'drill-bob');
  await bob.page.getByRole('link', { name: 'Restore drills' }).click();
  const options = await bob.page.locator('#backup option').allInnerTexts();
  check(options.some((o) => o.startsWith('orders-nightly')), `orders' completed backup offered: ${options}`);
  check(!options.some((o) => o.startsWith('billing-running')), `a running backup is not offered: ${options}`);
  await bob.page.selectOption('#backup', 'orders-nightly');
  await bob.page.getByRole('button', { name: 'Start drill' }).click();
  let msg = await flash(bob.page);
  check(msg.startsWith('Refused') && msg.includes('forbidden') && msg.includes('oidc:bob'),
    `bob's drill refused by the API server: ${msg}`);
  await shot(bob.page, 'drill-bob-2-refused');
  await signOutAtProvider(bob.page, 'drill-bob-3');
  await bob.context.close();

  // alice: starts a drill and sees it verified.
  const alice = await signIn(browser, 'alice', 'drill-alice');
  const signedInAt = Date.now();
  await alice.page.getByRole('link', { name: 'Restore drills' }).click();
  const waiting = await alice.page.locator('[data-drill=orders-drill-lost]').innerText();
  check(waiting.includes('restoring') && waiting.includes('is missing'),
    `a drill whose backup is gone waits, saying why: ${waiting}`);
  await alice.page.selectOption('#backup', 'orders-nightly');
  await shot(alice.page, 'drill-alice-2-start');
  await alice.page.getByRole('button', { name: 'Start drill' }).click();
  msg = await flash(alice.page);
  const started = /Drill (orders-drill-[a-z0-9]{5}) started/.exec(msg);
  check(started, `alice's drill started: ${msg}`);
  const drill = started[1];
  const row = alice.page.locator(`[data-drill=${drill}]`);
  let text = '';
  for (let i = 0; i < 100; i += 1) {
    text = await row.innerText();
    if (text.includes('restore verified')) break;
    await alice.page.waitForTimeout(200);
    await alice.page.reload();
  }
  check(text.includes('restore verified') && text.includes('oidc:alice') && text.includes('1 of 1 ready'),
    `the drill verified, started by oidc:alice: ${text}`);
  await shot(alice.page, 'drill-alice-3-verified');

  // The console deletes only its own drills, whatever the user's RBAC allows.
  msg = await postDelete(alice.page, 'orders');
  check(msg.startsWith('Refused') && msg.includes('orders is not a restore drill of this console'),
    `orders itself is not deleted: ${msg}`);
  await shot(alice.page, 'drill-alice-4-not-a-drill');
  msg = await postDelete(alice.page, 'orders-drill-other');
  check(msg.startsWith('Refused') && msg.includes('not a restore drill of this console'),
    `another console's drill is not deleted: ${msg}`);
  // Nor does it restore a backup that is not completed, even when asked directly.
  const running = await alice.page.request.post(`${args.console}/drills/start`, {
    form: { csrf: await csrfOf(alice.page), backup: 'billing-running' }, maxRedirects: 0,
  });
  check(running.status() === 303, `start of a running backup answered ${running.status()}`);
  await alice.page.goto(`${args.console}/drills`);
  msg = await flash(alice.page);
  check(msg.startsWith('Refused') && msg.includes('billing-running is not completed'),
    `a running backup is not restored: ${msg}`);
  // A form without the session's token is refused before anything is read.
  const forged = await alice.page.request.post(`${args.console}/drills/${drill}/delete`, {
    form: { csrf: 'forged' }, maxRedirects: 0,
  });
  check(forged.status() === 403, `forged delete refused (${forged.status()})`);

  // Past the first ID token's life the session goes on: the console renewed the token, and
  // the API server accepts the new one.
  const past = signedInAt + (args.idTokenTtl + 2) * 1000 - Date.now();
  if (past > 0) await alice.page.waitForTimeout(past);
  await alice.page.reload();
  check(await alice.page.getByRole('button', { name: 'Sign out' }).isVisible(), 'still signed in after the first ID token expired');
  const body = await alice.page.locator('main').innerText();
  check(!body.includes('cannot be read as you') && body.includes(drill), `the drills read with the renewed token: ${body}`);

  await alice.page.locator(`[data-drill=${drill}]`).getByRole('button', { name: 'Delete' }).click();
  msg = await flash(alice.page);
  check(msg.includes(`Drill ${drill} deleted`), `alice deletes her drill: ${msg}`);
  await shot(alice.page, 'drill-alice-5-deleted');

  // Signing out ends the provider's session: signing in again asks who she is.
  await signOutAtProvider(alice.page, 'drill-alice-6');
  await alice.page.getByRole('link', { name: 'Sign in' }).click();
  await alice.page.waitForSelector('input[name=login]');
  check(!alice.page.url().startsWith(args.console), 'the provider asks for the login again');
  await alice.context.close();
  process.stdout.write(`${JSON.stringify({ drill })}\n`);
} finally {
  await browser.close();
}
