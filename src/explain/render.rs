//! The report as text for a terminal (pure); `-o json` serialises the same [`Report`].

use std::fmt::Write;

use super::report::{ConditionReport, Report, Role};
use crate::conditions::reasons::common;

fn role(c: &ConditionReport) -> &'static str {
    match c.role {
        Role::Summary => "",
        Role::Aspect => " (aspect)",
        Role::Advisory => " (advisory)",
        Role::Foreign => " (not ours)",
    }
}

/// Whether the reason's texts are worth printing: a healthy condition explains nothing.
fn explains(c: &ConditionReport) -> bool {
    c.reason != common::AS_EXPECTED.as_str()
}

/// Lines of `text` indented by `indent`, so a multi-line message stays readable.
fn indented(out: &mut String, indent: &str, label: &str, text: &str) {
    let pad = " ".repeat(label.len());
    for (i, line) in text.lines().enumerate() {
        let lead = if i == 0 { label } else { pad.as_str() };
        let _ = writeln!(out, "{indent}{lead}{line}");
    }
}

pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    let verdict = if report.ready { "Ready" } else { "not Ready" };
    let _ = writeln!(
        out,
        "{} {}/{}: {verdict}",
        report.kind, report.namespace, report.name
    );
    let _ = writeln!(out, "{}.", report.summary);

    let _ = writeln!(out, "\nConditions:");
    if report.conditions.is_empty() {
        let _ = writeln!(out, "  none reported yet");
    }
    for c in &report.conditions {
        let decides = if report.decided_by.as_deref() == Some(c.type_.as_str()) {
            "  <- decides Ready"
        } else {
            ""
        };
        let stale = if c.stale { " [older generation]" } else { "" };
        let _ = writeln!(
            out,
            "  {}{}: {} {}{stale}{decides}",
            c.type_,
            role(c),
            c.status,
            c.reason
        );
        if !c.message.is_empty() {
            indented(&mut out, "      ", "", &c.message);
        }
        if explains(c) {
            if let Some(meaning) = c.meaning {
                indented(&mut out, "      ", "means: ", meaning);
            }
            if let Some(action) = c.action {
                indented(&mut out, "      ", "to do: ", action);
            }
        }
    }

    let _ = writeln!(out, "\nChildren:");
    if report.children.is_empty() {
        let _ = writeln!(out, "  none found");
    }
    for child in &report.children {
        let mark = if child.healthy { " " } else { "!" };
        let _ = writeln!(
            out,
            "{mark} {} {}: {}: {}",
            child.kind, child.name, child.state, child.detail
        );
    }
    for note in &report.unread {
        let _ = writeln!(out, "? {note}");
    }

    let _ = writeln!(out, "\nEvents (oldest first):");
    if report.events.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for e in &report.events {
        let when = e.last_seen.as_deref().unwrap_or("-");
        let count = if e.count > 1 {
            format!(" (x{})", e.count)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {when} {} {}{count}: {}",
            e.type_, e.reason, e.message
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::Kind;
    use crate::explain::report::{ChildFact, EventFact, Observed, report};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation: Some(1),
            last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
        }
    }

    #[test]
    fn a_failing_console_reads_top_down() {
        let observed = Observed {
            kind: Kind::PgToolBoxConsole,
            namespace: "team-a".into(),
            name: "ops".into(),
            generation: Some(1),
            conditions: vec![
                condition(
                    "Ready",
                    "False",
                    "CrashLoopBackOff",
                    "Pod ops-console-1: exit 1",
                ),
                condition(
                    "ConfigurationValid",
                    "True",
                    "AsExpected",
                    "all references resolve",
                ),
                condition(
                    "WorkloadReady",
                    "False",
                    "CrashLoopBackOff",
                    "Pod ops-console-1: exit 1",
                ),
            ],
            children: vec![ChildFact {
                kind: "Pod".into(),
                name: "ops-console-1".into(),
                state: "CrashLoopBackOff".into(),
                detail: "container console: CrashLoopBackOff".into(),
                healthy: false,
            }],
            events: vec![EventFact {
                type_: "Warning".into(),
                reason: "CrashLoopBackOff".into(),
                message: "Pod ops-console-1: exit 1".into(),
                count: 2,
                last_seen: Some("2026-01-01T00:00:00Z".into()),
            }],
            unread: vec!["Routes: not served by this cluster".into()],
        };
        let text = render_text(&report(&observed));
        let expected = format!(
            "PgToolBoxConsole team-a/ops: not Ready
Ready is False (CrashLoopBackOff): decided by WorkloadReady, aspect 2 of 3 (False CrashLoopBackOff).

Conditions:
  Ready: False CrashLoopBackOff
      Pod ops-console-1: exit 1
      means: {m}
      to do: {a}
  ConfigurationValid (aspect): True AsExpected
      all references resolve
  WorkloadReady (aspect): False CrashLoopBackOff  <- decides Ready
      Pod ops-console-1: exit 1
      means: {m}
      to do: {a}

Children:
! Pod ops-console-1: CrashLoopBackOff: container console: CrashLoopBackOff
? Routes: not served by this cluster

Events (oldest first):
  2026-01-01T00:00:00Z Warning CrashLoopBackOff (x2): Pod ops-console-1: exit 1
",
            m = common::CRASH_LOOP_BACK_OFF.meaning(),
            a = common::CRASH_LOOP_BACK_OFF.action(),
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn multi_line_messages_stay_indented_and_empty_sections_say_so() {
        let observed = Observed {
            kind: Kind::PgAccessRequest,
            namespace: "team-a".into(),
            name: "r".into(),
            generation: Some(1),
            conditions: vec![condition(
                "Ready",
                "False",
                "RoleBindingMissing",
                "one\ntwo",
            )],
            children: Vec::new(),
            events: Vec::new(),
            unread: Vec::new(),
        };
        let text = render_text(&report(&observed));
        assert!(text.contains("      one\n      two\n"), "{text}");
        assert!(text.contains("Children:\n  none found\n"), "{text}");
        assert!(text.contains("Events (oldest first):\n  none\n"), "{text}");
    }
}
