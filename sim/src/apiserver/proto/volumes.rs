//! Pod volumes.

use std::mem::take;

use k8s_pb::api::core::v1 as core;
use serde_json::Value;

use super::ProtoError;
use super::json::Obj;
use super::refs::{local_object_reference, object_field_selector, resource_field_selector};

fn key_to_path(mut k: core::KeyToPath) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_str("key", k.key.take());
    o.ptr_str("path", k.path.take());
    o.ptr_int("mode", k.mode.take());
    o.done(k, "KeyToPath")
}

fn downward_api_file(mut f: core::DownwardAPIVolumeFile) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_str("path", f.path.take());
    o.msg("fieldRef", f.field_ref.take(), object_field_selector)?;
    o.msg(
        "resourceFieldRef",
        f.resource_field_ref.take(),
        resource_field_selector,
    )?;
    o.ptr_int("mode", f.mode.take());
    o.done(f, "DownwardAPIVolumeFile")
}

fn projection(mut p: core::VolumeProjection) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.msg("secret", p.secret.take(), |mut s| {
        let mut o = Obj::new();
        o.inline(s.local_object_reference.take(), local_object_reference)?;
        o.msgs("items", take(&mut s.items), key_to_path)?;
        o.ptr_bool("optional", s.optional.take());
        o.done(s, "SecretProjection")
    })?;
    o.msg("configMap", p.config_map.take(), |mut s| {
        let mut o = Obj::new();
        o.inline(s.local_object_reference.take(), local_object_reference)?;
        o.msgs("items", take(&mut s.items), key_to_path)?;
        o.ptr_bool("optional", s.optional.take());
        o.done(s, "ConfigMapProjection")
    })?;
    o.msg("downwardAPI", p.downward_api.take(), |mut s| {
        let mut o = Obj::new();
        o.msgs("items", take(&mut s.items), downward_api_file)?;
        o.done(s, "DownwardAPIProjection")
    })?;
    o.msg(
        "serviceAccountToken",
        p.service_account_token.take(),
        |mut s| {
            let mut o = Obj::new();
            o.str("audience", s.audience.take());
            o.ptr_int("expirationSeconds", s.expiration_seconds.take());
            o.ptr_str("path", s.path.take());
            o.done(s, "ServiceAccountTokenProjection")
        },
    )?;
    o.done(p, "VolumeProjection")
}

/// The common volume sources; any other (cloud disks, NFS, ephemeral...) is refused.
pub fn volume(mut v: core::Volume) -> Result<Value, ProtoError> {
    let mut o = Obj::new();
    o.ptr_str("name", v.name.take());
    if let Some(mut src) = v.volume_source.take() {
        o.msg("secret", src.secret.take(), |mut s| {
            let mut o = Obj::new();
            o.str("secretName", s.secret_name.take());
            o.msgs("items", take(&mut s.items), key_to_path)?;
            o.ptr_int("defaultMode", s.default_mode.take());
            o.ptr_bool("optional", s.optional.take());
            o.done(s, "SecretVolumeSource")
        })?;
        o.msg("configMap", src.config_map.take(), |mut s| {
            let mut o = Obj::new();
            o.inline(s.local_object_reference.take(), local_object_reference)?;
            o.msgs("items", take(&mut s.items), key_to_path)?;
            o.ptr_int("defaultMode", s.default_mode.take());
            o.ptr_bool("optional", s.optional.take());
            o.done(s, "ConfigMapVolumeSource")
        })?;
        o.msg("emptyDir", src.empty_dir.take(), |mut s| {
            let mut o = Obj::new();
            o.str("medium", s.medium.take());
            o.quantity("sizeLimit", s.size_limit.take());
            o.done(s, "EmptyDirVolumeSource")
        })?;
        o.msg(
            "persistentVolumeClaim",
            src.persistent_volume_claim.take(),
            |mut s| {
                let mut o = Obj::new();
                o.ptr_str("claimName", s.claim_name.take());
                o.flag("readOnly", s.read_only.take());
                o.done(s, "PersistentVolumeClaimVolumeSource")
            },
        )?;
        o.msg("hostPath", src.host_path.take(), |mut s| {
            let mut o = Obj::new();
            o.ptr_str("path", s.path.take());
            o.ptr_str("type", s.r#type.take());
            o.done(s, "HostPathVolumeSource")
        })?;
        o.msg("downwardAPI", src.downward_api.take(), |mut s| {
            let mut o = Obj::new();
            o.msgs("items", take(&mut s.items), downward_api_file)?;
            o.ptr_int("defaultMode", s.default_mode.take());
            o.done(s, "DownwardAPIVolumeSource")
        })?;
        o.msg("projected", src.projected.take(), |mut s| {
            let mut o = Obj::new();
            o.msgs("sources", take(&mut s.sources), projection)?;
            o.ptr_int("defaultMode", s.default_mode.take());
            o.done(s, "ProjectedVolumeSource")
        })?;
        o.msg("csi", src.csi.take(), |mut s| {
            let mut o = Obj::new();
            o.ptr_str("driver", s.driver.take());
            o.ptr_bool("readOnly", s.read_only.take());
            o.ptr_str("fsType", s.fs_type.take());
            o.str_map("volumeAttributes", take(&mut s.volume_attributes));
            o.msg(
                "nodePublishSecretRef",
                s.node_publish_secret_ref.take(),
                local_object_reference,
            )?;
            o.done(s, "CSIVolumeSource")
        })?;
        if src != core::VolumeSource::default() {
            return Err(ProtoError::Unsupported("VolumeSource".into()));
        }
    }
    o.done(v, "Volume")
}
