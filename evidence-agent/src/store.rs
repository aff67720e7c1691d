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
    #[error("listing {url} failed: {source}")]
    List {
        url: String,
        source: object_store::Error,
    },
    #[error("reading {url} failed: {source}")]
    Get {
        url: String,
        source: object_store::Error,
    },
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
