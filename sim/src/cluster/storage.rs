//! Storage: the default StorageClass `standard` (volumeBindingMode Immediate) and its
//! provisioner, which creates a PersistentVolume `pvc-<uid>` for each claim of the class and
//! binds the two as the PV controller does (volumeName, bind annotations, phase Bound on both).
//! A claim of an unknown class stays Pending with a `ProvisioningFailed` Event; a PV whose
//! claim is deleted goes too (reclaimPolicy Delete).

use serde_json::json;

use super::scheduler::PVCS;
use super::util::{is_deleting, str_at};
use super::{Component, Ctx, EventKind, Kind, Next, key_of};
use crate::apiserver::error::ApiError;
use crate::store::objects::{Event, ObjKey};

pub const PVS: Kind = Kind::new("", "v1", "PersistentVolume", "persistentvolumes");
pub const STORAGE_CLASSES: Kind =
    Kind::new("storage.k8s.io", "v1", "StorageClass", "storageclasses");
pub const DEFAULT_CLASS: &str = "standard";
pub const PROVISIONER: &str = "sim.pgtoolbox.fyannk.dev/hostpath";
const NAME: &str = "persistentvolume-controller";

pub struct Storage;

impl Component for Storage {
    fn name(&self) -> &'static str {
        NAME
    }

    fn primary(&self) -> Kind {
        PVCS
    }

    fn secondary(&self) -> Vec<Kind> {
        vec![STORAGE_CLASSES]
    }

    fn map(&self, ctx: &Ctx, event: &Event) -> Vec<ObjKey> {
        if PVCS.is(&event.res) {
            return vec![key_of(&event.object)];
        }
        // A class appeared: claims of it waiting to be provisioned.
        let class = key_of(&event.object).1;
        let tx = ctx.tx(NAME);
        tx.list(PVCS, None)
            .iter()
            .filter(|c| str_at(c, "/spec/storageClassName") == Some(class.as_str()))
            .filter(|c| str_at(c, "/status/phase") != Some("Bound"))
            .map(|c| key_of(c))
            .collect()
    }

    fn setup(&self, ctx: &Ctx) -> Result<(), ApiError> {
        let mut tx = ctx.tx(NAME);
        if tx.get(STORAGE_CLASSES, "", DEFAULT_CLASS).is_some() {
            return Ok(());
        }
        tx.create(
            STORAGE_CLASSES,
            "",
            json!({
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": DEFAULT_CLASS,
                    "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": PROVISIONER,
                "reclaimPolicy": "Delete",
                "volumeBindingMode": "Immediate",
                "allowVolumeExpansion": true,
            }),
        )?;
        Ok(())
    }

    fn reconcile(&self, ctx: &Ctx, key: &ObjKey) -> Result<Next, ApiError> {
        let mut tx = ctx.tx(NAME);
        let Some(pvc) = tx.get_key(PVCS, key) else {
            // The claim is gone: its dynamically provisioned volume goes with it.
            let released: Vec<String> = tx
                .list(PVS, None)
                .iter()
                .filter(|pv| {
                    str_at(pv, "/spec/claimRef/namespace") == Some(key.0.as_str())
                        && str_at(pv, "/spec/claimRef/name") == Some(key.1.as_str())
                        && str_at(pv, "/spec/persistentVolumeReclaimPolicy") == Some("Delete")
                })
                .map(|pv| key_of(pv).1)
                .collect();
            for name in released {
                tx.delete(PVS, "", &name)?;
            }
            return Ok(Next::Done);
        };
        if is_deleting(&pvc) || str_at(&pvc, "/status/phase") == Some("Bound") {
            return Ok(Next::Done);
        }
        let class = str_at(&pvc, "/spec/storageClassName")
            .unwrap_or("")
            .to_string();
        if class.is_empty() {
            return Ok(Next::Done); // static binding only; nothing to provision
        }
        let Some(sc) = tx.get(STORAGE_CLASSES, "", &class) else {
            let mut next = (*pvc).clone();
            next["status"]["phase"] = json!("Pending");
            let stored = tx.update_status(PVCS, next)?;
            tx.event(
                &stored,
                EventKind::Warning,
                "ProvisioningFailed",
                &format!("storageclass.storage.k8s.io \"{class}\" not found"),
                None,
            )?;
            return Ok(Next::Done);
        };
        let provisioner = str_at(&sc, "/provisioner")
            .unwrap_or(PROVISIONER)
            .to_string();
        let uid = str_at(&pvc, "/metadata/uid").unwrap_or("").to_string();
        let pv_name = format!("pvc-{uid}");
        let storage = pvc
            .pointer("/spec/resources/requests/storage")
            .cloned()
            .unwrap_or(json!("1Gi"));
        let modes = pvc
            .pointer("/spec/accessModes")
            .cloned()
            .unwrap_or(json!(["ReadWriteOnce"]));
        let claim = format!("{}/{}", key.0, key.1);
        tx.event(
            &pvc,
            EventKind::Normal,
            "Provisioning",
            &format!("External provisioner is provisioning volume for claim \"{claim}\""),
            None,
        )?;
        if tx.get(PVS, "", &pv_name).is_none() {
            tx.create(PVS, "", json!({
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": pv_name,
                    "annotations": {"pv.kubernetes.io/provisioned-by": provisioner}},
                "spec": {
                    "capacity": {"storage": storage},
                    "accessModes": modes,
                    "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                        "namespace": key.0, "name": key.1, "uid": uid,
                        "resourceVersion": str_at(&pvc, "/metadata/resourceVersion").unwrap_or("")},
                    "persistentVolumeReclaimPolicy": str_at(&sc, "/reclaimPolicy").unwrap_or("Delete"),
                    "storageClassName": class,
                    "volumeMode": pvc.pointer("/spec/volumeMode").cloned().unwrap_or(json!("Filesystem")),
                    "hostPath": {"path": format!("/var/local-path-provisioner/{pv_name}_{}_{}", key.0, key.1),
                        "type": "DirectoryOrCreate"},
                },
                "status": {"phase": "Bound"},
            }))?;
        }
        let mut next = (*pvc).clone();
        next["spec"]["volumeName"] = json!(pv_name);
        let ann = &mut next["metadata"]["annotations"];
        if !ann.is_object() {
            *ann = json!({});
        }
        ann["pv.kubernetes.io/bind-completed"] = json!("yes");
        ann["pv.kubernetes.io/bound-by-controller"] = json!("yes");
        ann["volume.beta.kubernetes.io/storage-provisioner"] = json!(provisioner);
        ann["volume.kubernetes.io/storage-provisioner"] = json!(provisioner);
        let bound = tx.update(PVCS, next)?;
        let mut next = (*bound).clone();
        next["status"] =
            json!({"phase": "Bound", "accessModes": modes, "capacity": {"storage": storage}});
        let stored = tx.update_status(PVCS, next)?;
        tx.event(
            &stored,
            EventKind::Normal,
            "ProvisioningSucceeded",
            &format!("Successfully provisioned volume {pv_name}"),
            None,
        )?;
        Ok(Next::Done)
    }
}
