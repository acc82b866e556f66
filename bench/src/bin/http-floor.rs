//! The no-framework floor for HTTP: hyper, one POST route, serde_json parse of the body and a
//! canned JSON-RPC response carrying the request's id. No sessions, no routing, no validation.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};

async fn handle(request: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let id =
        serde_json::from_slice::<serde_json::Value>(&body).ok().and_then(|v| v.get("id").cloned()).unwrap_or_default();
    let response =
        serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "hello"}]}});
    let mut r = Response::new(Full::new(Bytes::from(serde_json::to_vec(&response).unwrap_or_default())));
    r.headers_mut().insert("content-type", "application/json".parse().unwrap());
    Ok(r)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let addr = std::env::args().nth(1).expect("usage: http-floor ADDR");
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("bind");
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, hyper::service::service_fn(handle))
                .await;
        });
    }
}
