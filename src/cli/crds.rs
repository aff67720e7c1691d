//! `crds`: print the CRD manifests as one YAML stream, or write one file per kind into `dir`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

pub fn crds(dir: Option<PathBuf>) -> ExitCode {
    let output = match dir {
        Some(dir) => crate::api::write_crd_files(&dir).map(|paths| {
            paths
                .iter()
                .map(|path| format!("{}\n", path.display()))
                .collect::<String>()
        }),
        None => crate::api::render_crds_yaml(),
    };
    let written = match output {
        Ok(text) => std::io::stdout().lock().write_all(text.as_bytes()),
        Err(error) => {
            eprintln!("crds: {error}");
            return ExitCode::FAILURE;
        }
    };
    match written {
        // `crds | head`: the reader has what it wanted; stop quietly as Unix tools do.
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("crds: {err}");
            ExitCode::FAILURE
        }
    }
}
