//! CIDR blocks of both families (pure): parsing, containment and overlap, for the ingress
//! peer analysis.

use std::fmt;
use std::net::IpAddr;

/// A network: its first address (host bits cleared) and prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cidr {
    V4 { net: u32, prefix: u8 },
    V6 { net: u128, prefix: u8 },
}

fn mask4(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    }
}

fn mask6(prefix: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(prefix))
    }
}

impl Cidr {
    /// `a.b.c.d/n` or `x::y/n` (host bits are cleared, as the API server reads them); a bare
    /// address is a host route.
    pub fn parse(text: &str) -> Option<Cidr> {
        let (addr, prefix) = match text.trim().split_once('/') {
            Some((a, p)) => (a, Some(p.parse::<u8>().ok()?)),
            None => (text.trim(), None),
        };
        match addr.parse::<IpAddr>().ok()? {
            IpAddr::V4(v4) => {
                let prefix = prefix.unwrap_or(32);
                (prefix <= 32).then(|| Cidr::V4 {
                    net: u32::from(v4) & mask4(prefix),
                    prefix,
                })
            }
            IpAddr::V6(v6) => {
                let prefix = prefix.unwrap_or(128);
                (prefix <= 128).then(|| Cidr::V6 {
                    net: u128::from(v6) & mask6(prefix),
                    prefix,
                })
            }
        }
    }

    pub fn prefix(&self) -> u8 {
        match self {
            Cidr::V4 { prefix, .. } | Cidr::V6 { prefix, .. } => *prefix,
        }
    }

    pub fn contains_addr(&self, addr: IpAddr) -> bool {
        match (self, addr) {
            (Cidr::V4 { net, prefix }, IpAddr::V4(a)) => u32::from(a) & mask4(*prefix) == *net,
            (Cidr::V6 { net, prefix }, IpAddr::V6(a)) => u128::from(a) & mask6(*prefix) == *net,
            _ => false,
        }
    }

    /// Every address of `other` is in `self`.
    pub fn contains(&self, other: &Cidr) -> bool {
        match (self, other) {
            (Cidr::V4 { net, prefix }, Cidr::V4 { net: o, prefix: op }) => {
                prefix <= op && o & mask4(*prefix) == *net
            }
            (Cidr::V6 { net, prefix }, Cidr::V6 { net: o, prefix: op }) => {
                prefix <= op && o & mask6(*prefix) == *net
            }
            _ => false,
        }
    }

    /// The two share an address: for prefixes, one contains the other.
    pub fn overlaps(&self, other: &Cidr) -> bool {
        self.contains(other) || other.contains(self)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cidr::V4 { net, prefix } => write!(f, "{}/{prefix}", std::net::Ipv4Addr::from(*net)),
            Cidr::V6 { net, prefix } => write!(f, "{}/{prefix}", std::net::Ipv6Addr::from(*net)),
        }
    }
}
