// The console in a real browser: Debian's chromium driven by playwright-core.
//
//   node console_flow.mjs '{"console": "http://127.0.0.1:PORT", "shots": "DIR"}'
//
// bob signs in, sees the Clusters (one "not verifiable"), asks for access, is refused when
// approving his own request, signs out; alice signs in, approves it, revokes it, signs out.
// Each page is kept as a screenshot in DIR. Any failed check throws: exit code 1 and the
// reason on stderr.
import { check, flash, launch, shot as shotIn, signIn as signInWith } from './flow_support.mjs';

const args = JSON.parse(process.argv[2]);
const shot = (page, name) => shotIn(page, args.shots, name);
const signIn = (browser, user, prefix) => signInWith(browser, args, user, prefix);

const browser = await launch();
try {
  // bob: the clusters, a request, his own approval refused.
  const bob = await signIn(browser, 'bob', 'bob');
  const body = await bob.page.content();
  check(body.includes('Signed in as'), 'bob is signed in');
  check(await bob.page.locator('[data-cluster=orders]').isVisible(), 'cluster orders shown');
  const billing = await bob.page.locator('[data-cluster=billing]').innerText();
  check(billing.includes('not verifiable') && billing.includes('CA missing'),
    `billing is not verifiable, its CA missing: ${billing}`);
  // orders' CA is mirrored, but the console really dials orders-rw.team.svc:5432, which
  // nothing serves here (console/tests/tls.rs verifies against a real PostgreSQL).
  const orders = await bob.page.locator('[data-cluster=orders]').innerText();
  check(orders.includes('not verifiable') && orders.includes('unreachable') && orders.includes('orders-1'),
    `orders: ${orders}`);
  await shot(bob.page, 'bob-2-clusters');

  await bob.page.getByRole('link', { name: 'Access requests' }).click();
  await bob.page.fill('#name', 'bob-debug');
  await bob.page.fill('#role', 'pg-reader');
  await bob.page.fill('#duration', '1h');
  await bob.page.fill('#reason', 'investigate slow orders');
  await bob.page.getByRole('button', { name: 'Request' }).click();
  let msg = await flash(bob.page);
  check(msg.includes('bob-debug created'), `request created: ${msg}`);
  await shot(bob.page, 'bob-3-requested');
  await bob.page.locator('[data-request=bob-debug]').getByRole('button', { name: 'Approve' }).click();
  msg = await flash(bob.page);
  check(msg.startsWith('Refused') && msg.includes('another person must decide it'), `own approval refused: ${msg}`);
  await shot(bob.page, 'bob-4-own-approval-refused');

  // A form without the session's CSRF token is refused.
  const forged = await bob.page.request.post(`${args.console}/access/bob-debug/approve`, {
    form: { csrf: 'forged' }, maxRedirects: 0,
  });
  check(forged.status() === 403, `forged form refused (${forged.status()})`);

  await bob.page.getByRole('button', { name: 'Sign out' }).click();
  check(await bob.page.getByRole('link', { name: 'Sign in' }).isVisible(), 'bob signed out');
  await shot(bob.page, 'bob-5-signed-out');
  await bob.context.close();

  // carol: may read but holds no grant to hand out: her approval is refused by the API server.
  const carol = await signIn(browser, 'carol', 'carol');
  await carol.page.getByRole('link', { name: 'Access requests' }).click();
  await carol.page.locator('[data-request=bob-debug]').getByRole('button', { name: 'Approve' }).click();
  msg = await flash(carol.page);
  check(msg.startsWith('Refused') && msg.includes('forbidden'), `carol's approval refused by RBAC: ${msg}`);
  await shot(carol.page, 'carol-1-approval-forbidden');
  await carol.context.close();

  // alice: approves, then revokes.
  const alice = await signIn(browser, 'alice', 'alice');
  await alice.page.getByRole('link', { name: 'Access requests' }).click();
  await shot(alice.page, 'alice-1-pending');
  await alice.page.locator('[data-request=bob-debug]').getByRole('button', { name: 'Approve' }).click();
  msg = await flash(alice.page);
  check(msg.includes('approved by oidc:alice'), `alice approves: ${msg}`);
  await shot(alice.page, 'alice-2-approved');
  await alice.page.locator('[data-request=bob-debug]').getByRole('button', { name: 'Revoke' }).click();
  msg = await flash(alice.page);
  check(msg.includes('revoked by oidc:alice'), `alice revokes: ${msg}`);
  await shot(alice.page, 'alice-3-revoked');
  await alice.page.getByRole('button', { name: 'Sign out' }).click();
  check(await alice.page.getByRole('link', { name: 'Sign in' }).isVisible(), 'alice signed out');
  await alice.context.close();
  process.stdout.write('console flow: all checks passed\n');
} finally {
  await browser.close();
}
