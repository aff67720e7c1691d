//! Reading one server's barman-cloud layout from S3: list and get requests only.
//!
//! `<prefix>/<serverName>/base/` is listed one level deep (one directory per backup, as
//! barman-cloud-backup-list does) and each `backup.info` is read; `<prefix>/<serverName>/wals/`
//! is listed as a stream, page by page, each object folded into the catalog and dropped.

use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{
    BackoffConfig, Certificate, ClientOptions, ObjectStore, ObjectStoreExt, RetryConfig,
};

use crate::catalog::{Catalog, parse_backup_info};
use crate::config::Config;

/// How many `backup.info` files are read at once.
const CONCURRENT_GETS: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot read the endpoint CA {path}: {source}")]
    EndpointCa {
        path: String,
        source: std::io::Error,
    },
    #[error("the endpoint CA {path} holds no usable certificate: {source}")]
    EndpointCaPem {
        path: String,
        source: object_store::Error,
    },
    #[error("cannot set up the S3 client: {0}")]
    Client(object_store::Error),
    #[error("listing {url} failed: {}", Answer::of(source))]
    List {
        url: String,
        source: object_store::Error,
    },
    #[error("reading {url} failed: {}", Answer::of(source))]
    Get {
        url: String,
        source: object_store::Error,
    },
}

impl StoreError {
    /// Why the read failed, as the `reason` label of the read-error counter.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::EndpointCa { .. } | Self::EndpointCaPem { .. } | Self::Client(_) => "setup",
            Self::List { source, .. } | Self::Get { source, .. } => Answer::of(source).reason(),
        }
    }
}

/// What the store answered a request, in words: an S3 error response's code and message,
/// with what it means for the ObjectStore's settings; else the client's own error (no
/// answer: the store was not reached).
pub enum Answer {
    Refused { code: String, message: String },
    Other(String),
}

impl Answer {
    pub fn of(error: &object_store::Error) -> Self {
        let text = error.to_string();
        let tag = |name: &str| {
            let open = format!("<{name}>");
            let start = text.find(&open)? + open.len();
            let end = text[start..].find(&format!("</{name}>"))?;
            Some(text[start..start + end].to_owned())
        };
        match tag("Code") {
            Some(code) => Self::Refused {
                message: tag("Message").unwrap_or_default(),
                code,
            },
            None => Self::Other(text),
        }
    }

    pub fn reason(&self) -> &'static str {
        match self {
            Self::Refused { code, .. } => match code.as_str() {
                "SignatureDoesNotMatch"
                | "InvalidAccessKeyId"
                | "InvalidToken"
                | "ExpiredToken" => "credentials_refused",
                "AccessDenied" => "access_denied",
                "NoSuchBucket" => "no_such_bucket",
                _ => "refused",
            },
            Self::Other(text) if text.contains("error sending request") => "unreachable",
            Self::Other(_) => "other",
        }
    }
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused { code, message } => {
                let meaning = match code.as_str() {
                    "SignatureDoesNotMatch" => {
                        "the secret access key does not match the access key id"
                    }
                    "InvalidAccessKeyId" => "the store knows no such access key id",
                    "InvalidToken" | "ExpiredToken" => "the session token is not valid",
                    "AccessDenied" => "the credentials may not list or read this bucket",
                    "NoSuchBucket" => "the bucket does not exist",
                    _ => "the store refused the request",
                };
                write!(f, "{meaning} (the store answered {code}: {message})")
            }
            Self::Other(text) => f.write_str(text),
        }
    }
}

/// The S3 bucket of the destination, scoped to one server name.
pub struct Store {
    s3: Arc<AmazonS3>,
    bucket: String,
    root: String,
}

impl Store {
    pub fn open(config: &Config) -> Result<Self, StoreError> {
        let mut options = ClientOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(30));
        if let Some(path) = &config.endpoint_ca_file {
            let shown = path.display().to_string();
            let pem = std::fs::read(path).map_err(|source| StoreError::EndpointCa {
                path: shown.clone(),
                source,
            })?;
            let certs =
                Certificate::from_pem_bundle(&pem).map_err(|source| StoreError::EndpointCaPem {
                    path: shown,
                    source,
                })?;
            // The endpoint's CA alone, as barman-cloud trusts it.
            options = options.with_no_system_certificates(true);
            for cert in certs {
                options = options.with_root_certificate(cert);
            }
        }
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&config.bucket)
            .with_access_key_id(&config.access_key_id)
            .with_secret_access_key(&config.secret_access_key)
            .with_region(config.region.as_deref().unwrap_or("us-east-1"))
            // A few quick retries per request; the refresh loop backs off beyond them.
            .with_retry(RetryConfig {
                backoff: BackoffConfig::default(),
                max_retries: 2,
                retry_timeout: Duration::from_secs(20),
            });
        if let Some(endpoint) = &config.endpoint_url {
            options = options.with_allow_http(endpoint.starts_with("http://"));
            builder = builder
                .with_endpoint(endpoint)
                .with_virtual_hosted_style_request(false);
        }
        let s3 = builder
            .with_client_options(options)
            .build()
            .map_err(StoreError::Client)?;
        Ok(Self {
            s3: Arc::new(s3),
            bucket: config.bucket.clone(),
            root: config.server_root(),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("s3://{}/{path}", self.bucket)
    }

    /// One read of the catalog.
    pub async fn read(&self) -> Result<Catalog, StoreError> {
        let mut catalog = Catalog::default();
        let base = Path::from(format!("{}/base", self.root));
        let listing = self
            .s3
            .list_with_delimiter(Some(&base))
            .await
            .map_err(|source| StoreError::List {
                url: self.url(&format!("{base}/")),
                source,
            })?;
        catalog.objects += listing.objects.len() as u64;
        let ids: Vec<String> = listing
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_owned))
            .collect();
        let mut infos = futures::stream::iter(ids)
            .map(|id| {
                let path = Path::from(format!("{base}/{id}/backup.info"));
                async move {
                    let got = match self.s3.get(&path).await {
                        Ok(result) => result.bytes().await.map(Some),
                        Err(object_store::Error::NotFound { .. }) => Ok(None),
                        Err(e) => Err(e),
                    };
                    (id, path, got)
                }
            })
            .buffered(CONCURRENT_GETS);
        while let Some((id, path, got)) = infos.next().await {
            let bytes = got.map_err(|source| StoreError::Get {
                url: self.url(path.as_ref()),
                source,
            })?;
            // A directory without backup.info is no backup (barman skips it too).
            let Some(bytes) = bytes else { continue };
            catalog.objects += 1;
            match parse_backup_info(&id, &bytes) {
                Ok(fields) => catalog.backups.push(fields),
                Err(e) => {
                    tracing::warn!(backup = %id, error = %e, "unreadable backup.info");
                    catalog.unreadable_backups.push(id);
                }
            }
        }
        catalog.backups_read();
        let wals = Path::from(format!("{}/wals", self.root));
        let mut listing = self.s3.list(Some(&wals));
        while let Some(meta) = listing
            .try_next()
            .await
            .map_err(|source| StoreError::List {
                url: self.url(&format!("{wals}/")),
                source,
            })?
        {
            let Some(name) = meta.location.filename() else {
                continue;
            };
            let modified = jiff::Timestamp::from_second(meta.last_modified.timestamp())
                .map(|t| t.to_string())
                .unwrap_or_default();
            catalog.add_wal(name, &modified);
        }
        Ok(catalog)
    }
}

#[cfg(test)]
mod tests {
    use super::Answer;

    fn s3_error(text: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: text.to_owned().into(),
        }
    }

    #[test]
    fn refusals_are_told_in_words_and_counted_by_reason() {
        let refused = s3_error(
            "Error performing list request: Server returned non-2xx status code: 403 Forbidden: \
             <?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>The \
             request signature we calculated does not match</Message></Error>",
        );
        let answer = Answer::of(&refused);
        assert_eq!(answer.reason(), "credentials_refused");
        assert_eq!(
            answer.to_string(),
            "the secret access key does not match the access key id (the store answered \
             SignatureDoesNotMatch: The request signature we calculated does not match)"
        );
        for (code, reason) in [
            ("InvalidAccessKeyId", "credentials_refused"),
            ("AccessDenied", "access_denied"),
            ("NoSuchBucket", "no_such_bucket"),
            ("SlowDown", "refused"),
        ] {
            let e = s3_error(&format!("<Error><Code>{code}</Code></Error>"));
            assert_eq!(Answer::of(&e).reason(), reason, "{code}");
        }
        let unreachable =
            s3_error("Error performing GET https://s3 - HTTP error: error sending request");
        assert_eq!(Answer::of(&unreachable).reason(), "unreachable");
        assert!(
            Answer::of(&unreachable)
                .to_string()
                .contains("error sending request")
        );
    }
}
