//! `pgtoolbox-operator sim` brings both example consoles to Ready: the clusterIP one and the
//! one published through a Route (the installation's console ClusterRoles are installed).

use std::process::Stdio;

use crate::cli_support::Running;

#[test]
fn console_sim_brings_the_example_consoles_to_ready() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sim = Running::start(&["sim"], dir.path(), Stdio::null());
    sim.wait_for("PgToolBoxConsole team-a/team-console Ready=True");
    if !sim
        .seen
        .iter()
        .any(|l| l.contains("PgToolBoxConsole team-a/orders-console Ready=True"))
    {
        sim.wait_for("PgToolBoxConsole team-a/orders-console Ready=True");
    }
    assert!(sim.interrupt().success());
}
