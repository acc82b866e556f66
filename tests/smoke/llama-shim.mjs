// A small OpenAI-compatible chat server over node-llama-cpp, for the plumbing smoke test of
// `mcp chat` with a real model on the CPU: `node llama-shim.mjs MODEL.gguf PORT`.
// POST /v1/chat/completions (streamed): when tools are offered and the last message is the
// person's, the model is made to call one (its name, then its arguments, each generated under a
// JSON-schema grammar); otherwise it answers in a few words. It proves wiring, not judgement.
import http from "node:http";
import { getLlama, LlamaChatSession } from "node-llama-cpp";

const [modelPath, port] = process.argv.slice(2);
const llama = await getLlama({ gpu: false, build: "never" });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({ contextSize: 2048 });

function transcript(messages) {
  return messages
    .filter((m) => m.role !== "system")
    .map((m) => `${m.role}: ${m.content ?? (m.tool_calls ? `(called ${m.tool_calls.map((c) => c.function.name).join(", ")})` : "")}`)
    .join("\n");
}

async function generate(system, prompt, options) {
  const sequence = context.getSequence();
  try {
    const session = new LlamaChatSession({ contextSequence: sequence, systemPrompt: system });
    return await session.prompt(prompt, { temperature: 0, ...options });
  } finally {
    sequence.dispose();
  }
}

async function reply(body) {
  const messages = body.messages || [];
  const system = messages.find((m) => m.role === "system")?.content?.slice(0, 400) || "You are a helpful assistant.";
  const last = messages[messages.length - 1];
  const tools = (body.tools || []).map((t) => t.function);
  if (tools.length > 0 && last?.role === "user") {
    const nameGrammar = await llama.createGrammarForJsonSchema({ type: "object", properties: { tool: { type: "string", enum: tools.map((t) => t.name) } }, required: ["tool"] });
    const picked = nameGrammar.parse(await generate(system, `${transcript(messages)}\nWhich tool should be called? Answer with JSON.`, { grammar: nameGrammar, maxTokens: 24 }));
    const tool = tools.find((t) => t.name === picked.tool) || tools[0];
    const argsGrammar = await llama.createGrammarForJsonSchema(tool.parameters || { type: "object" });
    const args = argsGrammar.parse(await generate(system, `${transcript(messages)}\nArguments for ${tool.name} (${tool.description}), as JSON:`, { grammar: argsGrammar, maxTokens: 40 }));
    return { toolCall: { name: tool.name, arguments: JSON.stringify(args) } };
  }
  const text = await generate(system, `${transcript(messages)}\nassistant:`, { maxTokens: Math.min(body.max_tokens || 48, 48) });
  return { text: text || "(no words)" };
}

function chunk(delta, finish) {
  return `data: ${JSON.stringify({ id: "chatcmpl-shim", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

http.createServer(async (req, res) => {
  const parts = [];
  for await (const c of req) parts.push(c);
  try {
    const body = JSON.parse(Buffer.concat(parts).toString() || "{}");
    // The head goes out at once: a CPU generation takes longer than a client waits for it.
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(chunk({ role: "assistant", content: "" }, null));
    const answer = await reply(body);
    if (answer.toolCall) {
      res.write(chunk({ tool_calls: [{ index: 0, id: "call_0", type: "function", function: { name: answer.toolCall.name, arguments: answer.toolCall.arguments } }] }, null));
      res.write(chunk({}, "tool_calls"));
    } else {
      res.write(chunk({ content: answer.text }, null));
      res.write(chunk({}, "stop"));
    }
    res.end("data: [DONE]\n\n");
  } catch (e) {
    res.end(`data: ${JSON.stringify({ error: { message: String((e && e.message) || e) } })}\n\n`);
  }
}).listen(Number(port), "127.0.0.1", () => console.error(`shim listening on ${port}`));
