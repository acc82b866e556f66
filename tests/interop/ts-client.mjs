// The official TypeScript SDK's client driving one of our servers:
// `node ts-client.mjs stdio COMMAND [ARGS...]` or `node ts-client.mjs http URL`.
// Lists tools, calls `echo`, reads a resource; exits non-zero on any mismatch.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...args] = process.argv.slice(2);
const transport = mode === "stdio"
  ? new StdioClientTransport({ command: target, args })
  : new StreamableHTTPClientTransport(new URL(target));
const client = new Client({ name: "ts-interop-client", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
if (!names.includes("echo") || !names.includes("sum")) throw new Error(`unexpected tools ${names}`);
const echoed = await client.callTool({ name: "echo", arguments: { text: "from TypeScript" } });
if (echoed.content[0].text !== "from TypeScript") throw new Error(`echo answered ${JSON.stringify(echoed)}`);
const sum = await client.callTool({ name: "sum", arguments: { a: 40, b: 2 } });
if (sum.content[0].text !== "40 + 2 = 42") throw new Error(`sum answered ${JSON.stringify(sum)}`);
const bad = await client.callTool({ name: "sum", arguments: { a: "x" } });
if (!bad.isError) throw new Error("schema violation was not an isError result");
const read = await client.readResource({ uri: "example://greeting/TypeScript" });
if (read.contents[0].text !== "Hello, TypeScript!") throw new Error(`read answered ${JSON.stringify(read)}`);
console.log(`ts client over ${mode}: ${client.getServerVersion().name}, protocol ${transport.protocolVersion ?? "negotiated"}: OK`);
await client.close();
