//! The example manifests `sim` applies: embedded in the binary, so `sim` shows them from any
//! directory and after `cargo install`; `--examples DIR` applies a directory instead.

use std::path::{Path, PathBuf};

/// `examples/*.yaml` as built in, in file-name order (namespaces and Clusters first).
pub const EMBEDDED: [(&str, &str); 6] = [
    ("cluster.yaml", include_str!("../../examples/cluster.yaml")),
    (
        "evidenceagent.yaml",
        include_str!("../../examples/evidenceagent.yaml"),
    ),
    (
        "pgaccessrequest.yaml",
        include_str!("../../examples/pgaccessrequest.yaml"),
    ),
    ("pgadmin.yaml", include_str!("../../examples/pgadmin.yaml")),
    (
        "pgadminaccess.yaml",
        include_str!("../../examples/pgadminaccess.yaml"),
    ),
    (
        "pgtoolboxconsole.yaml",
        include_str!("../../examples/pgtoolboxconsole.yaml"),
    ),
];

/// The YAML files of a directory, sorted; a missing directory is empty.
pub fn yaml_files(dir: &Path) -> std::io::Result<Vec<(PathBuf, String)>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| std::fs::read_to_string(&p).map(|text| (p, text)))
        .collect()
}

/// The manifests to apply: the files of `dir`, else the embedded examples.
pub fn manifests(dir: Option<&Path>) -> std::io::Result<Vec<(PathBuf, String)>> {
    match dir {
        Some(dir) => yaml_files(dir),
        None => Ok(EMBEDDED
            .iter()
            .map(|(name, text)| (PathBuf::from("examples").join(name), text.to_string()))
            .collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_examples_are_exactly_the_examples_directory() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let on_disk = yaml_files(&dir).unwrap();
        let names: Vec<String> = on_disk
            .iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        let embedded: Vec<&str> = EMBEDDED.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, embedded, "add new example files to EMBEDDED");
        for ((_, text), (_, built_in)) in on_disk.iter().zip(EMBEDDED) {
            assert_eq!(text, built_in);
        }
    }
}
