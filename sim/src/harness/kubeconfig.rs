//! The kubeconfig file of `sim` and `sim --api-only`. A file the user named is theirs: it is
//! written only when absent or when an earlier `sim` wrote it (it carries [`MARKER`]), and it is
//! never removed. Only the temporary file `sim` chooses by itself is removed on exit.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
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
    #[error(
        "{0} is a symbolic link: `sim` never writes through a link it did not create (remove \
         it, or name another file with --kubeconfig-out)"
    )]
    Symlink(PathBuf),
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
/// Nothing is written through a symbolic link: the file is created exclusively (`O_CREAT |
/// O_EXCL | O_NOFOLLOW`, mode 0600), and an earlier file of ours is replaced by a new one
/// renamed over it, never opened for writing.
fn write_unless_foreign(path: &Path, text: &str) -> Result<(), KubeconfigError> {
    match create_private(path) {
        Ok(mut file) => file.write_all(text.as_bytes()).map_err(KubeconfigError::Io),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
            if !written_by_us(path)? {
                return Err(KubeconfigError::NotOurs(path.to_path_buf()));
            }
            replace(path, text)
        }
        Err(err) => Err(KubeconfigError::Io(err)),
    }
}

/// A new file only this user may read, created where no file (and no link) is.
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Whether the file at `path` is a regular file an earlier `sim` wrote (whoever owns it, it is
/// replaced, not written into).
/// It is opened without following a link and without blocking (a FIFO planted there).
fn written_by_us(path: &Path) -> Result<bool, KubeconfigError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let file = match file {
        Ok(file) => file,
        Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
            return Err(KubeconfigError::Symlink(path.to_path_buf()));
        }
        Err(err) => return Err(KubeconfigError::Io(err)),
    };
    if !file.metadata()?.is_file() {
        return Ok(false);
    }
    let mut head = Vec::with_capacity(MARKER.len());
    file.take(MARKER.len() as u64).read_to_end(&mut head)?;
    Ok(head == MARKER.as_bytes())
}

/// Write `text` to a fresh file beside `path` and rename it over `path`: the rename replaces
/// the directory entry itself, whatever it points to.
fn replace(path: &Path, text: &str) -> Result<(), KubeconfigError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fresh = path.with_file_name(format!(".{name}.{}.new", std::process::id()));
    let written = create_private(&fresh).and_then(|mut file| file.write_all(text.as_bytes()));
    match written.and_then(|()| std::fs::rename(&fresh, path)) {
        Ok(()) => Ok(()),
        Err(err) => {
            let _ = std::fs::remove_file(&fresh);
            Err(KubeconfigError::Io(err))
        }
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

    #[test]
    fn a_link_planted_at_the_path_is_never_written_through() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        // A link to a file of the victim's, even one that looks like ours.
        let victim = dir.path().join("victim");
        std::fs::write(&victim, format!("{MARKER}\nthe victim's")).unwrap();
        let link = dir.path().join("pgtoolbox-sim-1.kubeconfig");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let refused = write_unless_foreign(&link, &format!("{MARKER}\nnew"));
        assert!(
            matches!(refused, Err(KubeconfigError::Symlink(_))),
            "{refused:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            format!("{MARKER}\nthe victim's")
        );
        // A dangling link: its target is not created.
        let target = dir.path().join("created-through-the-link");
        let dangling = dir.path().join("dangling.kubeconfig");
        std::os::unix::fs::symlink(&target, &dangling).unwrap();
        assert!(write_unless_foreign(&dangling, "x").is_err());
        assert!(!target.exists());

        // What `sim` writes is its user's alone, a replacement too.
        let ours = dir.path().join("ours.kubeconfig");
        write_unless_foreign(&ours, &format!("{MARKER}\nfirst")).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&ours), 0o600);
        std::fs::set_permissions(&ours, std::fs::Permissions::from_mode(0o666)).unwrap();
        write_unless_foreign(&ours, &format!("{MARKER}\nsecond")).unwrap();
        assert_eq!(mode(&ours), 0o600);
        assert_eq!(
            std::fs::read_to_string(&ours).unwrap(),
            format!("{MARKER}\nsecond")
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
    }
}
