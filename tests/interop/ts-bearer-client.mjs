// The official TypeScript SDK's client holding a bearer token, calling a protected paypedia:
// `node ts-bearer-client.mjs URL TOKEN`. Over https, trust the test CA with NODE_EXTRA_CA_CERTS.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "ts-bearer-client", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
if (!tools.some((t) => t.name === "iban_check")) throw new Error(`unexpected tools ${tools.map((t) => t.name)}`);
const result = await client.callTool({ name: "iban_check", arguments: { input: "FR76 3000 6000 0112 3456 7890 189" } });
const text = result.content.map((c) => c.text).join("\n");
if (!text.includes("VALID")) throw new Error(`iban_check answered ${text}`);
console.log(`ts client with a bearer token: ${client.getServerVersion().name}: OK`);
await client.close();
