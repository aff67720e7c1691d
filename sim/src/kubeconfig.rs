//! The kubeconfig file of `sim` and `sim --api-only`. A file the user named is theirs: it is
//! written only when absent or when an earlier `sim` wrote it (it carries [`MARKER`]), and it is
//! never removed. Only the temporary file `sim` chooses by itself is removed on exit.

use std::io::Write;
use std::path::{Path, PathBuf};

/// First line of every kubeconfig `sim` writes; how a later run recognises its own file.
pub const MARKER: &str = "# Written by pgtoolbox-operator sim; safe to delete.";

/// Why a kubeconfig file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("cannot write the kubeconfig: {0}")]
    Io(#[from] std::io::Error),
    #[error(
        "{0} exists and was not written by `sim`: refusing to replace it (name another file, \
         or leave out --kubeconfig-out for a temporary one)"
    )]
    NotOurs(PathBuf),
}

/// A written kubeconfig; dropping it removes the file when `sim` chose the path.
#[derive(Debug)]
pub struct KubeconfigFile {
    path: PathBuf,
    temporary: bool,
}

impl KubeconfigFile {
    /// Writes `yaml`, the kubeconfig of the server on `port`, to `requested`, or to a
    /// temporary file named after the port when `None`.
    pub fn write(yaml: &str, port: u16, requested: Option<&Path>) -> Result<Self, KubeconfigError> {
        let text = format!("{MARKER}\n{yaml}");
        let (path, temporary) = match requested {
            Some(path) => (path.to_path_buf(), false),
            None => (
                std::env::temp_dir().join(format!("pgtoolbox-sim-{port}.kubeconfig")),
                true,
            ),
        };
        write_unless_foreign(&path, &text)?;
        Ok(Self { path, temporary })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for KubeconfigFile {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Create `path` with `text`; replace an existing file only if an earlier `sim` wrote it.
fn write_unless_foreign(path: &Path, text: &str) -> Result<(), KubeconfigError> {
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(mut file) => file.write_all(text.as_bytes()).map_err(KubeconfigError::Io),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
            let existing = std::fs::read_to_string(path).unwrap_or_default();
            if existing.starts_with(MARKER) {
                std::fs::write(path, text).map_err(KubeconfigError::Io)
            } else {
                Err(KubeconfigError::NotOurs(path.to_path_buf()))
            }
        }
        Err(err) => Err(KubeconfigError::Io(err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foreign_file_is_refused_and_kept_ours_is_replaced_a_new_one_created() {
        let dir = tempfile::tempdir().unwrap();
        let foreign = dir.path().join("config");
        std::fs::write(&foreign, "apiVersion: v1\nkind: Config\n# mine\n").unwrap();
        let refused = write_unless_foreign(&foreign, "new");
        assert!(
            matches!(refused, Err(KubeconfigError::NotOurs(_))),
            "{refused:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&foreign).unwrap(),
            "apiVersion: v1\nkind: Config\n# mine\n"
        );

        let ours = dir.path().join("sim.kubeconfig");
        write_unless_foreign(&ours, &format!("{MARKER}\nfirst")).unwrap();
        write_unless_foreign(&ours, &format!("{MARKER}\nsecond")).unwrap();
        assert_eq!(
            std::fs::read_to_string(&ours).unwrap(),
            format!("{MARKER}\nsecond")
        );
    }
}
