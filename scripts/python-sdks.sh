# The Python SDK servers the tests run, each in a virtual environment of its own under $CACHE
# (made once): sourced by scripts/test.sh (for the cargo tests, which read MCP_TEST_PY_SDK1) and by
# tests/interop/deployed.sh.
#
# mcp 1.30.0 with FastMCP 2.14.7: the Python SDK 1.x as most servers deployed today run it.
PYFAST="$CACHE/py-fastmcp-2.14.7/bin/python"
if ! "$PYFAST" -c 'import fastmcp, mcp.server.fastmcp' 2>/dev/null; then
    python3 -m venv "$CACHE/py-fastmcp-2.14.7" >&2
    "$CACHE/py-fastmcp-2.14.7/bin/pip" install -q --disable-pip-version-check "fastmcp==2.14.7" "mcp==1.30.0" >&2
fi
export MCP_TEST_PY_SDK1="$PYFAST"

# opentelemetry-proto 1.45.2: the OpenTelemetry project's own protobuf definitions, with which the
# telemetry test's OTLP receiver (crates/mcp/tests/otel/receiver.py) decodes what it is sent; and
# prometheus-client 0.26.0, whose parser reads the test server's /metrics.
PYOTEL="$CACHE/py-otel-proto-1.45.2/bin/python"
if ! "$PYOTEL" -c 'import opentelemetry.proto.collector.trace.v1.trace_service_pb2, prometheus_client.parser' 2>/dev/null; then
    python3 -m venv "$CACHE/py-otel-proto-1.45.2" >&2
    "$CACHE/py-otel-proto-1.45.2/bin/pip" install -q --disable-pip-version-check "opentelemetry-proto==1.45.2" "prometheus-client==0.26.0" >&2
fi
export MCP_TEST_OTEL_PY="$PYOTEL"

# mcp 2.3.0 (the Python SDK v2, which wraps every message it handles in a span by the MCP
# conventions) with the OpenTelemetry SDK and its OTLP/HTTP exporter: the stdio server of the
# four-process trace test (crates/mcp-cli/tests/otel.rs, tests/fixtures/py-sdk/traced_stdio.py).
PYSDK2="$CACHE/py-mcp-2.3.0-otel/bin/python"
if ! "$PYSDK2" -c 'import mcp.server.mcpserver, opentelemetry.sdk.trace, opentelemetry.exporter.otlp.proto.http.trace_exporter' 2>/dev/null; then
    python3 -m venv "$CACHE/py-mcp-2.3.0-otel" >&2
    "$CACHE/py-mcp-2.3.0-otel/bin/pip" install -q --disable-pip-version-check "mcp==2.3.0" \
        "opentelemetry-sdk==1.45.2" "opentelemetry-exporter-otlp-proto-http==1.45.2" >&2
fi
export MCP_TEST_PY_SDK2_OTEL="$PYSDK2"
