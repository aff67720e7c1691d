//! The client address a decision is logged with: the TCP peer, or the address a trusted proxy
//! puts last in `X-Forwarded-For` — only while the operator granted the trust
//! (`CONSOLE_TRUST_X_FORWARDED_FOR=true`) and only when the peer is within
//! `CONSOLE_TRUSTED_PROXIES`. Nothing fails open: no CIDRs, no trust.

use std::net::{IpAddr, SocketAddr};

use http::HeaderMap;
use pgtoolbox_operator::Cidr;

/// Whom `X-Forwarded-For` is believed from.
#[derive(Clone, Debug, Default)]
pub struct ProxyTrust {
    pub enabled: bool,
    pub proxies: Vec<Cidr>,
}

impl ProxyTrust {
    /// The trust the environment grants; CIDRs that do not parse are an error.
    pub fn new(enabled: bool, cidrs: &[String]) -> Result<Self, String> {
        let proxies = cidrs
            .iter()
            .map(|c| Cidr::parse(c).ok_or_else(|| format!("not a CIDR: {c:?}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { enabled, proxies })
    }

    /// The address of the client behind `peer`, and whether it came from the header.
    pub fn client(&self, peer: SocketAddr, headers: &HeaderMap) -> (IpAddr, bool) {
        let peer_ip = peer.ip().to_canonical();
        if !self.enabled || !self.proxies.iter().any(|c| c.contains_addr(peer_ip)) {
            return (peer_ip, false);
        }
        // The entry the trusted proxy appended is the last one; earlier ones are the
        // client's own say.
        let last = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|a| a.trim().parse::<IpAddr>().ok())
            .next_back();
        match last {
            Some(ip) => (ip.to_canonical(), true),
            None => (peer_ip, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", xff.parse().unwrap());
        h
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_peers_while_granted() {
        let proxy: SocketAddr = "10.1.2.3:5555".parse().unwrap();
        let stranger: SocketAddr = "192.168.9.9:5555".parse().unwrap();
        let h = headers("6.6.6.6, 203.0.113.7");
        let trust = ProxyTrust::new(true, &["10.0.0.0/8".into()]).unwrap();
        assert_eq!(
            trust.client(proxy, &h),
            ("203.0.113.7".parse().unwrap(), true)
        );
        assert_eq!(trust.client(stranger, &h), (stranger.ip(), false));
        let off = ProxyTrust::new(false, &["10.0.0.0/8".into()]).unwrap();
        assert_eq!(off.client(proxy, &h), (proxy.ip(), false));
        let none = ProxyTrust::new(true, &[]).unwrap();
        assert_eq!(none.client(proxy, &h), (proxy.ip(), false));
        assert_eq!(trust.client(proxy, &HeaderMap::new()), (proxy.ip(), false));
        assert!(ProxyTrust::new(true, &["nonsense".into()]).is_err());
    }
}
