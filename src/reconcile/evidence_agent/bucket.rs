//! `destinationPath` of a supported ObjectStore: `s3://<bucket>[/<prefix>]`, the bucket named as
//! S3 states it for general purpose buckets.

use std::fmt;

/// Why a bucket name is not one S3 accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BucketNameError {
    Length(usize),
    Character(char),
    Edge,
    AdjacentDots,
    IpAddress,
    ReservedPrefix(&'static str),
    ReservedSuffix(&'static str),
}

impl fmt::Display for BucketNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Length(n) => write!(f, "it has {n} characters (3 to 63 allowed)"),
            Self::Character(c) => write!(
                f,
                "it contains {c:?} (only lowercase letters, digits, '.' and '-')"
            ),
            Self::Edge => write!(f, "it must begin and end with a letter or digit"),
            Self::AdjacentDots => write!(f, "it has two adjacent periods"),
            Self::IpAddress => write!(f, "it is formatted as an IP address"),
            Self::ReservedPrefix(p) => write!(f, "it starts with the reserved prefix {p:?}"),
            Self::ReservedSuffix(s) => write!(f, "it ends with the reserved suffix {s:?}"),
        }
    }
}

const RESERVED_PREFIXES: [&str; 3] = ["xn--", "sthree-", "amzn-s3-demo-"];
const RESERVED_SUFFIXES: [&str; 5] = ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"];

/// The S3 naming rules of a general purpose bucket.
pub fn validate_bucket_name(name: &str) -> Result<(), BucketNameError> {
    let len = name.chars().count();
    if !(3..=63).contains(&len) {
        return Err(BucketNameError::Length(len));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '.' || *c == '-'))
    {
        return Err(BucketNameError::Character(c));
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !alnum(name.chars().next()) || !alnum(name.chars().last()) {
        return Err(BucketNameError::Edge);
    }
    if name.contains("..") {
        return Err(BucketNameError::AdjacentDots);
    }
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return Err(BucketNameError::IpAddress);
    }
    if let Some(p) = RESERVED_PREFIXES.iter().find(|p| name.starts_with(**p)) {
        return Err(BucketNameError::ReservedPrefix(p));
    }
    if let Some(s) = RESERVED_SUFFIXES.iter().find(|s| name.ends_with(**s)) {
        return Err(BucketNameError::ReservedSuffix(s));
    }
    Ok(())
}

/// Splits `s3://<bucket>[/<prefix>]` into bucket and prefix (without the leading `/`; empty
/// when absent), or says in a sentence why the path is not one.
pub fn parse_destination(path: &str) -> Result<(&str, &str), String> {
    let Some(rest) = path.strip_prefix("s3://") else {
        return Err(format!(
            "destinationPath {path:?} does not start with s3://"
        ));
    };
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    validate_bucket_name(bucket).map_err(|e| {
        format!("destinationPath {path:?}: the bucket name {bucket:?} is invalid: {e}")
    })?;
    if prefix.starts_with('/') || prefix.contains("//") {
        return Err(format!(
            "destinationPath {path:?}: the prefix has an empty path segment"
        ));
    }
    Ok((bucket, prefix))
}
