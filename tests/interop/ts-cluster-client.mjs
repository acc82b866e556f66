// The official TypeScript SDK's client on a cluster of our servers behind nginx (round-robin,
// no stickiness): one legacy session of many calls, a subscription whose update is announced
// through another node, an elicitation answered wherever the answer lands, progress.
// `node ts-cluster-client.mjs URL`; exits non-zero on any mismatch.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
const client = new Client({ name: "ts-cluster-client", version: "1.0.0" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { yes: true } }));
let updated;
const gotUpdate = new Promise((resolve) => { updated = resolve; });
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updated(n.params.uri));
await client.connect(transport);
if (!transport.sessionId) throw new Error("no legacy session");
for (let i = 0; i < 30; i++) {
  const r = await client.callTool({ name: "echo", arguments: { text: `call ${i}` } });
  if (r.content[0].text !== `call ${i}`) throw new Error(`echo ${i} answered ${JSON.stringify(r)}`);
}
await client.subscribeResource({ uri: "example://about" });
// The SDK opens its GET stream in the background (on whichever node nginx picks): announce
// until the update arrives there, for at most 10 s.
let uri;
gotUpdate.then((u) => { uri = u; });
for (let i = 0; i < 40 && uri === undefined; i++) {
  await client.callTool({ name: "announce", arguments: { uri: "example://about" } });
  await Promise.race([gotUpdate, new Promise((r) => setTimeout(r, 250))]);
}
if (uri === undefined) throw new Error("no resources/updated within 10 s");
if (uri !== "example://about") throw new Error(`updated ${uri}`);
const asked = await client.callTool({ name: "confirm", arguments: { question: "Ship it?" } });
if (asked.content[0].text !== "the user said yes") throw new Error(`confirm answered ${JSON.stringify(asked)}`);
let steps = 0;
const waited = await client.callTool({ name: "wait", arguments: { ms: 500 } }, undefined, { onprogress: () => { steps++; } });
if (waited.content[0].text !== "waited 500 ms" || steps < 3) throw new Error(`wait answered ${JSON.stringify(waited)} after ${steps} progress`);
await transport.terminateSession();
console.log(`ts client on a cluster behind nginx: 30 calls, subscription, elicitation, ${steps} progress: OK`);
await client.close();
