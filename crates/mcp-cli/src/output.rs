//! What `mcp` prints for a person, argument coercion, and elicitation defaults.

use serde_json::Value;

/// A `key=value` value as the schema's type wants it.
pub fn coerce(text: &str, kind: &Value) -> Value {
    let kinds: Vec<&str> = match kind {
        Value::String(k) => vec![k.as_str()],
        Value::Array(ks) => ks.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    for k in &kinds {
        let parsed = match *k {
            "integer" => text.parse::<i64>().ok().map(Value::from),
            "number" => text.parse::<f64>().ok().map(Value::from),
            "boolean" => text.parse::<bool>().ok().map(Value::from),
            "array" | "object" | "null" => serde_json::from_str(text).ok(),
            "string" => Some(Value::String(text.to_owned())),
            _ => None,
        };
        if let Some(v) = parsed {
            return v;
        }
    }
    if kinds.is_empty() {
        if let Ok(v) = serde_json::from_str::<Value>(text) {
            if !v.is_string() {
                return v;
            }
        }
    }
    Value::String(text.to_owned())
}

/// A readable rendering of a command's result.
pub fn human(command: &str, value: &Value) -> String {
    let mut out = String::new();
    match command {
        "task" => {
            let tasks = value["tasks"].as_array().cloned().unwrap_or_else(|| vec![value.clone()]);
            for t in tasks {
                if let Some(id) = t["cancelled"].as_str() {
                    out.push_str(&format!("asked the server to cancel task {id}\n"));
                    continue;
                }
                let status = t["status"].as_str().unwrap_or("?");
                let message = t["statusMessage"].as_str().unwrap_or("");
                out.push_str(&format!("{}\t{status}\t{message}\n", t["taskId"].as_str().unwrap_or("?")));
            }
        }
        "servers" => {
            for server in value["servers"].as_array().into_iter().flatten() {
                let name = server["name"].as_str().unwrap_or("?");
                let transport = server["transport"].as_str().unwrap_or("?");
                let at = server["url"].as_str().or(server["command"].as_str()).unwrap_or("");
                out.push_str(&format!("{name}\t{transport}\t{at}\n"));
            }
        }
        "tools" => {
            for t in value["tools"].as_array().into_iter().flatten() {
                out.push_str(&format!("{}\n", t["name"].as_str().unwrap_or("?")));
                if let Some(d) = t["description"].as_str() {
                    out.push_str(&format!("    {}\n", d.lines().next().unwrap_or("")));
                }
                let required: Vec<&str> =
                    t["inputSchema"]["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                if let Some(props) = t["inputSchema"]["properties"].as_object() {
                    for (name, p) in props {
                        let kind = p["type"].as_str().map(str::to_owned).unwrap_or_else(|| p["type"].to_string());
                        let req = if required.contains(&name.as_str()) { "" } else { "?" };
                        out.push_str(&format!("    {name}{req}: {kind}\n"));
                    }
                }
            }
        }
        "call" if value.get("taskId").is_some() && value.get("content").is_none() => {
            let status = value["status"].as_str().unwrap_or("?");
            out.push_str(&format!(
                "task {} {status}: follow it with `mcp task get|result|cancel ID`\n",
                value["taskId"].as_str().unwrap_or("?")
            ));
        }
        "call" => {
            for block in value["content"].as_array().into_iter().flatten() {
                match block["type"].as_str() {
                    Some("text") => out.push_str(&format!("{}\n", block["text"].as_str().unwrap_or(""))),
                    Some(kind) => out.push_str(&format!(
                        "[{kind} {}]\n",
                        block["mimeType"].as_str().or(block["uri"].as_str()).unwrap_or("")
                    )),
                    None => {}
                }
            }
            if value["isError"] == true {
                out.insert_str(0, "error: ");
            }
        }
        "resources" | "templates" | "prompts" => {
            let key = match command {
                "resources" => "resources",
                "templates" => "resourceTemplates",
                _ => "prompts",
            };
            if let Some(note) = value["note"].as_str() {
                out.push_str(&format!("({note})\n"));
            }
            for r in value[key].as_array().into_iter().flatten() {
                let id = r["uri"].as_str().or(r["uriTemplate"].as_str()).or(r["name"].as_str()).unwrap_or("?");
                let about = r["description"].as_str().or(r["name"].as_str()).unwrap_or("");
                out.push_str(&format!("{id}\n    {about}\n"));
                for a in r["arguments"].as_array().into_iter().flatten() {
                    let optional = if a["required"] == true { "" } else { "?" };
                    let name = a["name"].as_str().unwrap_or("?");
                    match a["description"].as_str() {
                        Some(d) => out.push_str(&format!("    {name}{optional}: {d}\n")),
                        None => out.push_str(&format!("    {name}{optional}\n")),
                    }
                }
            }
        }
        "read" => {
            for c in value["contents"].as_array().into_iter().flatten() {
                match c["text"].as_str() {
                    Some(text) => out.push_str(&format!("{text}\n")),
                    None => {
                        out.push_str(&format!("[binary {} bytes base64]\n", c["blob"].as_str().map_or(0, str::len)))
                    }
                }
            }
        }
        "skills" if value.get("skills").is_some() => {
            for skill in value["skills"].as_array().into_iter().flatten() {
                out.push_str(&format!(
                    "{}\t{} files\t{}\n    {}\n",
                    skill["name"].as_str().unwrap_or("?"),
                    skill["files"],
                    skill["uri"].as_str().unwrap_or(""),
                    skill["description"].as_str().unwrap_or("")
                ));
            }
        }
        "skills" => {
            if let Some(dir) = value["written"].as_str() {
                out.push_str(&format!("{} (verified) written to {dir}\n", value["skill"].as_str().unwrap_or("?")));
            } else {
                out.push_str(value["manifest"].as_str().unwrap_or(""));
            }
        }
        "prompt" => {
            for m in value["messages"].as_array().into_iter().flatten() {
                out.push_str(&format!(
                    "{}: {}\n",
                    m["role"].as_str().unwrap_or("?"),
                    m["content"]["text"].as_str().unwrap_or("[non-text content]")
                ));
            }
        }
        "complete" => {
            for v in value["completion"]["values"].as_array().into_iter().flatten() {
                out.push_str(&format!("{}\n", v.as_str().unwrap_or("")));
            }
        }
        "ping" => out.push_str("ok\n"),
        "chat" => {} // printed as it went
        "login" => {
            let scopes: Vec<&str> =
                value["scopes"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            out.push_str(&format!(
                "logged in to {} via {} (scopes: {}; expires {}{})\n",
                value["loggedIn"].as_str().unwrap_or("?"),
                value["issuer"].as_str().unwrap_or("?"),
                if scopes.is_empty() { "none".to_owned() } else { scopes.join(" ") },
                value["expires"].as_str().unwrap_or("never"),
                if value["refreshable"] == true { ", renewed automatically" } else { "" },
            ));
        }
        "logout" => out.push_str(&format!("forgot {} stored authorization(s)\n", value["loggedOut"])),
        "auth" if value.get("accessToken").is_some() => {
            out.push_str(&format!("{}\n", value["accessToken"].as_str().unwrap_or("")));
        }
        "auth" => {
            let servers = value["servers"].as_array().cloned().unwrap_or_default();
            if servers.is_empty() {
                out.push_str("no stored authorizations\n");
            }
            for s in servers {
                let scopes: Vec<&str> =
                    s["scopes"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                out.push_str(&format!(
                    "{}\n    issuer {}  client {} ({})\n    scopes {}  expires {}{}\n",
                    s["server"].as_str().unwrap_or("?"),
                    s["issuer"].as_str().unwrap_or("?"),
                    s["clientId"].as_str().unwrap_or("?"),
                    s["registration"].as_str().unwrap_or("?"),
                    if scopes.is_empty() { "-".to_owned() } else { scopes.join(" ") },
                    s["expires"].as_str().unwrap_or("never"),
                    if s["refreshable"] == true { "  (refreshable)" } else { "" },
                ));
            }
        }
        _ => out.push_str(&format!("{}\n", serde_json::to_string_pretty(value).unwrap_or_default())),
    }
    out
}
