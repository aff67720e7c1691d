//! What a served request may name as its host, and the warning for a listen beyond loopback.
//!
//! The sim has no authentication worth the name (a request without credentials is the admin),
//! so a web page must not reach it through DNS rebinding: a name the page's author controls,
//! re-pointed at 127.0.0.1, would make the browser send the page's requests here as same-origin.
//! Such a request still names the author's host in its `Host` header. The server therefore
//! answers only requests naming an IP address (a rebinding needs a name), `localhost`, or a
//! name it was told to accept (`SimConfig::accept_hosts`); every other request gets what
//! `kubectl proxy` answers a host outside its `--accept-hosts`: 403 with the plain-text body
//! `Forbidden`.

use std::net::{IpAddr, SocketAddr};

use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

/// The host part of a `Host` header or authority (`name`, `name:port`, `1.2.3.4:80`,
/// `[::1]:8080`), lower case and without a final dot.
fn host_part(authority: &str) -> &str {
    let host = if let Some(rest) = authority.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
            _ => authority,
        }
    };
    host.strip_suffix('.').unwrap_or(host)
}

/// Whether a request naming `authority` is for this server.
pub fn accepted(authority: &str, accept_hosts: &[String]) -> bool {
    let host = host_part(authority.trim());
    if host.is_empty() {
        return false;
    }
    host.parse::<IpAddr>().is_ok()
        || host.eq_ignore_ascii_case("localhost")
        || accept_hosts
            .iter()
            .any(|name| name.trim_end_matches('.').eq_ignore_ascii_case(host))
}

/// The host a request names: its `Host` header, else the authority of its URI (HTTP/2).
fn named_host<'a>(headers: &'a HeaderMap, uri: &'a Uri) -> Option<&'a str> {
    match headers.get(header::HOST) {
        Some(value) => value.to_str().ok(),
        None => uri.authority().map(|a| a.as_str()),
    }
}

/// `None` when the request may be served, else the answer that refuses it.
pub fn refusal(headers: &HeaderMap, uri: &Uri, accept_hosts: &[String]) -> Option<Response> {
    if named_host(headers, uri).is_some_and(|host| accepted(host, accept_hosts)) {
        return None;
    }
    tracing::debug!(
        host = named_host(headers, uri).unwrap_or(""),
        path = uri.path(),
        "refused a request for a host this server is not"
    );
    let mut response = (StatusCode::FORBIDDEN, "Forbidden\n").into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    Some(response)
}

/// What to say when the server listens on `listen`: nothing on loopback, a warning otherwise.
pub fn exposure_warning(listen: SocketAddr) -> Option<String> {
    if listen.ip().is_loopback() {
        return None;
    }
    Some(format!(
        "the sim listens on {listen}, beyond loopback: it has no real authentication (a request \
         without credentials acts as the cluster admin), so anyone who can reach this address \
         can read and change everything in it; listen on 127.0.0.1 unless every peer on that \
         network is trusted"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_localhost_and_accepted_names_pass_other_names_do_not() {
        let names = vec!["sim.example.test".to_string()];
        for ok in [
            "127.0.0.1:6443",
            "127.0.0.1",
            "[::1]:6443",
            "10.1.2.3:80",
            "localhost:6443",
            "LOCALHOST",
            "localhost.:1",
            "sim.example.test:6443",
            "SIM.example.test",
        ] {
            assert!(accepted(ok, &names), "{ok}");
        }
        for refused in [
            "evil.example:6443",
            "localhost.evil.example",
            "127.0.0.1.nip.io:6443",
            "",
            ":6443",
            "[]:1",
        ] {
            assert!(!accepted(refused, &names), "{refused}");
        }
    }

    #[test]
    fn a_request_without_a_host_is_refused() {
        let uri: Uri = "/api".parse().unwrap();
        let refused = refusal(&HeaderMap::new(), &uri, &[]).expect("refused");
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:1"));
        assert!(refusal(&headers, &uri, &[]).is_none());
        let absolute: Uri = "http://localhost:1/api".parse().unwrap();
        assert!(refusal(&HeaderMap::new(), &absolute, &[]).is_none());
    }

    #[test]
    fn only_a_listen_beyond_loopback_is_warned_about() {
        assert!(exposure_warning("127.0.0.1:0".parse().unwrap()).is_none());
        assert!(exposure_warning("[::1]:0".parse().unwrap()).is_none());
        let warned = exposure_warning("0.0.0.0:6443".parse().unwrap()).expect("warned");
        assert!(warned.contains("0.0.0.0:6443"), "{warned}");
    }
}
