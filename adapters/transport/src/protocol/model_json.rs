//! The model's JSON in `get_state` answers, serialised once per model: the
//! agent shares one `Arc<Model>` until the model changes, so the bytes of the
//! last one written are kept (per thread) and written again while it is the
//! same `Arc`. A burst of `get_state` copies the bytes instead of walking the
//! model's fields for every answer.

use std::cell::RefCell;
use std::sync::Arc;

use pi_core::model::Model;
use serde::Serialize;
use serde_json::value::RawValue;

thread_local! {
    /// The last model written and its JSON. The `Arc` is held so that its
    /// allocation cannot be reused by another model while it is cached.
    static LAST: RefCell<Option<(Arc<Model>, Box<RawValue>)>> = const { RefCell::new(None) };
}

/// `serialize_with` for an `Option<Arc<Model>>`: the same bytes as the model
/// serialised directly.
pub fn serialize<S: serde::Serializer>(model: &Option<Arc<Model>>, s: S) -> Result<S::Ok, S::Error> {
    let Some(model) = model else { return s.serialize_none() };
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if !matches!(last.as_ref(), Some((held, _)) if Arc::ptr_eq(held, model)) {
            *last = serde_json::value::to_raw_value(&**model).ok().map(|json| (model.clone(), json));
        }
        match last.as_ref() {
            Some((_, json)) => json.serialize(s),
            None => model.serialize(s),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Holder {
        #[serde(serialize_with = "serialize")]
        model: Option<Arc<Model>>,
    }

    fn json(model: &Option<Arc<Model>>) -> String {
        serde_json::to_string(&Holder { model: model.clone() }).unwrap()
    }

    /// The model serialised directly.
    fn direct(model: &Model) -> String {
        #[derive(Serialize)]
        struct Direct<'a> {
            model: &'a Model,
        }
        serde_json::to_string(&Direct { model }).unwrap()
    }

    #[test]
    fn the_bytes_are_the_model_s_own_and_follow_a_new_model() {
        let mut faux = pi_core::provider::faux::faux_model();
        faux.name = "modèle \u{2028} \"faux\"".to_string();
        let first = Some(Arc::new(faux.clone()));
        assert_eq!(json(&first), direct(&faux));
        // Written again from the cache: the same bytes.
        assert_eq!(json(&first), direct(&faux));
        faux.id = "other".to_string();
        let second = Some(Arc::new(faux.clone()));
        assert_eq!(json(&second), direct(&faux));
        assert_ne!(json(&first), json(&second));
        assert_eq!(json(&None), r#"{"model":null}"#);
    }
}
