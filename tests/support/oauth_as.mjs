// A real OAuth 2.1 authorization server on loopback for greenroom's OAuth tests:
// oauth2-mock-server (npm), with what MCP's flows need and the package leaves to its user:
// the RFC 8707 resource as the token's audience, dynamic client registration (RFC 7591),
// and a few test controls. Usage: node oauth_as.mjs PORT (OAUTH2_MOCK_SERVER names the package).
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const pkg = process.env.OAUTH2_MOCK_SERVER;
const { OAuth2Server } = await import(pathToFileURL(join(pkg, "dist", "index.mjs")).href);

const port = Number(process.argv[2]);
const server = new OAuth2Server();
await server.issuer.keys.generate("RS256");
const state = { ttl: 3600, failRefresh: false, grants: [] };
const service = server.service;

service.on("beforeTokenSigning", (token, req) => {
  const body = req.body ?? {};
  const p = token.payload;
  const resource = body.resource ?? body.aud;
  if (resource !== undefined) p.aud = resource;
  if (body.sub !== undefined) p.sub = body.sub;
  if (p.sub === undefined && body.client_id !== undefined) p.sub = body.client_id;
  if (body.client_id !== undefined) p.client_id = body.client_id;
  const ttl = body.ttl !== undefined ? Number(body.ttl) : state.ttl;
  p.exp = p.iat + ttl;
  req.grantedTtl = ttl;
});

service.on("beforeResponse", (response, req) => {
  const body = req.body ?? {};
  state.grants.push({ grant_type: body.grant_type, resource: body.resource ?? null, scope: body.scope ?? null });
  if (body.grant_type === "refresh_token" && state.failRefresh) {
    response.statusCode = 400;
    response.body = { error: "invalid_grant", error_description: "refresh token revoked" };
    return;
  }
  if (req.grantedTtl !== undefined) response.body.expires_in = req.grantedTtl;
  if (body.scope === undefined && response.body.scope === "dummy") delete response.body.scope;
});

service.on("beforeWellKnownOpenIdConfiguration", (response) => {
  response.body.registration_endpoint = `${server.issuer.url}/register`;
  response.body.token_endpoint_auth_methods_supported = ["none", "client_secret_post", "client_secret_basic"];
  response.body.grant_types_supported.push("refresh_token");
});

service.addRoute("POST", "/register", (req, res) => {
  const meta = req.body ?? {};
  const out = { ...meta, client_id: randomUUID(), client_id_issued_at: Math.floor(Date.now() / 1000) };
  res.writeHead(201, { "Content-Type": "application/json" });
  res.end(JSON.stringify(out));
});

service.addRoute("POST", "/test/control", (req, res) => {
  const body = req.body ?? {};
  if (body.ttl !== undefined) state.ttl = Number(body.ttl);
  if (body.failRefresh !== undefined) state.failRefresh = Boolean(body.failRefresh);
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ ttl: state.ttl, failRefresh: state.failRefresh }));
});

service.addRoute("GET", "/test/grants", (_req, res) => {
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(JSON.stringify(state.grants));
});

await server.start(port, "127.0.0.1");
server.issuer.url = `http://127.0.0.1:${port}`;
console.log(`ready ${server.issuer.url}`);
