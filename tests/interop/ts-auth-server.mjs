// An MCP server written with the official TypeScript SDK that requires OAuth bearer tokens
// (its requireBearerAuth middleware and metadata router), checking JWTs of one issuer with
// jose: `node ts-auth-server.mjs PORT ISSUER`. Serves Streamable HTTP at /mcp, tool `shout`.
import express from "express";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import { mcpAuthMetadataRouter, getOAuthProtectedResourceMetadataUrl } from "@modelcontextprotocol/sdk/server/auth/router.js";
import { InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import { z } from "zod";

const [port, issuer] = process.argv.slice(2);
const resource = new URL(`http://127.0.0.1:${port}/mcp`);
const oauthMetadata = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
const keys = createRemoteJWKSet(new URL(oauthMetadata.jwks_uri));

const verifier = {
  async verifyAccessToken(token) {
    try {
      const { payload } = await jwtVerify(token, keys, { issuer, audience: resource.href });
      return { token, clientId: payload.client_id, scopes: (payload.scope || "").split(" ").filter(Boolean), expiresAt: payload.exp, resource };
    } catch (e) {
      throw new InvalidTokenError(`token refused: ${e.message}`);
    }
  },
};

const app = express();
app.use(express.json());
app.use(mcpAuthMetadataRouter({ oauthMetadata, resourceServerUrl: resource, scopesSupported: ["mcp:basic"], resourceName: "ts-auth-server" }));
const auth = requireBearerAuth({ verifier, requiredScopes: ["mcp:basic"], resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(resource) });
app.post("/mcp", auth, async (req, res) => {
  const server = new McpServer({ name: "ts-auth-server", version: "1.0.0" });
  server.registerTool("shout", { description: "Upper-cases text.", inputSchema: { text: z.string() } }, async ({ text }, extra) => ({
    content: [{ type: "text", text: `${text.toUpperCase()} (for ${extra.authInfo?.clientId})` }],
  }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => { transport.close(); server.close(); });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
app.listen(Number(port), "127.0.0.1", () => console.error(`listening on ${port}`));
