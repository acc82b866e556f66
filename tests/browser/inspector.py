"""`mcp inspect` in a real browser: Debian's chromium, headless, driven by Playwright.

Starts `mcp inspect --no-open -- mcp-example` (and a hostile page on another port), then checks
what a person does on the page: a form filled and a tool called, validation before sending, an
image shown, a progress bar moving, a call cancelled, an elicitation answered, the traffic list,
a replayed call, a subscription's update, a `ui://` app rendered in its sandboxed frame and
calling a tool through the bridge; and that a request without the token, with a foreign Host, or
from a cross-origin page is refused.

    python tests/browser/inspector.py MCP EXAMPLE CONFORMANCE_SERVER [CHROMIUM]

The second half runs against mcp-server-conformance, for what mcp-example does not do: a
sampling request answered on the page, the log stream, audio, embedded resources, a tool error,
and elicitation forms with defaults and every kind of enum.
"""

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from playwright.sync_api import expect, sync_playwright

MCP, EXAMPLE, CONFORMANCE = sys.argv[1], sys.argv[2], sys.argv[3]
CHROMIUM = sys.argv[4] if len(sys.argv) > 4 else "/usr/bin/chromium"
# MCP_INSPECT_LEGACY=1: the same checks with the legacy handshake (initialize, resources/subscribe).
LEGACY = os.environ.get("MCP_INSPECT_LEGACY") == "1"
failures = []


def check(name, fn):
    try:
        fn()
        print(f"PASS  {name}", flush=True)
    except Exception as e:  # noqa: BLE001 - every failure is reported, then the run fails
        failures.append(name)
        print(f"FAIL  {name}: {type(e).__name__}: {e}", flush=True)


def start_inspector(server):
    proc = subprocess.Popen(
        [MCP, "inspect", "--no-open", *(["--legacy"] if LEGACY else []), "--", server],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    line = proc.stdout.readline().strip()
    if not line.startswith("http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"mcp inspect printed no URL: {line!r} {proc.stderr.read()}")
    return proc, line


def status_of(url, headers=None, data=None):
    req = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


# What a person sees: where screenshots go, axe-core (from npm) and what is measured of each tab.
SHOTS = os.environ.get("MCP_SCREENSHOTS", "target/browser-screenshots")
AXE_SOURCE = open(os.environ["AXE_JS"]).read() if os.environ.get("AXE_JS") else ""
if not AXE_SOURCE:
    raise SystemExit("AXE_JS must name axe-core's axe.min.js (scripts/browser.sh installs it)")
AXE_RUN = """axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.map(v => (
  {id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map(n => n.target.join(" "))})))"""
TAB_LOOKS = """(() => {
  const rgb = c => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const behind = el => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c.slice(0, 3); } return [255, 255, 255]; };
  return [...document.querySelectorAll("#tabs button")].map(b => {
    const box = b.getBoundingClientRect(), fg = lum(rgb(getComputedStyle(b).color)), bg = lum(behind(b));
    return {tab: b.textContent.trim(), width: box.width, height: box.height,
      inView: box.top >= 0 && box.left >= 0 && box.bottom <= innerHeight && box.right <= innerWidth,
      contrast: (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05)};
  });
})()"""

proc, URL = start_inspector(EXAMPLE)
BASE, TOKEN = URL.split("/?token=")
PORT = int(BASE.rsplit(":", 1)[1])


def api(path, body=None):
    headers = {"x-inspector-token": TOKEN}
    data = None
    if body is not None:
        headers["content-type"] = "application/json"
        data = json.dumps(body).encode()
    status, text = status_of(BASE + path, headers, data)
    assert status == 200, f"{path}: {status} {text}"
    return json.loads(text)


def until(page, script, timeout=15):
    """Polls a script in the page (the page's CSP forbids eval, so wait_for_function cannot)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if page.evaluate(script):
            return
        time.sleep(0.05)
    raise AssertionError(f"never true: {script}")


def sent_messages():
    return [e["message"] for e in api("/api/events?wait=0")["events"] if e["kind"] == "traffic" and e["dir"] == "out"]


# ---- refusals, without a browser -----------------------------------------------------------

def no_token():
    status, text = status_of(BASE + "/")
    assert status == 401, status
    assert "token" in text
    status, _ = status_of(BASE + "/api/server")
    assert status == 401, status
    status, _ = status_of(BASE + "/?token=" + "0" * len(TOKEN))
    assert status == 401, status


def foreign_host():
    status, _ = status_of(URL, {"Host": f"attacker.example:{PORT}"})
    assert status == 421, status


def foreign_origin():
    status, _ = status_of(
        BASE + "/api/request",
        {"x-inspector-token": TOKEN, "content-type": "application/json", "Origin": "http://attacker.example"},
        json.dumps({"method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}).encode(),
    )
    assert status == 403, status


check("a request without the token is refused (401)", no_token)
check("a request naming another Host is refused (421, no DNS rebinding)", foreign_host)
check("a request from another Origin is refused even with the token (403)", foreign_origin)

# ---- a hostile page on another port --------------------------------------------------------

HOSTILE = f"""<!doctype html><html><body><p id="out">running</p>
<iframe id="framed" src="{URL}"></iframe>
<script>
const results = [];
const target = "{BASE}";
async function attempt(name, init) {{
  try {{ const r = await fetch(target + "/api/request", init); results.push(name + ":" + r.status); }}
  catch (e) {{ results.push(name + ":blocked"); }}
}}
(async () => {{
  const body = JSON.stringify({{method: "tools/call", params: {{name: "echo", arguments: {{text: "cross-origin-attack"}}}}}});
  await attempt("cors", {{method: "POST", headers: {{"content-type": "application/json", "x-inspector-token": "{TOKEN}"}}, body}});
  await attempt("no-cors", {{method: "POST", mode: "no-cors", headers: {{"content-type": "text/plain"}}, body}});
  await attempt("no-cors-token-in-url", {{method: "POST", mode: "no-cors", body}});
  document.getElementById("out").textContent = "done " + results.join(" ");
}})();
</script></body></html>"""


class Hostile(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the stdlib's name
        body = HOSTILE.encode()
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


hostile = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
threading.Thread(target=hostile.serve_forever, daemon=True).start()
HOSTILE_URL = f"http://localhost:{hostile.server_address[1]}/"

# ---- the page ------------------------------------------------------------------------------

with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"] if os.geteuid() == 0 else [])
    page = browser.new_page()
    page.set_default_timeout(15000)
    console = []
    page.on("console", lambda m: console.append(m.text))
    page.on("pageerror", lambda e: console.append(f"page error: {e}"))
    page.goto(URL)

    def server_shown():
        expect(page.locator("#server-name")).to_contain_text("mcp-example")
        if LEGACY:
            expect(page.locator("#server-table")).to_contain_text("legacy")
        else:
            expect(page.locator("#server-table")).to_contain_text("2026-07-28")
            expect(page.locator("#tab-server")).to_contain_text("server/discover")

    check("the page shows the server: name, era, capabilities, server/discover", server_shown)

    def tab_names_visible():
        """Each tab's name as a person sees it: a box on the screen, and text whose colour stands
        out from what is behind it (WCAG contrast, 4.5:1 for text this size)."""
        seen = page.evaluate(TAB_LOOKS)
        assert len(seen) == 9, seen
        hidden = [t for t in seen if t["width"] < 8 or t["height"] < 8 or not t["inView"] or t["contrast"] < 4.5]
        assert not hidden, f"tab names a person cannot read: {hidden}"

    check("every tab's name is on screen, in a colour that stands out from its background", tab_names_visible)

    def every_tab_audited():
        """Each tab opened as a person would (a click on its name), photographed, and audited by
        axe-core: no serious or critical violation (contrast, names of controls, roles...)."""
        os.makedirs(SHOTS, exist_ok=True)
        page.evaluate(AXE_SOURCE + "\n;0")
        problems = []
        for tab in page.locator("#tabs button").all():
            name = tab.get_attribute("data-tab")
            tab.click()
            expect(page.locator(f"#tab-{name}")).to_be_visible()
            page.screenshot(path=os.path.join(SHOTS, f"{'legacy' if LEGACY else 'modern'}-{name}.png"), full_page=True)
            for v in page.evaluate(AXE_RUN):
                if v["impact"] in ("serious", "critical"):
                    problems.append(f"{name}: {v['id']} ({v['impact']}) {v['help']}: {v['nodes']}")
        page.locator('#tabs button[data-tab="server"]').click()
        assert not problems, "\n".join(problems)

    check("every tab is audited by axe-core (no serious violation) and photographed", every_tab_audited)

    def open_tool(name):
        page.click('#tabs button[data-tab="tools"]')
        page.click(f'#tools-list li[data-tool="{name}"]')
        expect(page.locator("#tool-detail h2")).to_have_text(name)

    def form_and_call():
        open_tool("sum")
        page.fill('#tool-form input[name="a"]', "2")
        page.fill('#tool-form input[name="b"]', "3")
        page.click("#tool-call")
        expect(page.locator("#tool-result")).to_contain_text("2 + 3 = 5")

    check("a form built from sum's schema is filled and the tool called", form_and_call)

    def validation_first():
        open_tool("sum")
        page.fill('#tool-form input[name="a"]', "2")
        before = len([m for m in sent_messages() if m.get("method") == "tools/call"])
        page.click("#tool-call")
        expect(page.locator("#tool-errors")).to_contain_text("required")
        time.sleep(0.3)
        after = len([m for m in sent_messages() if m.get("method") == "tools/call"])
        assert after == before, "a call that fails its schema was sent"

    check("a missing required argument is reported from the schema before sending", validation_first)

    def image_shown():
        open_tool("pixel")
        page.click("#tool-call")
        image = page.locator("#tool-result img.result-image")
        expect(image).to_be_visible()
        until(page, "() => document.querySelector('#tool-result img.result-image').naturalWidth === 16")

    check("an image result is shown (a 16x16 PNG decoded by the browser)", image_shown)

    def progress_moves():
        open_tool("wait")
        page.fill('#tool-form input[name="ms"]', "2000")
        page.click("#tool-call")
        until(page, "() => { const p = document.querySelector('#tool-result progress'); return !!p && p.value > 2; }")
        seen = page.evaluate("document.querySelector('#tool-result progress').value")
        assert seen > 2, seen
        expect(page.locator("#tool-result")).to_contain_text("waited 2000 ms", timeout=20000)

    check("a progress bar moves with notifications/progress, then the result comes", progress_moves)

    def cancel_call():
        open_tool("wait")
        page.fill('#tool-form input[name="ms"]', "30000")
        page.click("#tool-call")
        until(page, "() => { const p = document.querySelector('#tool-result progress'); return !!p && p.value > 0; }")
        page.click("#tool-cancel")
        expect(page.locator("#tool-result .call-error")).to_contain_text("cancelled")
        deadline = time.time() + 5
        while time.time() < deadline:
            if any(m.get("method") == "notifications/cancelled" for m in sent_messages()):
                return
            time.sleep(0.2)
        raise AssertionError("no notifications/cancelled went to the server")

    check("the cancel button stops a call (notifications/cancelled sent)", cancel_call)

    def task_followed():
        open_tool("countdown")
        page.fill('#tool-form input[name="ms"]', "800")
        page.click("#tool-call")
        if LEGACY:  # a legacy client gets the job tools instead of a task
            expect(page.locator("#tool-result")).to_contain_text("Started job", timeout=20000)
            return
        expect(page.locator("#tool-result")).to_contain_text("countdown over", timeout=20000)
        if not LEGACY:
            assert any(m.get("method") == "tasks/get" or m.get("method") == "tasks/result" for m in sent_messages()), "the call did not become a task"

    check("a call that becomes a task is followed to its end", task_followed)

    def elicitation_answered():
        open_tool("confirm")
        page.fill('#tool-form input[name="question"]', "Proceed?")
        page.click("#tool-call")
        question = page.locator('.question[data-question="elicitation"]')
        expect(question).to_contain_text("Proceed?")
        question.locator('input[name="yes"]').check()
        question.locator(".elicitation-accept").click()
        expect(page.locator("#tool-result")).to_contain_text("the user said yes")
        expect(question).to_have_count(0)

    check("an elicitation is answered from the page", elicitation_answered)

    def traffic_listed():
        page.click('#tabs button[data-tab="traffic"]')
        rows = page.locator("#traffic tbody tr")
        expect(rows.filter(has_text="tools/call").first).to_be_visible()
        expect(rows.filter(has_text="initialize" if LEGACY else "server/discover").first).to_be_visible()
        page.fill("#traffic-filter", "notifications/progress")
        expect(rows.first).to_contain_text("notifications/progress")
        assert all("notifications/progress" in t for t in rows.all_inner_texts()), "the filter let other messages through"
        page.fill("#traffic-filter", "")
        lines = urllib.request.urlopen(urllib.request.Request(BASE + "/api/traffic.jsonl", headers={"x-inspector-token": TOKEN})).read().decode().splitlines()
        events = [json.loads(line) for line in lines]
        assert any(e["message"].get("method") == "tools/call" for e in events)
        assert {e["dir"] for e in events} == {"in", "out"}

    check("the traffic lists the messages both ways, filters them, exports JSON lines", traffic_listed)

    def replayed():
        page.click('#tabs button[data-tab="traffic"]')
        page.fill("#traffic-filter", '"name":"sum"')
        page.locator("#traffic tbody tr").filter(has_text="tools/call").first.click()
        page.click("#traffic-replay")
        params = json.loads(page.input_value("#replay-params"))
        assert params["name"] == "sum", params
        params["arguments"] = {"a": 2, "b": 10}
        page.fill("#replay-params", json.dumps(params))
        page.click("#replay-send")
        expect(page.locator("#replay-result")).to_contain_text("2 + 10 = 12")
        page.fill("#traffic-filter", "")

    check("a call from the traffic is edited and replayed", replayed)

    def subscription():
        page.click('#tabs button[data-tab="resources"]')
        page.click('#resources-list li[data-resource="example://about"]')
        page.click("#resource-detail button:has-text('Read')")
        expect(page.locator("#resource-contents")).to_contain_text("demonstration server")
        page.click("#resource-detail button:has-text('Subscribe')")
        expect(page.locator("#resource-detail")).to_contain_text("Subscribed")
        api("/api/request", {"method": "tools/call", "params": {"name": "announce", "arguments": {"uri": "example://about"}}})
        expect(page.locator("#resource-updates")).to_contain_text("example://about changed")

    check("a resource is read and a subscription shows its update live", subscription)

    def app_in_frame():
        open_tool("counter")
        page.fill('#tool-form input[name="start"]', "2")
        page.click("#tool-call")
        frame_el = page.locator("#app-frame")
        expect(frame_el).to_have_attribute("sandbox", "allow-scripts")
        frame = page.frame_locator("#app-frame")
        expect(frame.locator("#value")).to_have_text("2")
        frame.locator("#add").click()
        expect(frame.locator("#value")).to_have_text("3")
        assert any(m.get("method") == "tools/call" and m["params"].get("name") == "sum" and m["params"]["arguments"] == {"a": 2, "b": 1} for m in sent_messages())
        # No same-origin: the frame cannot reach the inspector's page or its token.
        origin = page.frames[-1].evaluate("() => { try { return parent.document.title; } catch (e) { return 'denied'; } }")
        assert origin == "denied", origin

    check("a ui:// app renders in a sandboxed frame and calls a tool through the bridge", app_in_frame)

    def prompt_completed():
        page.click('#tabs button[data-tab="prompts"]')
        page.click('#prompts-list li[data-prompt="greet"]')
        page.fill('#prompt-detail input[name="name"]', "A")
        until(page, "() => document.querySelectorAll('#prompt-complete-name option').length === 2")
        values = page.evaluate("() => [...document.querySelectorAll('#prompt-complete-name option')].map(o => o.value)")
        assert values == ["Ada", "Alan"], values
        page.fill('#prompt-detail input[name="name"]', "Ada")
        page.click("#prompt-detail button:has-text('Get')")
        expect(page.locator("#prompt-result")).to_contain_text("greeting for Ada")

    check("a prompt's argument is completed by the server, and the prompt rendered", prompt_completed)

    def template_completed():
        page.click('#tabs button[data-tab="resources"]')
        page.click('#templates-list li[data-template="example://greeting/{name}"]')
        page.fill('#resource-detail input[name="name"]', "G")
        until(page, "() => document.querySelectorAll('#complete-name option').length === 1")
        assert page.evaluate("() => document.querySelector('#complete-name option').value") == "Grace"
        page.fill('#resource-detail input[name="name"]', "Grace")
        page.click("#resource-detail button:has-text('Read')")
        expect(page.locator("#resource-contents")).to_contain_text("Hello, Grace!")

    check("a template's variable is completed by the server, and the resource read", template_completed)

    def saved_call():
        open_tool("echo")
        page.fill('#tool-form input[name="text"]', "kept for later")
        page.click("#tool-detail button:has-text('Save call')")
        page.click('#tabs button[data-tab="saved"]')
        item = page.locator("#saved-list li").filter(has_text="kept for later").first
        item.locator("button:has-text('edit and send')").click()
        params = json.loads(item.locator("#replay-params").input_value())
        params["arguments"]["text"] = "edited, then sent"
        item.locator("#replay-params").fill(json.dumps(params))
        item.locator("#replay-send").click()
        expect(item.locator("#replay-result")).to_contain_text("edited, then sent")

    check("a call is saved, edited and sent again from the saved calls", saved_call)

    def cross_origin_page():
        marker = "cross-origin-attack"
        other = browser.new_page()
        other.goto(HOSTILE_URL)
        expect(other.locator("#out")).to_contain_text("done", timeout=15000)
        outcome = other.inner_text("#out")
        assert "cors:blocked" in outcome or "cors:403" in outcome, outcome
        time.sleep(0.5)
        assert not any(marker in json.dumps(m) for m in sent_messages()), "the hostile page reached the server"
        # Framing is refused too (frame-ancestors 'none', X-Frame-Options: DENY).
        framed = other.frames[1] if len(other.frames) > 1 else None
        text = framed.evaluate("() => document.body ? document.body.innerText : ''") if framed else ""
        assert "mcp inspect" not in text, "the inspector was framed by another site"
        other.close()

    check("a cross-origin page can neither call the API nor frame the inspector", cross_origin_page)

    errors = [c for c in console if c.startswith("page error")]
    check("the page ran without script errors", lambda: (_ for _ in ()).throw(AssertionError(errors)) if errors else None)
    browser.close()

def stop(proc):
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        failures.append("mcp inspect did not stop on Ctrl-C")


stop(proc)
hostile.shutdown()

# ---- the conformance server: sampling, logs, audio, embedded resources, errors, enums --------

proc, URL = start_inspector(CONFORMANCE)
with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"] if os.geteuid() == 0 else [])
    page = browser.new_page()
    page.set_default_timeout(15000)
    page.goto(URL)
    expect(page.locator("#server-name")).to_contain_text("conformance")

    def open_tool(name):
        page.click('#tabs button[data-tab="tools"]')
        page.click(f'#tools-list li[data-tool="{name}"]')
        expect(page.locator("#tool-detail h2")).to_have_text(name)

    def sampling_answered():
        open_tool("test_sampling")
        page.fill('#tool-form input[name="prompt"]', "Say hello")
        page.click("#tool-call")
        question = page.locator('.question[data-question="sampling"]')
        expect(question).to_contain_text("Say hello")
        question.locator("textarea.sampling-reply").fill("hello from a person")
        question.locator("button:has-text('Send as the model')").click()
        expect(page.locator("#tool-result")).to_contain_text("LLM response: hello from a person")

    check("a sampling request is answered from the page, as the model", sampling_answered)

    def log_stream():
        open_tool("test_tool_with_logging")
        page.click("#tool-call")
        expect(page.locator("#tool-result")).to_contain_text("executed successfully")
        page.click('#tabs button[data-tab="log"]')
        expect(page.locator("#log")).to_contain_text("Tool execution started")
        expect(page.locator("#log")).to_contain_text("Tool execution completed")
        # From warning up, the info messages stop.
        page.select_option("#log-level", "warning")
        expect(page.locator("#log")).to_contain_text("log level: warning")
        page.click("#log-clear")
        open_tool("test_tool_with_logging")
        page.click("#tool-call")
        expect(page.locator("#tool-result")).to_contain_text("executed successfully")
        page.click('#tabs button[data-tab="log"]')
        time.sleep(0.3)
        assert "Tool execution started" not in page.inner_text("#log"), page.inner_text("#log")

    check("the server's log messages stream to the log tab", log_stream)

    def audio_and_embedded():
        open_tool("test_audio_content")
        page.click("#tool-call")
        expect(page.locator("#tool-result audio")).to_have_count(1)
        open_tool("test_embedded_resource")
        page.click("#tool-call")
        expect(page.locator("#tool-result .block-resource")).to_contain_text("test://embedded-resource")

    check("audio and embedded resources are shown by type", audio_and_embedded)

    def tool_error():
        open_tool("test_error_handling")
        page.click("#tool-call")
        expect(page.locator("#tool-result")).to_contain_text("isError: true")
        expect(page.locator("#tool-result")).to_contain_text("intentionally returns an error")

    check("a tool error (isError) is shown as one", tool_error)

    def defaults_form():
        open_tool("test_elicitation_sep1034_defaults")
        page.click("#tool-call")
        question = page.locator('.question[data-question="elicitation"]')
        expect(question.locator('input[name="name"]')).to_have_value("John Doe")
        expect(question.locator('input[name="age"]')).to_have_value("30")
        assert question.locator('input[name="verified"]').is_checked()
        question.locator('input[name="age"]').fill("31")
        question.locator(".elicitation-accept").click()
        result = page.locator("#tool-result")
        expect(result).to_contain_text("action=accept")
        expect(result).to_contain_text('"age":31')
        expect(result).to_contain_text('"status":"active"')

    check("an elicitation form starts from the schema's defaults", defaults_form)

    def enums_form():
        open_tool("test_elicitation_sep1330_enums")
        page.click("#tool-call")
        question = page.locator('.question[data-question="elicitation"]')
        question.locator('select[name="titledSingle"]').select_option(label="Second Option")
        question.locator('select[name="legacyEnum"]').select_option(label="Option Three")
        question.locator('select[name="untitledSingle"]').select_option(label="option1")
        question.locator('input[name="titledMulti[]"][value=\'"value1"\']').check()
        question.locator('input[name="titledMulti[]"][value=\'"value3"\']').check()
        question.locator('input[name="untitledMulti[]"][value=\'"option2"\']').check()
        question.locator(".elicitation-accept").click()
        result = page.locator("#tool-result")
        expect(result).to_contain_text('"titledSingle":"value2"')
        expect(result).to_contain_text('"legacyEnum":"opt3"')
        expect(result).to_contain_text('"titledMulti":["value1","value3"]')

    check("enum forms: titled and untitled, single and multiple, legacy enumNames", enums_form)

    def roots_chosen():
        page.click('#tabs button[data-tab="roots"]')
        page.fill("#root-uri", "file:///tmp/chosen-project")
        page.fill("#root-name", "chosen")
        page.click("#root-add")
        expect(page.locator("#roots-list")).to_contain_text("file:///tmp/chosen-project")
        page.click("#roots-save")
        expect(page.locator("#status")).to_contain_text("offering 1 root")
        open_tool("test_input_required_result_list_roots")
        page.click("#tool-call")
        expect(page.locator("#tool-result")).to_contain_text("Client roots: file:///tmp/chosen-project")

    if not LEGACY:  # the conformance server asks for roots only on 2026-07-28
        check("roots are chosen on the page, and the server sees exactly those", roots_chosen)
    browser.close()
stop(proc)
print(f"{'FAILED' if failures else 'ok'}: {len(failures)} failed", flush=True)
sys.exit(1 if failures else 0)
