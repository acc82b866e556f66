//! HTTP as a client of authorization machinery and of servers: the connector (proxies, TLS with
//! the system's roots and extra ones, errors explained), small bounded fetches of metadata, JWKS
//! and token endpoints, and the TLS configurations. Used by the resource server (`auth`), the
//! client, and the command line; it uses nothing of theirs.

pub mod body;
pub mod connect;
pub mod fetch;
pub mod oauth;
pub mod tls;
