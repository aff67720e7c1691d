//! The hostname allow-list (`EXPOSURE_ALLOWED_HOST_SUFFIXES`), checked before anything else of
//! a pass: a refused hostname withdraws what was published under it.

/// The allowed DNS suffixes, normalised once (lower case, no leading or trailing dot).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostAllowList {
    suffixes: Vec<String>,
}

/// A hostname outside the allow-list; the message names both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostnameRefusal {
    pub hostname: String,
    pub suffixes: Vec<String>,
}

impl HostnameRefusal {
    pub fn message(&self) -> String {
        format!(
            "spec.exposure.hostname {} does not end with any of the operator's allowed host suffixes ({})",
            self.hostname,
            self.suffixes.join(", ")
        )
    }
}

impl HostAllowList {
    /// Empty entries are dropped; no entry at all means no restriction.
    pub fn new(entries: &[String]) -> Self {
        let suffixes = entries
            .iter()
            .map(|s| s.trim().trim_matches('.').to_ascii_lowercase())
            .filter(|s| !s.is_empty())
            .collect();
        HostAllowList { suffixes }
    }

    /// A suffix matches on a label boundary: `example.com` admits `a.example.com` and
    /// `example.com`, never `evilexample.com`. No hostname (clusterIP) is always allowed.
    pub fn check(&self, hostname: Option<&str>) -> Result<(), HostnameRefusal> {
        let Some(hostname) = hostname else {
            return Ok(());
        };
        if self.suffixes.is_empty() {
            return Ok(());
        }
        let host = hostname.trim_end_matches('.').to_ascii_lowercase();
        let allowed = self.suffixes.iter().any(|suffix| {
            host == *suffix
                || host
                    .strip_suffix(suffix.as_str())
                    .is_some_and(|rest| rest.ends_with('.'))
        });
        if allowed {
            Ok(())
        } else {
            Err(HostnameRefusal {
                hostname: hostname.to_owned(),
                suffixes: self.suffixes.clone(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_match_on_label_boundaries() {
        let list =
            HostAllowList::new(&["apps.example.com".into(), ".Example.ORG".into(), "".into()]);
        let cases = [
            (Some("orders.apps.example.com"), true),
            (Some("a.b.apps.example.com"), true),
            (Some("apps.example.com"), true),
            (Some("evilapps.example.com"), false),
            (Some("apps.example.com.evil.io"), false),
            (Some("console.example.org"), true),
            (Some("CONSOLE.EXAMPLE.ORG"), true),
            (Some("console.example.org."), true),
            (Some("example.net"), false),
            (None, true),
        ];
        for (host, allowed) in cases {
            assert_eq!(list.check(host).is_ok(), allowed, "{host:?}");
        }
    }

    #[test]
    fn no_suffix_means_no_restriction() {
        assert!(HostAllowList::new(&[]).check(Some("anything.io")).is_ok());
        assert!(
            HostAllowList::new(&[" ".into()])
                .check(Some("anything.io"))
                .is_ok()
        );
    }
}
