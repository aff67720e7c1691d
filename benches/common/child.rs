//! One child process per measured run (this same bench binary with `--child`), so the memory
//! and CPU figures of one run never include another's; the child prints its result as one JSON
//! line that the parent reads back.

use std::process::{Command, Stdio};

use serde::Serialize;
use serde::de::DeserializeOwned;

const RESULT_PREFIX: &str = "RESULT ";

/// The bench's arguments without the `--bench` cargo adds.
pub fn args() -> Vec<String> {
    std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect()
}

/// The child's arguments when this process is a child (`--child ARGS...`).
pub fn child_args(args: &[String]) -> Option<&[String]> {
    (args.first().map(String::as_str) == Some("--child")).then(|| &args[1..])
}

pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs this binary as `--child ARGS...` and reads back the result it printed.
pub fn spawn<T: DeserializeOwned>(args: &[String]) -> Result<T, String> {
    spawn_as("--child", args)
}

/// Runs this binary as `FLAG ARGS...` (a child, or a driver process of a bench) and reads back
/// the result it printed with [`finish`].
pub fn spawn_as<T: DeserializeOwned>(flag: &str, args: &[String]) -> Result<T, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let output = Command::new(exe)
        .arg(flag)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(format!("child {args:?} exited with {}", output.status));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(RESULT_PREFIX))
        .ok_or("child printed no result")?;
    serde_json::from_str(line).map_err(|e| e.to_string())
}

/// Runs each `(label, args)` in turn as a child ([`spawn`]), appends each result to the file
/// named by `out_env` ([`save`]); a failed run ends the bench with a non-zero status.
pub fn spawn_each<T: Serialize + DeserializeOwned>(
    out_env: &str,
    runs: impl IntoIterator<Item = (String, Vec<String>)>,
) -> Vec<T> {
    let mut results = Vec::new();
    for (label, args) in runs {
        eprintln!("== {label}");
        match spawn::<T>(&args) {
            Ok(result) => {
                save(out_env, &result);
                results.push(result);
            }
            Err(err) => {
                eprintln!("{label} failed: {err}");
                std::process::exit(1);
            }
        }
    }
    results
}

/// The child's side: prints the result for [`spawn`] or [`spawn_as`] and exits at once (tearing down a sim
/// holding 100k objects takes seconds and measures nothing).
pub fn finish<T: Serialize>(result: &T) -> ! {
    println!(
        "{RESULT_PREFIX}{}",
        serde_json::to_string(result).expect("result serialises")
    );
    std::process::exit(0);
}

/// Appends one run's result as a JSON line to the file named by `env`, when set.
pub fn save<T: Serialize>(env: &str, result: &T) {
    let Ok(path) = std::env::var(env) else {
        return;
    };
    let line = serde_json::to_string(result).unwrap_or_default();
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes()));
    if let Err(err) = written {
        eprintln!("could not append to {path}: {err}");
    }
}

/// A multi-threaded tokio runtime for a child.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}
