"""A scripted Anthropic Messages API on loopback, the model of a real host in the interop tests
(Claude Code, `claude -p`, pointed here by ANTHROPIC_BASE_URL).

    python scripted-anthropic.py TOOL ARGUMENTS_JSON

Prints its URL on the first line, then serves until killed. To a request that offers TOOL (by
its name in `tools`) and carries no result of it yet, it answers with a call of TOOL with
ARGUMENTS_JSON; to one that carries the tool's result, with the text "RESULT: " and that
result, so the host's final answer shows what the MCP server said. Anything else (the host's
own side requests) gets a short text. Streaming (`"stream": true`) or not, as asked. Every
request's path and whether it offered TOOL are logged to stderr.
"""

import http.server
import json
import sys
import threading

TOOL, ARGUMENTS = sys.argv[1], json.loads(sys.argv[2])


def tool_result(messages):
    """The text of the last tool_result block in the conversation, if any."""
    for message in reversed(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, str):
                    return inner
                return "".join(part.get("text", "") for part in inner or [] if isinstance(part, dict))
    return None


def answer(body):
    """The content blocks and stop reason of the scripted turn."""
    offered = any(tool.get("name") == TOOL for tool in body.get("tools") or [])
    result = tool_result(body.get("messages") or [])
    if result is not None:
        return [{"type": "text", "text": "RESULT: " + result}], "end_turn", offered
    if offered:
        call = {"type": "tool_use", "id": "toolu_scripted_1", "name": TOOL, "input": ARGUMENTS}
        return [call], "tool_use", offered
    return [{"type": "text", "text": "ok"}], "end_turn", offered


def events(blocks, stop):
    """The blocks as the Messages API streams them."""
    yield "message_start", {"type": "message_start", "message": {
        "id": "msg_scripted", "type": "message", "role": "assistant", "content": [], "model": "scripted",
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "text_delta", "text": block["text"]}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {**block, "input": {}}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 5}}
    yield "message_stop", {"type": "message_stop"}


class Api(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 - the stdlib's name
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            return self.json({"input_tokens": 10})
        if not path.endswith("/v1/messages"):
            return self.json({"type": "error", "error": {"type": "not_found_error", "message": path}}, 404)
        blocks, stop, offered = answer(body)
        names = [tool.get("name") for tool in body.get("tools") or []]
        print(f"scripted: {path} offered={offered} stop={stop} tools={names}", file=sys.stderr, flush=True)
        if not body.get("stream"):
            return self.json({"id": "msg_scripted", "type": "message", "role": "assistant", "model": "scripted",
                              "content": blocks, "stop_reason": stop, "stop_sequence": None,
                              "usage": {"input_tokens": 10, "output_tokens": 5}})
        payload = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events(blocks, stop))
        self.send_bytes(payload.encode(), "text/event-stream")

    def do_GET(self):  # noqa: N802
        self.json({"data": [], "has_more": False})

    def json(self, value, status=200):
        self.send_bytes(json.dumps(value).encode(), "application/json", status)

    def send_bytes(self, data, kind, status=200):
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Api)
print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
threading.Event().wait()
