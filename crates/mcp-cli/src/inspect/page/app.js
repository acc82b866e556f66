// mcp inspect: the page. It talks only to the inspector that served it (same origin, the token
// in a header); the inspector holds the connection to the server.
"use strict";

const TOKEN = document.querySelector('meta[name="inspector-token"]').content;
const { el } = Forms;
const $ = (id) => document.getElementById(id);
const state = { server: null, tools: [], resources: [], templates: [], seq: null, traffic: [], calls: 0, selected: null };
const APPS_VERSION = "2026-01-26";

// ---- the API --------------------------------------------------------------------------------

async function api(path, body) {
  const init = { headers: { "x-inspector-token": TOKEN } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

// One request to the server; `call` names it for progress and cancellation.
function request(method, params, call) {
  return api("/api/request", { method, params: params || {}, call: call || "" });
}

// Every page of a list method.
async function listAll(method, field) {
  const items = [];
  let cursor;
  for (let page = 0; page < 100; page++) {
    const answer = await request(method, cursor ? { cursor } : {});
    if (answer.error) throw new Error(answer.error.message);
    items.push(...(answer.result[field] || []));
    cursor = answer.result.nextCursor;
    if (!cursor) break;
  }
  return items;
}

// ---- tabs and status ------------------------------------------------------------------------

for (const button of document.querySelectorAll("#tabs button")) {
  button.addEventListener("click", () => showTab(button.dataset.tab));
}

function showTab(name) {
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === name);
  for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t.id === `tab-${name}`);
  const load = { tools: loadTools, resources: loadResources, prompts: loadPrompts, saved: showSaved, roots: showRoots, auth: showAuth }[name];
  if (load) load().catch(showError);
}

function setStatus(text, good) {
  const status = $("status");
  status.textContent = text;
  status.className = `status ${good === true ? "ok" : good === false ? "bad" : ""}`;
}

function showError(e) {
  setStatus(String(e.message || e), false);
}

function pre(value) {
  // Focusable, so a keyboard can scroll it when it overflows.
  return el("pre", { text: typeof value === "string" ? value : JSON.stringify(value, null, 2), tabindex: "0" });
}

// ---- the server -----------------------------------------------------------------------------

async function loadServer() {
  const server = await api("/api/server");
  const box = $("server-info");
  if (server.error) {
    box.replaceChildren(el("p", { class: "bad-text", text: server.error }));
    return;
  }
  state.server = server;
  const info = server.serverInfo || {};
  $("server-name").textContent = `${info.name || "?"} ${info.version || ""}`;
  const rows = [
    ["Server", server.target],
    ["Transport", server.transport],
    ["Era", server.era],
    ["Protocol version", server.protocolVersion],
    ["Versions it speaks", (server.supportedVersions || []).join(", ")],
    ["Implementation", `${info.name || "?"} ${info.version || ""}${info.title ? ` (${info.title})` : ""}`],
  ];
  const table = el("table", { id: "server-table" });
  for (const [k, v] of rows) table.append(el("tr", {}, el("th", { text: k }), el("td", { text: v || "" })));
  box.replaceChildren(table);
  if (server.instructions) box.append(el("h3", { text: "Instructions" }), pre(server.instructions));
  box.append(el("h3", { text: "Capabilities" }), pre(server.capabilities || {}));
  if (server.discover) box.append(el("h3", { text: "server/discover" }), pre(server.discover));
  if (server.stderr) box.append(el("h3", { text: "The server's stderr" }), pre(server.stderr));
  const level = $("log-level");
  level.disabled = !(server.capabilities && server.capabilities.logging);
}

$("reconnect").addEventListener("click", async () => {
  setStatus("reconnecting…");
  const answer = await api("/api/reconnect", {});
  if (answer.error) showError(new Error(answer.error));
  await loadServer().catch(showError);
});

// ---- tools ----------------------------------------------------------------------------------

$("tools-refresh").addEventListener("click", () => loadTools().catch(showError));

async function loadTools() {
  const caps = (state.server && state.server.capabilities) || {};
  const list = $("tools-list");
  if (!caps.tools) {
    state.tools = [];
    list.replaceChildren(el("li", { text: "the server offers no tools" }));
    return;
  }
  state.tools = await listAll("tools/list", "tools");
  list.replaceChildren();
  for (const tool of state.tools) {
    const item = el("li", { "data-tool": tool.name }, el("b", { text: tool.title || tool.name }), el("small", { text: tool.description || "" }));
    item.addEventListener("click", () => {
      for (const li of list.children) li.classList.toggle("active", li === item);
      showTool(tool);
    });
    list.append(item);
  }
}

function appResource(tool) {
  const meta = tool._meta || {};
  const uri = (meta.ui && meta.ui.resourceUri) || meta["ui/resourceUri"];
  return typeof uri === "string" && uri.startsWith("ui://") ? uri : null;
}

function showTool(tool, preset) {
  const box = $("tool-detail");
  const schema = tool.inputSchema || { type: "object" };
  const formBox = el("div", { id: "tool-form" });
  const errors = el("ul", { class: "errors", id: "tool-errors" });
  const call = el("button", { type: "button", id: "tool-call", text: "Call" });
  const save = el("button", { type: "button", class: "secondary", text: "Save call" });
  const output = el("div", { id: "tool-result" });
  const annotations = tool.annotations ? el("div", { class: "hint", text: `annotations: ${JSON.stringify(tool.annotations)}` }) : null;
  const app = appResource(tool);
  box.replaceChildren(
    el("h2", { text: tool.title || tool.name }),
    el("p", { text: tool.description || "" }),
    annotations,
    app ? el("p", { class: "app-note", text: `An MCP App: its result is shown by ${app}` }) : null,
    formBox,
    errors,
    el("div", { class: "actions" }, call, save),
    output,
  );
  const form = Forms.buildForm(schema, formBox);
  if (preset) fillRaw(formBox, preset);
  const read = () => {
    errors.replaceChildren();
    try {
      return form.read() || {};
    } catch (e) {
      errors.append(el("li", { text: e.message }));
      return null;
    }
  };
  call.addEventListener("click", async () => {
    const args = read();
    if (args === null) return;
    const check = await api("/api/validate", { schema, value: args });
    if (check.schemaError) errors.append(el("li", { text: `the tool's inputSchema is not a valid schema: ${check.schemaError}` }));
    if (check.errors && check.errors.length) {
      for (const e of check.errors) errors.append(el("li", { text: `${e.path || "(arguments)"}: ${e.message}` }));
      const anyway = el("button", { type: "button", class: "small", text: "send anyway" });
      anyway.addEventListener("click", () => callTool(tool, args, output));
      errors.append(el("li", {}, anyway));
      return;
    }
    callTool(tool, args, output);
  });
  save.addEventListener("click", () => {
    const args = read();
    if (args !== null) saveCall({ method: "tools/call", params: { name: tool.name, arguments: args } });
  });
}

// A preset's arguments typed into the raw JSON fields (replaying puts the whole call in the
// editor instead, so this only fills what matches).
function fillRaw(formBox, args) {
  for (const [key, value] of Object.entries(args || {})) {
    const input = formBox.querySelector(`[name="${CSS.escape(key)}"]`);
    if (!input) continue;
    if (input.type === "checkbox") input.checked = !!value;
    else if (input.tagName === "SELECT") input.value = JSON.stringify(value);
    else input.value = typeof value === "string" ? value : JSON.stringify(value);
  }
}

async function callTool(tool, args, output) {
  const id = `call-${++state.calls}`;
  const bar = el("progress", { id: `${id}-progress`, class: "call-progress" });
  const note = el("span", { class: "hint", id: `${id}-message` });
  const cancel = el("button", { type: "button", class: "small", id: "tool-cancel", text: "Cancel" });
  const box = el("div", { class: "result", id }, el("div", { class: "actions" }, bar, note, cancel));
  output.replaceChildren(box);
  cancel.addEventListener("click", () => api("/api/cancel", { call: id }));
  const answer = await request("tools/call", { name: tool.name, arguments: args }, id);
  cancel.remove();
  bar.remove();
  note.textContent = `${Math.round(answer.ms || 0)} ms`;
  if (answer.error) {
    box.classList.add("error");
    box.append(el("p", { class: "bad-text call-error", text: answer.error.message }), pre(answer.error));
    return;
  }
  await showResult(answer.result, box, tool);
  const app = appResource(tool);
  if (app) await showApp(app, tool, args, answer.result, box).catch((e) => box.append(el("p", { class: "bad-text", text: `the app could not be shown: ${e.message}` })));
}

// A tool result, block by block, by content type.
async function showResult(result, box, tool) {
  if (result.isError) {
    box.classList.add("error");
    box.append(el("p", { class: "bad-text", text: "The tool reported an error (isError: true)" }));
  }
  for (const block of result.content || []) box.append(contentBlock(block));
  if (result.structuredContent !== undefined) {
    box.append(el("div", { class: "block-kind", text: "structuredContent" }), pre(result.structuredContent));
    if (tool && tool.outputSchema) {
      const check = await api("/api/validate", { schema: tool.outputSchema, value: result.structuredContent });
      const ok = check.valid === true;
      box.append(el("p", {
        class: ok ? "ok-text output-check" : "bad-text output-check",
        text: ok ? "structuredContent matches the outputSchema" : `structuredContent does not match the outputSchema: ${(check.errors || []).map((e) => `${e.path} ${e.message}`).join("; ") || check.schemaError}`,
      }));
    }
  } else if (tool && tool.outputSchema && !result.isError) {
    box.append(el("p", { class: "bad-text output-check", text: "the tool declares an outputSchema but sent no structuredContent" }));
  }
  box.append(el("details", {}, el("summary", { text: "raw result" }), pre(result)));
}

function contentBlock(block) {
  const kind = el("div", { class: "block-kind", text: block.type });
  const wrap = el("div", { class: `block block-${block.type}` }, kind);
  switch (block.type) {
    case "text":
      wrap.append(pre(block.text));
      break;
    case "image":
      wrap.append(el("img", { src: `data:${safeMime(block.mimeType, "image/")};base64,${block.data}`, alt: "an image the tool returned", class: "result-image" }));
      break;
    case "audio":
      wrap.append(el("audio", { controls: true, src: `data:${safeMime(block.mimeType, "audio/")};base64,${block.data}` }));
      break;
    case "resource_link": {
      const read = el("button", { type: "button", class: "small", text: `read ${block.uri}` });
      const holder = el("div");
      read.addEventListener("click", () => readResource(block.uri, holder));
      wrap.append(el("div", { text: `${block.name || ""} ${block.mimeType || ""}` }), read, holder);
      break;
    }
    case "resource":
      wrap.append(resourceContents(block.resource || {}));
      break;
    default:
      wrap.append(pre(block));
  }
  return wrap;
}

// Only image/… or audio/… MIME types go into a data: URL (a data:text/html would be a page).
function safeMime(mime, prefix) {
  return typeof mime === "string" && mime.startsWith(prefix) && /^[\w.+/-]+$/.test(mime) ? mime : `${prefix}*`;
}

function resourceContents(contents) {
  const wrap = el("div", { class: "contents" }, el("div", { class: "hint", text: `${contents.uri || ""} ${contents.mimeType || ""}` }));
  if (typeof contents.text === "string") wrap.append(pre(contents.text));
  else if (typeof contents.blob === "string") {
    const mime = contents.mimeType || "application/octet-stream";
    if (mime.startsWith("image/")) wrap.append(el("img", { src: `data:${safeMime(mime, "image/")};base64,${contents.blob}` }));
    else wrap.append(el("a", { href: `data:application/octet-stream;base64,${contents.blob}`, download: "resource.bin", text: `download (${Math.round(contents.blob.length * 0.75)} bytes)` }));
  }
  return wrap;
}

// ---- MCP Apps (io.modelcontextprotocol/ui) --------------------------------------------------

async function showApp(uri, tool, args, result, box) {
  const answer = await request("resources/read", { uri });
  if (answer.error) throw new Error(answer.error.message);
  const contents = (answer.result.contents || [])[0] || {};
  const html = typeof contents.text === "string" ? contents.text : contents.blob ? atob(contents.blob) : null;
  if (html === null) throw new Error(`${uri} has no HTML`);
  const ui = (contents._meta && contents._meta.ui) || {};
  const frame = await api("/api/frame", { html, csp: ui.csp || {} });
  const iframe = el("iframe", { class: "app", sandbox: "allow-scripts", title: `app ${uri}`, id: "app-frame" });
  const log = el("ul", { class: "updates", id: "app-log" });
  box.append(el("h3", { text: `App ${uri}` }), iframe, el("details", { open: true }, el("summary", { text: "bridge messages" }), log));
  bridge(iframe, tool, args, result, log);
  iframe.src = frame.url;
}

// The host's side of the postMessage JSON-RPC bridge: the app's requests reach the server
// through the inspector; the tool's input and result are sent once the app says it is ready.
function bridge(iframe, tool, args, result, log) {
  const post = (message) => iframe.contentWindow && iframe.contentWindow.postMessage(message, "*");
  const note = (text) => log.append(el("li", { text }));
  const handlers = {
    "ui/initialize": async () => ({
      protocolVersion: APPS_VERSION,
      hostInfo: { name: "mcp-inspect", version: "1" },
      hostCapabilities: { serverTools: {}, serverResources: {}, openLinks: {}, logging: {} },
      hostContext: { theme: "light", displayMode: "inline", availableDisplayModes: ["inline"], toolInfo: { tool } },
    }),
    "tools/call": async (params) => {
      const answer = await request("tools/call", params);
      if (answer.error) throw answer.error;
      return answer.result;
    },
    "resources/read": async (params) => {
      const answer = await request("resources/read", params);
      if (answer.error) throw answer.error;
      return answer.result;
    },
    "ui/open-link": async (params) => {
      note(`the app asks to open ${params && params.url} (not opened: copy it if you trust it)`);
      return {};
    },
    "ui/message": async (params) => {
      note(`the app sends the conversation: ${JSON.stringify(params)}`);
      return {};
    },
    "ui/update-model-context": async () => ({}),
    ping: async () => ({}),
  };
  window.addEventListener("message", async (event) => {
    if (event.source !== iframe.contentWindow) return; // only this frame speaks on this bridge
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0" || typeof message.method !== "string") return;
    note(`app → ${message.method}${message.params ? ` ${JSON.stringify(message.params).slice(0, 300)}` : ""}`);
    if (message.id === undefined) {
      if (message.method === "ui/notifications/initialized") {
        post({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: args } });
        post({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: result });
        note("host → tool-input, tool-result");
      } else if (message.method === "ui/notifications/size-changed" && message.params) {
        const height = Number(message.params.height);
        if (height > 0 && height < 5000) iframe.style.height = `${height}px`;
      }
      return;
    }
    const handler = handlers[message.method];
    if (!handler) {
      post({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: `mcp inspect does not offer ${message.method}` } });
      return;
    }
    try {
      post({ jsonrpc: "2.0", id: message.id, result: await handler(message.params || {}) });
    } catch (e) {
      post({ jsonrpc: "2.0", id: message.id, error: { code: e.code || -32603, message: e.message || String(e) } });
    }
  });
}

// ---- resources ------------------------------------------------------------------------------

$("resources-refresh").addEventListener("click", () => loadResources().catch(showError));

async function loadResources() {
  const caps = (state.server && state.server.capabilities) || {};
  if (!caps.resources) {
    $("resources-list").replaceChildren(el("li", { text: "the server offers no resources" }));
    $("templates-list").replaceChildren();
    return;
  }
  state.resources = await listAll("resources/list", "resources");
  state.templates = await listAll("resources/templates/list", "resourceTemplates").catch(() => []);
  const list = $("resources-list");
  list.replaceChildren();
  for (const resource of state.resources) {
    const item = el("li", { "data-resource": resource.uri }, el("b", { text: resource.name || resource.uri }), el("small", { text: resource.uri }));
    item.addEventListener("click", () => showResource(resource));
    list.append(item);
  }
  const templates = $("templates-list");
  templates.replaceChildren();
  for (const template of state.templates) {
    const item = el("li", { "data-template": template.uriTemplate }, el("b", { text: template.name }), el("small", { text: template.uriTemplate }));
    item.addEventListener("click", () => showTemplate(template));
    templates.append(item);
  }
}

function showResource(resource) {
  const box = $("resource-detail");
  const contents = el("div", { id: "resource-contents" });
  const read = el("button", { type: "button", text: "Read" });
  const subscribe = el("button", { type: "button", class: "secondary", text: "Subscribe" });
  read.addEventListener("click", () => readResource(resource.uri, contents));
  subscribe.addEventListener("click", async () => {
    const answer = await api("/api/subscribe", { uri: resource.uri });
    subscribe.textContent = answer.error ? `cannot subscribe: ${answer.error}` : "Subscribed";
    subscribe.disabled = !answer.error;
  });
  const caps = (state.server && state.server.capabilities) || {};
  box.replaceChildren(
    el("h2", { text: resource.name || resource.uri }),
    el("p", { text: resource.description || "" }),
    el("div", { class: "actions" }, read, caps.resources && caps.resources.subscribe ? subscribe : null),
    contents,
  );
}

async function readResource(uri, holder) {
  const answer = await request("resources/read", { uri });
  holder.replaceChildren();
  if (answer.error) holder.append(el("p", { class: "bad-text", text: answer.error.message }));
  else for (const contents of answer.result.contents || []) holder.append(resourceContents(contents));
}

// A template: one input per variable, completed by the server as it is typed.
function showTemplate(template) {
  const box = $("resource-detail");
  const names = [...template.uriTemplate.matchAll(/\{[+#./;?&]?([^}]+)\}/g)].flatMap((m) => m[1].split(",").map((n) => n.replace(/\*$|:\d+$/, "")));
  const inputs = {};
  const fields = names.map((name) => {
    const list = el("datalist", { id: `complete-${name}` });
    const input = el("input", { name, list: `complete-${name}`, autocomplete: "off" });
    input.addEventListener("input", () => complete({ type: "ref/resource", uri: template.uriTemplate }, name, input.value, list, inputs));
    inputs[name] = input;
    return el("div", { class: "field" }, el("label", {}, el("span", { class: "label", text: name }), input, list));
  });
  const contents = el("div", { id: "resource-contents" });
  const read = el("button", { type: "button", text: "Read" });
  read.addEventListener("click", () => {
    const uri = template.uriTemplate.replace(/\{[+#./;?&]?([^}]+)\}/g, (_, inner) => inner.split(",").map((n) => encodeURIComponent((inputs[n.replace(/\*$|:\d+$/, "")] || {}).value || "")).join(","));
    readResource(uri, contents);
  });
  box.replaceChildren(el("h2", { text: template.name }), el("p", { class: "hint", text: template.uriTemplate }), ...fields, el("div", { class: "actions" }, read), contents);
}

async function complete(ref, name, value, list, inputs) {
  const caps = (state.server && state.server.capabilities) || {};
  if (!caps.completions) return;
  const context = { arguments: Object.fromEntries(Object.entries(inputs).filter(([k]) => k !== name).map(([k, i]) => [k, i.value])) };
  const answer = await request("completion/complete", { ref, argument: { name, value }, context });
  if (answer.error) return;
  list.replaceChildren(...(answer.result.completion.values || []).map((v) => el("option", { value: v })));
}

// ---- prompts --------------------------------------------------------------------------------

$("prompts-refresh").addEventListener("click", () => loadPrompts().catch(showError));

async function loadPrompts() {
  const caps = (state.server && state.server.capabilities) || {};
  const list = $("prompts-list");
  if (!caps.prompts) {
    list.replaceChildren(el("li", { text: "the server offers no prompts" }));
    return;
  }
  const prompts = await listAll("prompts/list", "prompts");
  list.replaceChildren();
  for (const prompt of prompts) {
    const item = el("li", { "data-prompt": prompt.name }, el("b", { text: prompt.title || prompt.name }), el("small", { text: prompt.description || "" }));
    item.addEventListener("click", () => showPrompt(prompt));
    list.append(item);
  }
}

function showPrompt(prompt) {
  const box = $("prompt-detail");
  const inputs = {};
  const fields = (prompt.arguments || []).map((arg) => {
    const list = el("datalist", { id: `prompt-complete-${arg.name}` });
    const input = el("input", { name: arg.name, list: `prompt-complete-${arg.name}`, autocomplete: "off" });
    input.addEventListener("input", () => complete({ type: "ref/prompt", name: prompt.name }, arg.name, input.value, list, inputs));
    inputs[arg.name] = input;
    return el("div", { class: "field" }, el("label", {}, el("span", { class: "label" }, arg.name, arg.required ? el("span", { class: "required", text: " *" }) : null), input, list), arg.description ? el("div", { class: "help", text: arg.description }) : null);
  });
  const output = el("div", { id: "prompt-result" });
  const get = el("button", { type: "button", text: "Get" });
  get.addEventListener("click", async () => {
    const args = Object.fromEntries(Object.entries(inputs).filter(([, i]) => i.value !== "").map(([k, i]) => [k, i.value]));
    const answer = await request("prompts/get", { name: prompt.name, arguments: args });
    output.replaceChildren();
    if (answer.error) return output.append(el("p", { class: "bad-text", text: answer.error.message }));
    for (const message of answer.result.messages || []) {
      output.append(el("div", { class: "block-kind", text: message.role }), contentBlock(message.content));
    }
  });
  box.replaceChildren(el("h2", { text: prompt.title || prompt.name }), el("p", { text: prompt.description || "" }), ...fields, el("div", { class: "actions" }, get), output);
}

// ---- logging --------------------------------------------------------------------------------

$("log-level").addEventListener("change", async (e) => {
  const answer = await api("/api/log-level", { level: e.target.value });
  if (answer.error) showError(new Error(answer.error));
  else logLine(`log level: ${e.target.value} and up`, "change");
});
$("log-clear").addEventListener("click", () => {
  $("log").replaceChildren();
  $("log-count").textContent = "0";
});

function logLine(text, cls) {
  const log = $("log");
  log.append(el("li", { text, class: cls || "" }));
  while (log.children.length > 2000) log.firstChild.remove();
  $("log-count").textContent = String(log.children.length);
}

// ---- traffic --------------------------------------------------------------------------------

$("traffic-export").href = `/api/traffic.jsonl?token=${encodeURIComponent(TOKEN)}`;
$("traffic-filter").addEventListener("input", renderTraffic);
$("traffic-direction").addEventListener("change", renderTraffic);

function summary(event) {
  if (event.kind === "http") {
    const what = event.rpcMethod ? ` · ${event.rpcMethod}${event.id !== null && event.id !== undefined ? ` #${event.id}` : ""}` : event.id !== null && event.id !== undefined ? ` · #${event.id}` : "";
    return `HTTP ${event.method} ${event.status}${what}`;
  }
  const message = event.message;
  if (message.truncated) return `(${message.bytes} bytes, cut)`;
  if (message.method) return `${message.method}${message.id !== undefined ? ` #${message.id}` : ""}`;
  if (message.error) return `error #${message.id}: ${message.error.message}`;
  return `result #${message.id}`;
}

function trafficMatches(event) {
  const direction = $("traffic-direction").value;
  const filter = $("traffic-filter").value.toLowerCase();
  if (direction && event.dir !== direction) return false;
  return !filter || JSON.stringify(event.kind === "http" ? event : event.message).toLowerCase().includes(filter);
}

function trafficRow(event) {
  const row = el(
    "tr",
    { "data-seq": event.seq, class: "traffic-row" },
    el("td", { text: String(event.seq) }),
    el("td", { text: event.at.toFixed(1) }),
    el("td", { class: `dir-${event.dir}`, text: { out: "→", in: "←", http: "⇄" }[event.dir] }),
    el("td", { text: summary(event) }),
  );
  row.addEventListener("click", () => showMessage(event, row));
  return row;
}

function addTraffic(event) {
  state.traffic.push(event);
  if (state.traffic.length > 5000) state.traffic.shift();
  $("traffic-count").textContent = String(state.traffic.length);
  if (trafficMatches(event)) {
    const body = document.querySelector("#traffic tbody");
    body.append(trafficRow(event));
    while (body.children.length > 5000) body.firstChild.remove();
  }
}

function renderTraffic() {
  const body = document.querySelector("#traffic tbody");
  body.replaceChildren(...state.traffic.filter(trafficMatches).map(trafficRow));
}

function showMessage(event, row) {
  for (const r of document.querySelectorAll("#traffic tr.selected")) r.classList.remove("selected");
  row.classList.add("selected");
  const box = $("traffic-detail");
  if (event.kind === "http") {
    const headers = (list) => el("table", { class: "headers" }, ...(list || []).map(([k, v]) => el("tr", {}, el("th", { text: k }), el("td", { text: v }))));
    box.replaceChildren(
      el("h3", { text: `HTTP ${event.method} ${event.url}: ${event.status}, at ${event.at.toFixed(1)} ms` }),
      el("h4", { text: "sent" }), headers(event.requestHeaders),
      el("h4", { text: "received" }), headers(event.responseHeaders),
    );
    return;
  }
  box.replaceChildren(el("h3", { text: `${event.dir === "out" ? "sent" : "received"} at ${event.at.toFixed(1)} ms` }), pre(event.message));
  const m = event.message;
  if (event.dir === "out" && m.method && m.id !== undefined) {
    const replay = el("button", { type: "button", id: "traffic-replay", text: "Edit and replay" });
    const save = el("button", { type: "button", class: "secondary", text: "Save call" });
    replay.addEventListener("click", () => editCall({ method: m.method, params: stripMeta(m.params) }, box));
    save.addEventListener("click", () => saveCall({ method: m.method, params: stripMeta(m.params) }));
    box.append(el("div", { class: "actions" }, replay, save));
  }
}

// The client's own _meta (protocol version, capabilities) is added again when sent.
function stripMeta(params) {
  if (!params || typeof params !== "object") return params || {};
  const { _meta, ...rest } = params;
  return rest;
}

// An editor for one call: its method and params as JSON, sent as typed.
function editCall(callSpec, box) {
  const method = el("input", { id: "replay-method", value: callSpec.method, "aria-label": "Method" });
  const params = el("textarea", { id: "replay-params", class: "json", "aria-label": "Params (JSON)" });
  params.value = JSON.stringify(callSpec.params || {}, null, 2);
  const send = el("button", { type: "button", id: "replay-send", text: "Send" });
  const output = el("div", { id: "replay-result" });
  send.addEventListener("click", async () => {
    let value;
    try {
      value = JSON.parse(params.value || "{}");
    } catch (e) {
      output.replaceChildren(el("p", { class: "bad-text", text: `params are not JSON: ${e.message}` }));
      return;
    }
    const answer = await request(method.value, value, `replay-${++state.calls}`);
    output.replaceChildren();
    if (answer.error) output.append(el("p", { class: "bad-text", text: answer.error.message }), pre(answer.error));
    else if (method.value === "tools/call") await showResult(answer.result, output, state.tools.find((t) => t.name === value.name));
    else output.append(pre(answer.result));
  });
  box.append(el("h3", { text: "Replay" }), el("label", {}, "method ", method), el("label", {}, "params", params), el("div", { class: "actions" }, send), output);
}

// ---- saved calls (kept in this browser) -----------------------------------------------------

function savedCalls() {
  try {
    return JSON.parse(localStorage.getItem("mcp-inspect-saved") || "[]");
  } catch {
    return [];
  }
}

function saveCall(callSpec) {
  const calls = savedCalls();
  calls.push({ ...callSpec, saved: new Date().toISOString() });
  localStorage.setItem("mcp-inspect-saved", JSON.stringify(calls.slice(-200)));
  setStatus(`saved ${callSpec.method}`, true);
}

async function showSaved() {
  const list = $("saved-list");
  list.replaceChildren();
  savedCalls().forEach((callSpec, index) => {
    const holder = el("div");
    const open = el("button", { type: "button", class: "small", text: "edit and send" });
    const remove = el("button", { type: "button", class: "small", text: "forget" });
    open.addEventListener("click", () => {
      holder.replaceChildren();
      editCall(callSpec, holder);
    });
    remove.addEventListener("click", () => {
      const calls = savedCalls();
      calls.splice(index, 1);
      localStorage.setItem("mcp-inspect-saved", JSON.stringify(calls));
      showSaved();
    });
    list.append(el("li", {}, el("b", { text: callSpec.method }), el("small", { text: JSON.stringify(callSpec.params) }), open, remove, holder));
  });
}

// ---- roots ----------------------------------------------------------------------------------

let roots = null;

async function showRoots() {
  if (roots === null) roots = ((state.server && state.server.roots) || []).slice();
  const list = $("roots-list");
  list.replaceChildren(
    ...roots.map((root, i) => {
      const remove = el("button", { type: "button", class: "small", text: "remove" });
      remove.addEventListener("click", () => {
        roots.splice(i, 1);
        showRoots();
      });
      return el("li", {}, el("b", { text: root.name || root.uri }), el("small", { text: root.uri }), remove);
    }),
  );
}

$("root-add").addEventListener("click", () => {
  const uri = $("root-uri").value.trim();
  if (!uri.startsWith("file://")) return showError(new Error("a root is a file:// URI"));
  roots = roots || [];
  roots.push($("root-name").value.trim() ? { uri, name: $("root-name").value.trim() } : { uri });
  $("root-uri").value = "";
  $("root-name").value = "";
  showRoots();
});
$("roots-save").addEventListener("click", async () => {
  const answer = await api("/api/roots", { roots: roots || [] });
  if (answer.error) showError(new Error(answer.error));
  else setStatus(`offering ${(roots || []).length} root(s)`, true);
});

// ---- authorization (HTTP servers) ----------------------------------------------------------

async function showAuth() {
  const list = $("auth-steps");
  list.replaceChildren(el("li", { class: "hint", text: "asking…" }));
  const answer = await api("/api/auth");
  list.replaceChildren();
  if (answer.stdio) {
    list.append(el("li", { text: "a stdio server: no authorization (its environment carries any credentials)" }));
    return;
  }
  for (const s of answer.steps) {
    const item = el("li", { class: `auth-step ${s.ok ? "ok-text" : "bad-text"}`, "data-step": s.name }, el("b", { text: `${s.ok ? "✓" : "✗"} ${s.name}: ` }), el("span", { text: s.said }));
    if (s.detail) item.append(el("details", {}, el("summary", { text: "what came back" }), pre(s.detail)));
    list.append(item);
  }
  if (answer.needed === false) list.append(el("li", { class: "hint", text: "nothing more to do" }));
}

$("auth-discover").addEventListener("click", () => showAuth().catch(showError));
$("auth-login").addEventListener("click", async () => {
  const box = $("auth-result");
  box.replaceChildren(el("p", { class: "hint", text: "authorizing: finish it in the browser tab that opens (or the link above)" }));
  const answer = await api("/api/login", {});
  box.replaceChildren(answer.error ? el("p", { class: "bad-text", text: answer.error }) : el("div", {}, el("p", { class: "ok-text", text: "authorized" }), pre(answer.authorized)));
  $("auth-url").replaceChildren();
});

// ---- questions the server asks (elicitation, sampling) --------------------------------------

function showQuestion(event) {
  const box = el("div", { class: "question", id: `question-${event.id}`, "data-question": event.type });
  const answer = async (value) => {
    await api("/api/answer", { id: event.id, answer: value });
    box.remove();
  };
  const p = event.params || {};
  if (event.type === "elicitation" && p.mode === "url") {
    const accept = el("button", { type: "button", text: "I opened it" });
    const decline = el("button", { type: "button", class: "secondary", text: "Decline" });
    accept.addEventListener("click", () => answer({ action: "accept" }));
    decline.addEventListener("click", () => answer({ action: "decline" }));
    box.append(el("h3", { text: "The server asks you to open a page" }), el("p", { text: p.message || "" }), el("p", {}, el("code", { text: p.url || "" })), el("div", { class: "actions" }, accept, decline));
  } else if (event.type === "elicitation") {
    const formBox = el("div", { class: "elicitation-form" });
    const errors = el("ul", { class: "errors" });
    const accept = el("button", { type: "button", class: "elicitation-accept", text: "Accept" });
    const decline = el("button", { type: "button", class: "secondary", text: "Decline" });
    const cancel = el("button", { type: "button", class: "secondary", text: "Cancel" });
    box.append(el("h3", { text: "The server asks you" }), el("p", { text: p.message || "" }), formBox, errors, el("div", { class: "actions" }, accept, decline, cancel));
    const schema = p.requestedSchema || { type: "object", properties: {} };
    const form = Forms.buildForm(schema, formBox);
    accept.addEventListener("click", async () => {
      errors.replaceChildren();
      let content;
      try {
        content = form.read() || {};
      } catch (e) {
        return errors.append(el("li", { text: e.message }));
      }
      const check = await api("/api/validate", { schema, value: content });
      if (check.errors && check.errors.length) return check.errors.forEach((e) => errors.append(el("li", { text: `${e.path || "(answer)"}: ${e.message}` })));
      answer({ action: "accept", content });
    });
    decline.addEventListener("click", () => answer({ action: "decline" }));
    cancel.addEventListener("click", () => answer({ action: "cancel" }));
  } else if (event.type === "sampling") {
    const text = el("textarea", { class: "sampling-reply", placeholder: "the reply the model would give", "aria-label": "The model's reply" });
    const send = el("button", { type: "button", text: "Send as the model" });
    const decline = el("button", { type: "button", class: "secondary", text: "Decline" });
    send.addEventListener("click", () => answer({ role: "assistant", content: { type: "text", text: text.value }, model: "a person, in mcp inspect", stopReason: "endTurn" }));
    decline.addEventListener("click", () => answer({ action: "decline" }));
    const messages = (p.messages || []).map((m) => el("div", {}, el("div", { class: "block-kind", text: m.role }), Array.isArray(m.content) ? el("div", {}, ...m.content.map(contentBlock)) : contentBlock(m.content || {})));
    box.append(el("h3", { text: `The server asks for a completion (at most ${p.maxTokens} tokens)` }), p.systemPrompt ? el("p", { class: "hint", text: `system: ${p.systemPrompt}` }) : null, ...messages, text, el("div", { class: "actions" }, send, decline));
  }
  $("questions").append(box);
}

// ---- the event stream -----------------------------------------------------------------------

function onEvent(event) {
  switch (event.kind) {
    case "traffic":
    case "http":
      addTraffic(event);
      break;
    case "notification":
      onNotification(event.method, event.params || {});
      break;
    case "progress": {
      const bar = $(`${event.call}-progress`);
      if (bar) {
        if (event.total) bar.max = event.total;
        bar.value = event.progress;
      }
      const note = $(`${event.call}-message`);
      if (note && event.message) note.textContent = event.message;
      break;
    }
    case "question":
      if (!$(`question-${event.id}`)) showQuestion(event);
      break;
    case "answered": {
      const q = $(`question-${event.id}`);
      if (q) q.remove();
      break;
    }
    case "authorize": {
      // Only http(s) links: the URL comes from the authorization server's metadata.
      if (/^https?:\/\//.test(event.url)) {
        $("auth-url").replaceChildren(el("p", {}, "To authorize, open ", el("a", { href: event.url, target: "_blank", rel: "noopener noreferrer", id: "auth-link", text: "the authorization page" }), "."));
        setStatus("waiting for an authorization in the browser");
      }
      break;
    }
    case "status":
      setStatus(event.text, event.connected);
      if (event.connected) loadServer().catch(showError);
      break;
  }
}

function onNotification(method, params) {
  if (method === "notifications/message") {
    const data = typeof params.data === "string" ? params.data : JSON.stringify(params.data);
    logLine(`[${params.level}]${params.logger ? ` ${params.logger}:` : ""} ${data}`, `level-${params.level}`);
  } else if (method === "notifications/resources/updated") {
    $("resource-updates").append(el("li", { text: `${new Date().toLocaleTimeString()} ${params.uri} changed` }));
  } else if (method === "notifications/tools/list_changed") {
    logLine("the server's tools changed", "change");
    if ($("tab-tools").classList.contains("active")) loadTools().catch(showError);
  } else {
    logLine(`${method} ${JSON.stringify(params)}`);
  }
}

async function poll() {
  for (;;) {
    try {
      const after = state.seq === null ? "" : `&after=${state.seq}`;
      const batch = await api(`/api/events?wait=20000${after}`);
      if (batch.missed) logLine(`${batch.missed} events were dropped before the page read them`);
      for (const event of batch.events) {
        state.seq = event.seq;
        onEvent(event);
      }
      if (!batch.events.length && batch.next > 0) state.seq = batch.next - 1;
    } catch (e) {
      setStatus(`the inspector does not answer (${e.message}); retrying`, false);
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}

loadServer().catch(showError);
poll();
