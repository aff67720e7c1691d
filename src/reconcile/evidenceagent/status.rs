//! The agent's own status fields as the status write's merge patch must state them.

use serde::Serialize;
use serde_json::Value;

/// A status field's value to write, and its stored value, both as JSON: a key the stored value
/// has and the desired one drops (`destinationPath` of an ObjectStore no longer found,
/// `notAfter` after a switch to `openshift`) is written `null`, since a merge patch removes only
/// what it names. Once written, the two compare equal, so the next pass does not write again.
pub fn field_patch<T: Serialize>(
    desired: &T,
    stored: &T,
) -> Result<(Value, Value), serde_json::Error> {
    let mut desired = serde_json::to_value(desired)?;
    let stored = serde_json::to_value(stored)?;
    if let (Value::Object(want), Value::Object(have)) = (&mut desired, &stored) {
        for key in have.keys() {
            want.entry(key.clone()).or_insert(Value::Null);
        }
    }
    Ok((desired, stored))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{CertificateStatus, ObjectStoreStatus};
    use serde_json::json;

    fn store(path: Option<&str>) -> Option<ObjectStoreStatus> {
        Some(ObjectStoreStatus {
            name: "orders-store".into(),
            destination_path: path.map(str::to_owned),
        })
    }

    #[test]
    fn a_dropped_key_is_written_null_until_it_is_gone() {
        // (desired, stored, value written, whether it differs from what is stored)
        let cases = [
            (
                store(Some("s3://a")),
                store(Some("s3://a")),
                json!({"name": "orders-store", "destinationPath": "s3://a"}),
                false,
            ),
            (
                store(None),
                store(Some("s3://a")),
                json!({"name": "orders-store", "destinationPath": null}),
                true,
            ),
            (
                store(None),
                store(None),
                json!({"name": "orders-store"}),
                false,
            ),
            (
                store(Some("s3://b")),
                store(None),
                json!({"name": "orders-store", "destinationPath": "s3://b"}),
                true,
            ),
            (None, store(Some("s3://a")), Value::Null, true),
            (store(None), None, json!({"name": "orders-store"}), true),
        ];
        for (desired, stored, written, differs) in cases {
            let (value, stored_value) = field_patch(&desired, &stored).unwrap();
            assert_eq!(value, written, "{desired:?} over {stored:?}");
            assert_eq!(
                value != stored_value,
                differs,
                "{desired:?} over {stored:?}"
            );
        }
        let openshift = Some(CertificateStatus {
            secret: "s".into(),
            not_after: None,
        });
        let stored: Option<CertificateStatus> =
            serde_json::from_value(json!({"secret": "s", "notAfter": "2027-01-01T00:00:00Z"}))
                .unwrap();
        let (value, _) = field_patch(&openshift, &stored).unwrap();
        assert_eq!(value, json!({"secret": "s", "notAfter": null}));
    }
}
