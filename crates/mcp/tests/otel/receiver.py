"""A small OTLP/HTTP receiver for the telemetry test: decodes what it is sent with the
OpenTelemetry project's own protobuf definitions (PyPI `opentelemetry-proto`) and prints each span
as a JSON line on stdout, attribute values with their protobuf type, and for each metrics request
the histograms' counts by `mcp.method.name`.

Usage: receiver.py [ok|stall]. Prints `port N` first. In `stall` mode every request is read and
never answered (a collector that hangs).
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
LOCK = threading.Lock()


def emit(record):
    with LOCK:
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    value = getattr(any_value, kind) if kind else None
    if kind == "array_value":
        value = [value_of(v)["value"] for v in any_value.array_value.values]
    return {"type": kind, "value": value}


def attributes(pairs):
    return {kv.key: value_of(kv.value) for kv in pairs}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        emit({
            "request": self.path,
            "contentType": self.headers.get("Content-Type"),
            "testHeader": self.headers.get("X-Otel-Test"),
            "bytes": len(body),
        })
        if MODE == "stall":
            threading.Event().wait()
        if self.path == "/v1/traces":
            request = trace_service_pb2.ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource_spans in request.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        emit({
                            "span": span.name,
                            "service": resource.get("service.name", {}).get("value"),
                            "scope": scope_spans.scope.name,
                            "traceId": span.trace_id.hex(),
                            "spanId": span.span_id.hex(),
                            "parentSpanId": span.parent_span_id.hex(),
                            "kind": span.kind,
                            "start": span.start_time_unix_nano,
                            "end": span.end_time_unix_nano,
                            "statusCode": span.status.code,
                            "statusMessage": span.status.message,
                            "attributes": attributes(span.attributes),
                            "links": [{"traceId": l.trace_id.hex(), "spanId": l.span_id.hex()} for l in span.links],
                        })
            answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        elif self.path == "/v1/metrics":
            request = metrics_service_pb2.ExportMetricsServiceRequest()
            request.ParseFromString(body)
            for resource_metrics in request.resource_metrics:
                resource = attributes(resource_metrics.resource.attributes)
                counts = {}
                for scope_metrics in resource_metrics.scope_metrics:
                    for metric in scope_metrics.metrics:
                        if metric.WhichOneof("data") != "histogram":
                            continue
                        by_method = counts.setdefault(metric.name, {})
                        for point in metric.histogram.data_points:
                            method = attributes(point.attributes).get("mcp.method.name", {}).get("value")
                            by_method[method] = by_method.get(method, 0) + point.count
                emit({"metrics": counts, "service": resource.get("service.name", {}).get("value")})
            answer = metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
emit({"port": server.server_address[1]})
server.serve_forever()
