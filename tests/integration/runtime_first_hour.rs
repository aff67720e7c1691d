//! What a new user meets in the first hour with the binary: their kubeconfig is never lost,
//! the examples apply anywhere and ship inside the binary, `crds | head` and piped logs behave.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use pgtoolbox_sim::kubeconfig::MARKER;

use crate::cli_support::{Running, binary};
use crate::kubectl_support::{Kubectl, kubectl_present};

const USERS_OWN: &str = "apiVersion: v1\nkind: Config\ncurrent-context: prod\n# the user's own\n";
const MODES: [&[&str]; 2] = [&["sim"], &["sim", "--api-only"]];

#[test]
fn an_existing_kubeconfig_of_the_user_is_refused_and_left_intact_in_both_modes() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, USERS_OWN).unwrap();
        let out = binary()
            .args(mode)
            .arg("--kubeconfig-out")
            .arg(&path)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{mode:?} accepted a foreign file");
        assert!(stderr.contains("refusing to replace"), "{mode:?}: {stderr}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            USERS_OWN,
            "{mode:?}"
        );
    }
}

#[test]
fn a_kubeconfig_the_user_named_survives_exit_and_the_next_run_reuses_it_in_both_modes() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sim.kubeconfig");
        let path_arg = path.display().to_string();
        for run in 0..2 {
            let args: Vec<&str> = mode
                .iter()
                .copied()
                .chain(["--kubeconfig-out", &path_arg])
                .collect();
            let mut sim = Running::start(&args, dir.path(), Stdio::null());
            assert_eq!(sim.kubeconfig(), path_arg, "{mode:?} run {run}");
            let status = sim.interrupt();
            assert!(status.success(), "{mode:?} run {run}: {status:?}");
            let kept = std::fs::read_to_string(&path).unwrap();
            assert!(kept.starts_with(MARKER), "{mode:?} run {run}: {kept}");
        }
    }
}

#[test]
fn only_a_temporary_kubeconfig_chosen_by_sim_is_removed_in_both_modes() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let mut sim = Running::start(mode, dir.path(), Stdio::null());
        let path = sim.kubeconfig();
        assert!(Path::new(&path).exists(), "{mode:?}");
        assert!(sim.interrupt().success(), "{mode:?}");
        assert!(!Path::new(&path).exists(), "{mode:?}: {path} left behind");
    }
}

#[test]
fn kubectl_applies_the_examples_directory_to_a_bare_api_server() {
    if !kubectl_present() {
        eprintln!("kubectl not installed; skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut sim = Running::start(&["sim", "--api-only"], dir.path(), Stdio::null());
    let kubectl = Kubectl {
        kubeconfig: sim.kubeconfig().into(),
        dir,
    };
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    kubectl.ok(&["apply", "-f", &examples.display().to_string()]);
    let names = kubectl.ok(&[
        "get",
        "pgar,pga,pgaa,pgev,pgtc,clusters",
        "-A",
        "-o",
        "name",
    ]);
    for name in [
        "pgaccessrequest.pgtoolbox.fyannk.dev/alice-orders",
        "pgadmin.pgtoolbox.fyannk.dev/team-pgadmin",
        "pgadminaccess.pgtoolbox.fyannk.dev/grant-team-a",
        "evidenceagent.pgtoolbox.fyannk.dev/orders-evidence",
        "evidenceagent.pgtoolbox.fyannk.dev/orders-audit",
        "pgtoolboxconsole.pgtoolbox.fyannk.dev/orders-console",
        "cluster.postgresql.cnpg.io/orders",
        "cluster.postgresql.cnpg.io/billing",
    ] {
        assert!(names.contains(name), "{name} missing: {names}");
    }
    assert!(sim.interrupt().success());
}

#[test]
fn sim_started_from_any_directory_shows_the_built_in_examples() {
    let dir = tempfile::tempdir().unwrap();
    let mut sim = Running::start(&["sim"], dir.path(), Stdio::null());
    // The request's key column: its phase, once the operator has written the status.
    let request = sim.wait_for("PgAccessRequest team-a/alice-orders Ready=True");
    assert!(request.ends_with("Phase=Pending"), "{request}");
    if !sim
        .seen
        .iter()
        .any(|l| l.contains("PgAdmin team-a/team-pgadmin"))
    {
        sim.wait_for("PgAdmin team-a/team-pgadmin");
    }
    assert!(sim.interrupt().success());
}

#[test]
fn sim_brings_the_example_evidence_agent_to_ready() {
    let dir = tempfile::tempdir().unwrap();
    let mut sim = Running::start(&["sim"], dir.path(), Stdio::null());
    sim.wait_for("EvidenceAgent team-a/orders-evidence Ready=True");
    // The operator's own CA signs the other one's certificate.
    if !sim
        .seen
        .iter()
        .any(|l| l.contains("EvidenceAgent team-a/orders-audit Ready=True"))
    {
        sim.wait_for("EvidenceAgent team-a/orders-audit Ready=True");
    }
    assert!(sim.interrupt().success());
}

#[test]
fn sim_brings_the_example_pgadmin_to_ready_with_its_servers_registered() {
    let dir = tempfile::tempdir().unwrap();
    let mut sim = Running::start(&["sim"], dir.path(), Stdio::null());
    let line = sim.wait_for("PgAdmin team-a/team-pgadmin Ready=True");
    assert!(line.contains("pgadmin.team-a.apps.example.com"), "{line}");
    assert!(sim.interrupt().success());
}

#[test]
fn crds_into_a_pipe_closed_early_exits_zero_without_a_panic() {
    let full = binary().arg("crds").output().unwrap();
    assert!(full.status.success());
    // More than a pipe buffer, so `head -1` closes the pipe while the binary still writes.
    assert!(full.stdout.len() > 64 * 1024, "{} bytes", full.stdout.len());
    let out = std::process::Command::new("bash")
        .args(["-c", "set -o pipefail; \"$0\" crds | head -1"])
        .arg(env!("CARGO_BIN_EXE_pgtoolbox-operator"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
}

#[test]
fn logs_written_to_a_pipe_carry_no_escape_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = binary();
    command
        .args(["sim"])
        .env("RUST_LOG", "debug")
        .current_dir(dir.path())
        .stderr(Stdio::piped());
    let mut sim = Running::spawn(command);
    let stderr = sim.child().stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .take(50)
            .collect::<Vec<String>>()
    });
    sim.wait_for("PgAccessRequest team-a/alice-orders");
    std::thread::sleep(Duration::from_millis(500));
    assert!(sim.interrupt().success());
    let lines = reader.join().unwrap();
    assert!(!lines.is_empty(), "debug logs expected on stderr");
    for line in &lines {
        assert!(!line.contains('\u{1b}'), "escape sequence in {line:?}");
    }
}

/// `sim --examples DIR` holding `files`, its stdout discarded and stderr kept, its address
/// space capped at 3 GiB where `prlimit` exists (the malformed-YAML reader once allocated
/// about 1 GB/s until the machine killed it). Returns the exit status and stderr, or fails
/// if it has not ended within a minute.
fn sim_with_examples(files: &[(&str, &str)]) -> (std::process::ExitStatus, String) {
    let dir = tempfile::tempdir().unwrap();
    let examples = dir.path().join("examples");
    std::fs::create_dir_all(&examples).unwrap();
    for (name, text) in files {
        std::fs::write(examples.join(name), text).unwrap();
    }
    let binary_path = env!("CARGO_BIN_EXE_pgtoolbox-operator");
    let capped = std::process::Command::new("prlimit")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let mut command = if capped {
        let mut c = std::process::Command::new("prlimit");
        c.args(["--as=3221225472", "--", binary_path]);
        c
    } else {
        std::process::Command::new(binary_path)
    };
    let mut child = command
        .args(["sim", "--examples"])
        .arg(&examples)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("sim --examples did not end within a minute");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    (status, reader.join().unwrap())
}

#[test]
fn a_malformed_example_ends_sim_at_once_naming_the_file_the_document_and_the_line() {
    let (status, stderr) = sim_with_examples(&[
        (
            "a-good.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\n",
        ),
        (
            "b-broken.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: ConfigMap\ndata: [unclosed\n---\nkind: Secret\n",
        ),
    ]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("b-broken.yaml: document 2 (line "),
        "the error names the file, the document and the line: {stderr}"
    );
    assert!(!stderr.contains("a-good.yaml"), "{stderr}");
    assert!(!stderr.contains("memory allocation"), "{stderr}");
}

#[test]
fn an_example_with_an_unknown_field_is_refused_with_its_path_as_kubectl_apply_refuses_it() {
    let request = include_str!("../../examples/pgaccessrequest.yaml").replace(
        "  clusterRole: view\n",
        "  clusterRole: view\n  imagee: typo\n",
    );
    let (status, stderr) = sim_with_examples(&[("pgaccessrequest.yaml", &request)]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("pgaccessrequest.yaml: document 3 (PgAccessRequest/alice-orders)")
            && stderr.contains("unknown field \"spec.imagee\""),
        "{stderr}"
    );
    // A person reads it: the server's sentence, not a Rust debug dump.
    assert!(
        !stderr.contains("Status {") && !stderr.contains("Some("),
        "{stderr}"
    );
}

/// Twice: the error a stop once logged (a Secret watch outliving the shutdown, reconnecting to
/// the server that had just stopped) came in about half of the stops.
#[test]
fn a_clean_stop_of_sim_exits_zero_and_logs_no_error() {
    for run in 0..2 {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("stderr.log");
        let stderr = std::fs::File::create(&log).unwrap();
        let mut sim = Running::start(&["sim"], dir.path(), Stdio::from(stderr));
        sim.kubeconfig();
        // The examples applied and the table drawn: the run is past its start.
        sim.wait_for("PgAccessRequest team-a/alice-orders");
        let status = sim.interrupt();
        let logged = std::fs::read_to_string(&log).unwrap();
        assert!(
            status.success(),
            "run {run}: exit status {status:?}: {logged}"
        );
        assert!(
            !logged.contains("ERROR") && !logged.contains("WARN"),
            "run {run}: a clean stop logged a problem:\n{logged}"
        );
    }
}
