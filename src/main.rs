use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "pgtoolbox-operator", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the CRD manifests as one YAML stream, or write one file per kind into --dir.
    Crds {
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Crds { dir } => crds(dir),
    }
}

fn crds(dir: Option<PathBuf>) -> ExitCode {
    let result = match dir {
        Some(dir) => pgtoolbox_operator::api::write_crd_files(&dir).map(|paths| {
            for path in paths {
                println!("{}", path.display());
            }
        }),
        None => pgtoolbox_operator::api::render_crds_yaml().map(|yaml| print!("{yaml}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("crds: {error}");
            ExitCode::FAILURE
        }
    }
}
