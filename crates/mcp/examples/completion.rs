//! A resource template with completion: `weather://{city}` reads one city's forecast, and
//! `completion/complete` offers the cities that start with what the user typed.
//!
//! `cargo run --example completion`.

use mcp::server::{RequestContext, ResourceRequest, Router, ToolError};
use serde::Deserialize;

const CITIES: &[(&str, &str)] =
    &[("paris", "light rain, 14 °C"), ("parma", "sunny, 21 °C"), ("porto", "windy, 17 °C"), ("tokyo", "clear, 19 °C")];

/// The template's variables.
#[derive(Deserialize)]
struct City {
    city: String,
}

async fn forecast(r: ResourceRequest<City>, _cx: RequestContext) -> Result<String, ToolError> {
    let city = r.params.city.to_lowercase();
    CITIES.iter().find(|(name, _)| *name == city).map(|(name, weather)| format!("{name}: {weather}")).ok_or_else(|| {
        ToolError::not_found(format!("no forecast for {city:?}: complete the city to see the ones known"))
    })
}

fn complete_city(typed: &str) -> Vec<String> {
    let typed = typed.to_lowercase();
    CITIES.iter().map(|(name, _)| name.to_string()).filter(|name| name.starts_with(&typed)).collect()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let router = Router::new()
        .info("completion", "1.0.0")
        .resource_template("weather://{city}", "forecast", forecast)
        .complete_resource_argument("weather://{city}", "city", |typed: &str, _: &_| complete_city(typed));
    mcp::serve(router).await
}
