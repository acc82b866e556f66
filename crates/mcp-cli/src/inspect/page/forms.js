// Forms built from JSON Schemas: a tool's inputSchema, an elicitation's requestedSchema.
// Strings, numbers, integers, booleans, enums, arrays, nested objects, oneOf/anyOf, local $refs,
// defaults and descriptions. `buildForm(schema, root)` returns `{ read() }`, which gives the
// value typed so far (empty optional fields left out). Validation is the server's job
// (/api/validate, a real JSON Schema validator), before anything is sent.
"use strict";

const Forms = (() => {
  const el = (tag, attrs = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : v);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  };

  // Follows "#/$defs/X" and "#/definitions/X" inside the root schema (at most 20 hops).
  function resolve(schema, root) {
    let hops = 0;
    while (schema && typeof schema.$ref === "string" && schema.$ref.startsWith("#/") && hops++ < 20) {
      let target = root;
      for (const part of schema.$ref.slice(2).split("/")) target = target && target[part.replace(/~1/g, "/").replace(/~0/g, "~")];
      if (!target) break;
      const { $ref, ...rest } = schema;
      schema = { ...target, ...rest };
    }
    return schema || {};
  }

  // The choices of an enum: `enum` (with `enumNames`), or a oneOf/anyOf of titled consts.
  function choices(schema) {
    if (Array.isArray(schema.enum)) return schema.enum.map((v, i) => ({ value: v, title: (schema.enumNames || [])[i] || String(v) }));
    const variants = schema.oneOf || schema.anyOf;
    if (Array.isArray(variants) && variants.length && variants.every((v) => v && v.const !== undefined)) {
      return variants.map((v) => ({ value: v.const, title: v.title || String(v.const) }));
    }
    return null;
  }

  function typeOf(schema) {
    if (choices(schema)) return "enum";
    if (schema.type === "array" && schema.items && choices(schema.items)) return "multi";
    if (schema.const !== undefined) return "const";
    if (Array.isArray(schema.oneOf) || Array.isArray(schema.anyOf)) return "choice";
    let t = schema.type;
    if (Array.isArray(t)) t = t.find((x) => x !== "null") || "null";
    if (!t && schema.properties) t = "object";
    if (!t && schema.items) t = "array";
    return t || "any";
  }

  function label(name, schema, required) {
    const text = schema.title || name;
    return el("span", { class: "label" }, text, required ? el("span", { class: "required", text: " *", title: "required" }) : null);
  }

  function help(schema) {
    return schema.description ? el("div", { class: "help", text: schema.description }) : null;
  }

  // One field for `schema`, named `name` (its path in data-field, for tests and people).
  function field(schema, root, name, path, required) {
    schema = resolve(schema, root);
    const kind = typeOf(schema);
    const wrap = el("div", { class: `field field-${kind}`, "data-field": path });
    const has = (v) => v !== undefined;
    switch (kind) {
      case "string": {
        const long = (schema.maxLength || 0) > 200 || schema.format === "textarea";
        const input = el(long ? "textarea" : "input", {
          name: path,
          type: long ? undefined : inputType(schema.format),
          placeholder: schema.format || (schema.examples && schema.examples[0]) || "",
        });
        if (has(schema.default)) input.value = String(schema.default);
        wrap.append(el("label", {}, label(name, schema, required), input), help(schema));
        return { node: wrap, read: () => (input.value === "" && !required ? undefined : input.value) };
      }
      case "number":
      case "integer": {
        const input = el("input", { name: path, type: "number", step: kind === "integer" ? "1" : "any", min: schema.minimum, max: schema.maximum });
        if (has(schema.default)) input.value = String(schema.default);
        wrap.append(el("label", {}, label(name, schema, required), input), help(schema));
        return { node: wrap, read: () => (input.value === "" ? undefined : Number(input.value)) };
      }
      case "boolean": {
        const input = el("input", { name: path, type: "checkbox" });
        input.checked = schema.default === true;
        let touched = has(schema.default) || required;
        input.addEventListener("change", () => (touched = true));
        wrap.append(el("label", { class: "inline" }, input, label(name, schema, required)), help(schema));
        return { node: wrap, read: () => (touched ? input.checked : undefined) };
      }
      case "enum": {
        const select = el("select", { name: path }, el("option", { value: "", text: required ? "— choose —" : "— none —" }));
        for (const c of choices(schema)) select.append(el("option", { value: JSON.stringify(c.value), text: c.title }));
        if (has(schema.default)) select.value = JSON.stringify(schema.default);
        wrap.append(el("label", {}, label(name, schema, required), select), help(schema));
        return { node: wrap, read: () => (select.value === "" ? undefined : JSON.parse(select.value)) };
      }
      case "multi": {
        const boxes = choices(resolve(schema.items, root)).map((c) => {
          const box = el("input", { type: "checkbox", name: `${path}[]`, value: JSON.stringify(c.value) });
          box.checked = Array.isArray(schema.default) && schema.default.some((d) => JSON.stringify(d) === JSON.stringify(c.value));
          return { box, node: el("label", { class: "inline" }, box, c.title) };
        });
        wrap.append(el("fieldset", {}, el("legend", {}, label(name, schema, required)), help(schema), ...boxes.map((b) => b.node)));
        return {
          node: wrap,
          read: () => {
            const picked = boxes.filter((b) => b.box.checked).map((b) => JSON.parse(b.box.value));
            return picked.length === 0 && !required ? undefined : picked;
          },
        };
      }
      case "const":
        wrap.append(el("div", { class: "const", text: `${name} = ${JSON.stringify(schema.const)}` }));
        return { node: wrap, read: () => schema.const };
      case "choice":
        return choice(schema, root, name, path, required, wrap);
      case "array":
        return array(schema, root, name, path, required, wrap);
      case "object":
        return object(schema, root, name, path, required, wrap);
      default:
        return raw(schema, name, path, required, wrap);
    }
  }

  function inputType(format) {
    return { email: "email", uri: "url", date: "date", "date-time": "datetime-local" }[format] || "text";
  }

  // oneOf/anyOf: a selector of the variants, and the chosen variant's form.
  function choice(schema, root, name, path, required, wrap) {
    const variants = (schema.oneOf || schema.anyOf).map((v) => resolve(v, root));
    const select = el("select", { name: `${path}#variant`, class: "variant" });
    variants.forEach((v, i) => select.append(el("option", { value: String(i), text: v.title || v.description || typeOf(v) || `option ${i + 1}` })));
    const holder = el("div", { class: "variant-body" });
    let current = null;
    const show = () => {
      holder.replaceChildren();
      const base = { ...schema };
      delete base.oneOf;
      delete base.anyOf;
      current = field({ ...base, ...variants[Number(select.value)] }, root, name, path, required);
      holder.append(current.node);
    };
    select.addEventListener("change", show);
    show();
    wrap.append(el("label", {}, label(name, { title: `${schema.title || name}: one of` }, required), select), holder);
    return { node: wrap, read: () => current.read() };
  }

  // An array: its items one per row, added and removed by hand.
  function array(schema, root, name, path, required, wrap) {
    const itemSchema = resolve(schema.items || {}, root);
    const list = el("div", { class: "items" });
    const rows = [];
    const add = (value) => {
      const index = rows.length;
      const item = field(value === undefined ? itemSchema : { ...itemSchema, default: value }, root, `${name}[${index}]`, `${path}.${index}`, true);
      const row = el("div", { class: "item" }, item.node);
      const remove = el("button", { type: "button", class: "small", text: "remove" });
      remove.addEventListener("click", () => {
        rows.splice(rows.indexOf(entry), 1);
        row.remove();
      });
      row.append(remove);
      const entry = { read: item.read };
      rows.push(entry);
      list.append(row);
    };
    const more = el("button", { type: "button", class: "small add-item", text: `add ${typeOf(itemSchema)}` });
    more.addEventListener("click", () => add());
    if (Array.isArray(schema.default)) schema.default.forEach(add);
    wrap.append(el("fieldset", {}, el("legend", {}, label(name, schema, required)), help(schema), list, more));
    return {
      node: wrap,
      read: () => {
        const values = rows.map((r) => r.read()).filter((v) => v !== undefined);
        return values.length === 0 && !required ? undefined : values;
      },
    };
  }

  function object(schema, root, name, path, required, wrap, top) {
    const props = schema.properties || {};
    const needed = new Set(schema.required || []);
    const fields = Object.entries(props).map(([key, sub]) => [key, field(sub, root, key, path ? `${path}.${key}` : key, needed.has(key))]);
    const extra = schema.additionalProperties && typeof schema.additionalProperties === "object" && Object.keys(props).length === 0
      ? raw({ description: "an object (JSON)" }, "entries", `${path}.*`, false, el("div"))
      : null;
    const body = el("div", { class: "properties" }, ...fields.map(([, f]) => f.node), extra && extra.node);
    if (top) wrap.append(help(schema), body);
    else wrap.append(el("fieldset", {}, el("legend", {}, label(name, schema, required)), help(schema), body));
    return {
      node: wrap,
      read: () => {
        const out = extra ? extra.read() || {} : {};
        for (const [key, f] of fields) {
          const v = f.read();
          if (v !== undefined) out[key] = v;
        }
        return Object.keys(out).length === 0 && !required && !top ? undefined : out;
      },
    };
  }

  // Anything the form cannot shape: JSON typed by hand.
  function raw(schema, name, path, required, wrap) {
    const area = el("textarea", { name: path, class: "json", placeholder: "JSON" });
    if (schema.default !== undefined) area.value = JSON.stringify(schema.default);
    wrap.append(el("label", {}, label(name, schema, required), area), help(schema));
    return {
      node: wrap,
      read: () => {
        if (area.value.trim() === "") return undefined;
        try {
          return JSON.parse(area.value);
        } catch (e) {
          throw new Error(`${name}: not JSON (${e.message})`);
        }
      },
    };
  }

  // The form of a whole schema (an object schema: one field per property).
  function buildForm(schema, root) {
    schema = resolve(schema || {}, schema || {});
    const node = el("div", { class: "form" });
    const form = typeOf(schema) === "object"
      ? object(schema, schema, "", "", true, node, true)
      : field(schema, schema, "value", "value", true);
    root.replaceChildren(form.node);
    return form;
  }

  return { buildForm, el };
})();
