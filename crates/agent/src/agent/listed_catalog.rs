//! The catalog as `getAll` last listed it to the extension hosts, with a
//! revision number: a host keeps the list it was given and asks again with
//! that revision, and gets the list only when the catalog changed since
//! (a registration, a refresh, a login, a stored catalog taken in). The
//! ~1,700 models (~900 KB of JSON) then cross the wire once per change, not
//! at every `getModels()`. Whether the catalog changed is decided by
//! comparing it with the last listed one, so no change can be missed.

use crate::model::Model;

/// The last catalog listed and its revision (0: none listed yet).
#[derive(Default)]
pub(super) struct ListedCatalog {
    revision: u64,
    models: Vec<Model>,
}

impl ListedCatalog {
    /// The current catalog's revision (a new one when `changed`, given the
    /// last listed models, gives the catalog because it differs from them),
    /// and the models unless the caller's `known` revision is it.
    pub(super) fn since(
        &mut self,
        changed: impl FnOnce(&[Model]) -> Option<Vec<Model>>,
        known: Option<u64>,
    ) -> (u64, Option<Vec<Model>>) {
        let current = changed(&self.models);
        if self.revision == 0 || current.is_some() {
            self.revision += 1;
            self.models = current.unwrap_or_default();
        }
        let models = (known != Some(self.revision)).then(|| self.models.clone());
        (self.revision, models)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str) -> Model {
        let mut model = crate::provider::faux::faux_model();
        model.id = id.to_string();
        model
    }

    /// The registry's side: `models` when they differ from the listed ones.
    fn catalog(models: Vec<Model>) -> impl FnOnce(&[Model]) -> Option<Vec<Model>> {
        move |listed| (listed != models.as_slice()).then_some(models)
    }

    #[test]
    fn a_caller_gets_the_models_again_only_after_a_change() {
        let mut listed = ListedCatalog::default();
        let (first, models) = listed.since(catalog(vec![model("a")]), None);
        assert_eq!(models.map(|m| m.len()), Some(1));
        let (same, models) = listed.since(catalog(vec![model("a")]), Some(first));
        assert_eq!((same, models), (first, None));
        // Another caller that has not listed it yet gets it.
        assert!(listed.since(catalog(vec![model("a")]), None).1.is_some());
        let (changed, models) = listed.since(catalog(vec![model("a"), model("b")]), Some(first));
        assert_ne!(changed, first);
        assert_eq!(models.map(|m| m.len()), Some(2));
        // A change back is a change too.
        let (back, models) = listed.since(catalog(vec![model("a")]), Some(changed));
        assert_ne!(back, changed);
        assert_eq!(models.map(|m| m.len()), Some(1));
    }

    #[test]
    fn an_empty_catalog_has_a_revision_too() {
        let mut listed = ListedCatalog::default();
        let (revision, models) = listed.since(catalog(Vec::new()), None);
        assert_ne!(revision, 0);
        assert_eq!(models, Some(Vec::new()));
        assert_eq!(listed.since(catalog(Vec::new()), Some(revision)), (revision, None));
    }
}
