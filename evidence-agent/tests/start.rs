//! The binary refuses to start, saying why, on a configuration it cannot serve. (Building this
//! test also builds the binary the operator's real tier runs, tests/integration/evidence_real.rs.)

use std::process::Command;

use pgtoolbox_api::evidence as contract;

fn agent() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pgtoolbox-evidence-agent"));
    cmd.env_clear().env("RUST_LOG", "off");
    cmd
}

fn refusal(cmd: &mut Command) -> String {
    let out = cmd.output().expect("the agent runs");
    assert!(!out.status.success(), "it must not start");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_missing_variable_is_named() {
    let stderr = refusal(agent().env(contract::ENV_DESTINATION_PATH, "s3://backups/pg"));
    assert!(
        stderr.contains(&format!("{} is not set", contract::ENV_SERVER_NAME)),
        "{stderr}"
    );
}

#[test]
fn a_missing_certificate_is_named() {
    let dir = std::env::temp_dir().join(format!("evidence-no-tls-{}", std::process::id()));
    let stderr = refusal(
        agent()
            .env(contract::ENV_DESTINATION_PATH, "s3://backups/pg")
            .env(contract::ENV_SERVER_NAME, "orders")
            .env(contract::ENV_ACCESS_KEY_ID, "AKIA")
            .env(contract::ENV_SECRET_ACCESS_KEY, "secret")
            .env(contract::ENV_TLS_DIR, &dir),
    );
    assert!(stderr.contains("serving certificate"), "{stderr}");
    assert!(stderr.contains(contract::TLS_CERT_FILE), "{stderr}");
    assert!(
        !stderr.contains("secret"),
        "no key in the refusal: {stderr}"
    );
}
