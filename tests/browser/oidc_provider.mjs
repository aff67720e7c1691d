// A real OpenID provider for the tests (the certified `oidc-provider` package), served over
// HTTPS with the certificate the test made.
//
//   node oidc_provider.mjs CERT_PEM KEY_PEM CONFIG_JSON
//
// CONFIG_JSON: {"clients": [oidc-provider client metadata...],
//               "users": {"alice": {"groups": ["dba"], "email": "alice@example.org"}},
//               "idTokenTtl": 3600, "rpInitiatedLogout": false}
// A client whose grant_types include refresh_token gets a refresh token with each code (as
// most providers give confidential clients one without asking for offline_access).
// `idTokenTtl` (seconds) shortens the ID tokens' life; `rpInitiatedLogout: true` publishes
// an end_session_endpoint (off by default: the console then signs out locally only).
// Sign-in uses the provider's development interactions: any login name is accepted and becomes
// the subject; the user table gives its email and groups. Once listening it prints one JSON
// line, {"issuer": "https://127.0.0.1:PORT"}, on stdout.
//
// For the API server tests, GET /_test/id-token?client_id=C&sub=S[&expires_in=N][&issuer=other]
// issues an ID token as the token endpoint would (signed with the provider's keys, audience
// the client): `expires_in` may be negative (an expired token); `issuer=other` has a second
// provider (issuer `<issuer>/other`, its own keys) sign it.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import Provider from 'oidc-provider';

const [certFile, keyFile, configJson] = process.argv.slice(2);
const config = JSON.parse(configJson);
const users = config.users ?? {};

function claimsOf(sub) {
  const user = users[sub] ?? {};
  return {
    sub,
    name: user.name ?? sub,
    email: user.email ?? `${sub}@example.org`,
    email_verified: true,
    groups: user.groups ?? [],
  };
}

function provider(issuer) {
  const p = new Provider(issuer, {
    clients: config.clients,
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => claimsOf(id) }),
    claims: {
      openid: ['sub'],
      profile: ['name'],
      email: ['email', 'email_verified'],
      groups: ['groups'],
    },
    scopes: ['openid', 'profile', 'email', 'groups'],
    // Every claim of the granted scopes in the ID token, as most providers issue for
    // Kubernetes (the API server reads only the ID token).
    conformIdTokenClaims: false,
    features: {
      devInteractions: { enabled: true },
      rpInitiatedLogout: { enabled: config.rpInitiatedLogout === true },
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    cookies: { keys: ['pgtoolbox-test-cookie-key'] },
    ttl: {
      IdToken: config.idTokenTtl ?? 3600,
      AccessToken: 3600,
      RefreshToken: 3600,
      Session: 3600,
      Grant: 3600,
      Interaction: 600,
    },
  });
  return p;
}

async function mint(p, url, res) {
  const client = await p.Client.find(url.searchParams.get('client_id') ?? '');
  if (!client) {
    res.writeHead(404).end('no such client');
    return;
  }
  const sub = url.searchParams.get('sub') ?? 'alice';
  const token = new p.IdToken(claimsOf(sub), { client });
  token.scope = 'openid profile email groups';
  const expiresIn = Number(url.searchParams.get('expires_in') ?? '3600');
  const now = Math.floor(Date.now() / 1000);
  const idToken = await token.issue({ use: 'idtoken', expiresAt: now + expiresIn });
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id_token: idToken }));
}

const tls = { cert: readFileSync(certFile), key: readFileSync(keyFile) };
let main;
let other;
const server = createServer(tls, (req, res) => {
  const url = new URL(req.url, main.issuer);
  if (url.pathname === '/_test/id-token') {
    const p = url.searchParams.get('issuer') === 'other' ? other : main;
    mint(p, url, res).catch((e) => res.writeHead(500).end(String(e)));
    return;
  }
  main.callback()(req, res);
});
server.listen(Number(process.env.OIDC_PORT ?? 0), '127.0.0.1', () => {
  const issuer = `https://127.0.0.1:${server.address().port}`;
  main = provider(issuer);
  other = provider(`${issuer}/other`);
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
