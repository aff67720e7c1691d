//! `metav1.Condition` lists as controllers keep them: a condition whose status is unchanged keeps
//! its `lastTransitionTime` (apimachinery's `meta.SetStatusCondition`).

use serde_json::{Value, json};

/// One condition to set; `observed_generation` is written when given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cond<'a> {
    pub type_: &'a str,
    pub status: bool,
    pub reason: &'a str,
    pub message: String,
    pub observed_generation: Option<i64>,
}

impl<'a> Cond<'a> {
    pub fn new(type_: &'a str, status: bool, reason: &'a str, message: impl Into<String>) -> Self {
        Self {
            type_,
            status,
            reason,
            message: message.into(),
            observed_generation: None,
        }
    }

    pub fn generation(mut self, generation: i64) -> Self {
        self.observed_generation = Some(generation);
        self
    }
}

fn status_text(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// `conditions` (an array or null) with `cond` set; `now` stamps a transition.
pub fn set(conditions: &Value, cond: &Cond<'_>, now: &str) -> Value {
    let mut list: Vec<Value> = conditions.as_array().cloned().unwrap_or_default();
    let status = status_text(cond.status);
    let mut next = json!({
        "type": cond.type_,
        "status": status,
        "reason": cond.reason,
        "message": cond.message,
        "lastTransitionTime": now,
    });
    if let Some(g) = cond.observed_generation {
        next["observedGeneration"] = json!(g);
    }
    match list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(cond.type_))
    {
        Some(existing) => {
            if existing.get("status").and_then(Value::as_str) == Some(status)
                && let Some(t) = existing.get("lastTransitionTime")
            {
                next["lastTransitionTime"] = t.clone();
            }
            *existing = next;
        }
        None => list.push(next),
    }
    Value::Array(list)
}

/// `conditions` with every one of `conds` set, in order.
pub fn set_all(conditions: &Value, conds: &[Cond<'_>], now: &str) -> Value {
    conds
        .iter()
        .fold(conditions.clone(), |acc, c| set(&acc, c, now))
}

/// The condition of `type_` in a list.
pub fn find<'v>(conditions: &'v Value, type_: &str) -> Option<&'v Value> {
    conditions
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_status_keeps_its_transition_time_and_a_change_moves_it() {
        let c = set(&Value::Null, &Cond::new("Ready", true, "Ok", "fine"), "t1");
        let again = set(
            &c,
            &Cond::new("Ready", true, "Ok", "still fine").generation(2),
            "t2",
        );
        assert_eq!(again[0]["lastTransitionTime"], "t1");
        assert_eq!(again[0]["message"], "still fine");
        assert_eq!(again[0]["observedGeneration"], 2);
        let flipped = set(&again, &Cond::new("Ready", false, "Bad", "broken"), "t3");
        assert_eq!(flipped[0]["lastTransitionTime"], "t3");
        assert_eq!(flipped.as_array().unwrap().len(), 1);
        let two = set(&flipped, &Cond::new("Other", true, "X", ""), "t4");
        assert_eq!(two.as_array().unwrap().len(), 2);
        assert_eq!(find(&two, "Other").unwrap()["reason"], "X");
    }
}
