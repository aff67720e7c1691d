//! One pass's children of every kind for one owner, applied kind by kind through the one
//! applier and reported together: what `ApplyReport::converged`, `not_owned` and `refusal`
//! judge is the whole set, not the last kind applied.

use super::applier::{Applier, ApplyError, ApplyReport, ChildOwner, Desired};
use super::store::ChildStore;
use crate::reconcile::children::Component;

pub struct ChildSet<'a> {
    applier: Applier<'a>,
    owner: &'a ChildOwner,
    component: Component,
    report: ApplyReport,
}

impl<'a> ChildSet<'a> {
    /// Children of `owner`, each labelled as part of `component`.
    pub fn new(applier: Applier<'a>, owner: &'a ChildOwner, component: Component) -> Self {
        Self {
            applier,
            owner,
            component,
            report: ApplyReport::default(),
        }
    }

    /// Applies `objects` as the owner's complete set of children of kind `C` (so the owner's
    /// other children of that kind are deleted), and adds what became of them to the report.
    pub async fn apply<C>(
        &mut self,
        store: &ChildStore<C>,
        objects: impl IntoIterator<Item = C>,
    ) -> Result<&mut Self, ApplyError>
    where
        C: super::ChildKind,
    {
        let component = self.component;
        self.apply_parts(store, objects.into_iter().map(|o| (component, o)))
            .await
    }

    /// Like [`ChildSet::apply`], each object labelled with its own component (an owner's Jobs
    /// of different roles are still its one complete set of Jobs).
    pub async fn apply_parts<C>(
        &mut self,
        store: &ChildStore<C>,
        parts: impl IntoIterator<Item = (Component, C)>,
    ) -> Result<&mut Self, ApplyError>
    where
        C: super::ChildKind,
    {
        self.apply_parts_keeping(store, parts, &[]).await
    }

    /// Like [`ChildSet::apply_parts`], with the owner's children named in `kept` left as they
    /// are (see [`Applier::apply_keeping`]).
    pub async fn apply_parts_keeping<C>(
        &mut self,
        store: &ChildStore<C>,
        parts: impl IntoIterator<Item = (Component, C)>,
        kept: &[String],
    ) -> Result<&mut Self, ApplyError>
    where
        C: super::ChildKind,
    {
        let desired = parts
            .into_iter()
            .map(|(component, object)| Desired { component, object })
            .collect();
        let report = self
            .applier
            .apply_keeping(store, self.owner, desired, kept)
            .await?;
        self.report.merge(report);
        Ok(self)
    }

    /// Whether the owner's ServiceAccount, applied earlier in this set, is a foreign object
    /// holding the name (`ResourceNotOwned`).
    pub fn account_taken(&self) -> bool {
        self.report.verdicts.iter().any(|v| {
            matches!(v, super::applier::ChildVerdict::NotOwned { kind, .. } if kind == "ServiceAccount")
        })
    }

    /// Applies children that run as the owner's ServiceAccount or grant to it (Deployments,
    /// Jobs, RoleBindings): only while that account is the owner's own. When a foreign account
    /// holds its name, none is created and the owner's existing ones of the kind are deleted:
    /// no Pod of ours runs as, and no binding of ours grants to, an account someone else
    /// controls (every editor of the namespace could have created it and mint its tokens).
    pub async fn apply_as_account<C>(
        &mut self,
        store: &ChildStore<C>,
        objects: impl IntoIterator<Item = C>,
    ) -> Result<&mut Self, ApplyError>
    where
        C: super::ChildKind,
    {
        if self.account_taken() {
            return self.apply(store, std::iter::empty()).await;
        }
        self.apply(store, objects).await
    }

    /// Every verdict and deletion so far, in the order applied.
    pub fn report(self) -> ApplyReport {
        self.report
    }
}
