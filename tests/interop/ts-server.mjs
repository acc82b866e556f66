// An MCP server written with the official TypeScript SDK, for interoperability tests:
// `node ts-server.mjs` serves stdio; `node ts-server.mjs --http PORT` serves Streamable HTTP at /mcp,
// with sessions, or without (`--stateless`: a new server and transport for every request, as the
// SDK's stateless examples do).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { z } from "zod";

function build() {
  const server = new McpServer({ name: "ts-interop-server", version: "1.0.0" });
  server.registerTool(
    "add",
    { description: "Adds two numbers.", inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => ({ content: [{ type: "text", text: `${a + b}` }] }),
  );
  server.registerTool(
    "shout",
    { description: "Upper-cases text.", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text: text.toUpperCase() }] }),
  );
  server.registerResource("greeting", "ts://greeting", { mimeType: "text/plain" }, async (uri) => ({
    contents: [{ uri: uri.href, text: "hello from TypeScript" }],
  }));
  return server;
}

const http = process.argv.indexOf("--http");
if (http < 0) {
  await build().connect(new StdioServerTransport());
} else {
  const port = Number(process.argv[http + 1]);
  const transports = new Map();
  createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    if (process.argv.includes("--stateless")) {
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on("close", () => transport.close());
      await build().connect(transport);
      return transport.handleRequest(req, res, body);
    }
    const sid = req.headers["mcp-session-id"];
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      await build().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  }).listen(port, "127.0.0.1", () => console.error(`listening on ${port}`));
}
