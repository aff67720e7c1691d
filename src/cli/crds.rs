//! `crds`: print the CRD manifests as one YAML stream, or write one file per kind into `dir`.

use std::path::PathBuf;
use std::process::ExitCode;

pub fn crds(dir: Option<PathBuf>) -> ExitCode {
    let result = match dir {
        Some(dir) => crate::api::write_crd_files(&dir).map(|paths| {
            for path in paths {
                println!("{}", path.display());
            }
        }),
        None => crate::api::render_crds_yaml().map(|yaml| print!("{yaml}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("crds: {error}");
            ExitCode::FAILURE
        }
    }
}
