//! What extensions register in the model registry: virtual models (pi's
//! `registerVirtualModel`) and providers (`registerProvider`, config and
//! native forms), each undone as pi undoes it.

use serde_json::Value;

use super::{ModelRegistry, ProviderBackup, ProviderFile, Slot, catalog, extension_typed, is_virtual};
use crate::model::Model;

impl ModelRegistry {
    /// Add or replace a virtual model (an extension's `registerVirtualModel`,
    /// `api` [`VIRTUAL_MODEL_API`]). Refused when a physical model has its id.
    pub fn add_virtual(&mut self, model: Model) -> Result<(), String> {
        self.ensure_provider(&model.provider);
        if self.models.iter().any(|m| m.provider == model.provider && m.id == model.id && !is_virtual(m)) {
            return Err(format!("Virtual model {} conflicts with a physical model.", model.full_id()));
        }
        self.remove_virtual(&model.provider, &model.id);
        self.models.push(Slot::Own(Box::new(model)));
        Ok(())
    }

    /// Remove a virtual model (`unregisterVirtualModel`, or its extension went away).
    pub fn remove_virtual(&mut self, provider: &str, id: &str) {
        self.models.retain(|m| !(is_virtual(m) && m.provider == provider && m.id == id));
    }

    /// An extension's provider (pi's `registerProvider(name, config)`, the
    /// config form, whose fields are `models.json`'s): with `models`, they
    /// replace the provider's models; without, the provider's models stay and
    /// take its `baseUrl`, headers and key. Registering the name again, from
    /// any extension, merges the new config's fields over the config
    /// registered before (a field left out keeps its value), and applies the
    /// result to the provider as it was before the first registration. As
    /// in pi, the config's own `modelOverrides` and provider-level `compat`
    /// are not applied, and `models.json`'s `modelOverrides` go over its
    /// models. A config that cannot be applied is refused and leaves the
    /// provider as it was.
    pub fn register_provider(&mut self, name: &str, config: &Value) -> Result<(), String> {
        self.register_extension_provider(name, config, true)
    }

    /// A native provider object an extension registers (pi's
    /// `registerProvider(provider)`): its config replaces whatever
    /// extensions registered under its id.
    pub fn register_native_provider(&mut self, name: &str, config: &Value) -> Result<(), String> {
        self.register_extension_provider(name, config, false)
    }

    fn register_extension_provider(&mut self, name: &str, config: &Value, merge: bool) -> Result<(), String> {
        let previous = self.extension_configs.get(name).cloned();
        let effective = match (&previous, config) {
            (Some(Value::Object(before)), Value::Object(fields)) if merge => {
                let mut merged = before.clone();
                merged.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
                Value::Object(merged)
            }
            _ => config.clone(),
        };
        match self.put_extension_provider(name, &effective) {
            Ok(()) => {
                self.extension_configs.insert(name.to_string(), effective);
                Ok(())
            }
            Err(error) => {
                match previous.filter(|p| self.put_extension_provider(name, p).is_ok()) {
                    Some(_) => {}
                    None => self.unregister_provider(name),
                }
                Err(error)
            }
        }
    }

    /// Apply an extension's config to the provider as it was before the first registration.
    pub(super) fn put_extension_provider(&mut self, name: &str, config: &Value) -> Result<(), String> {
        let fail = |e: String| format!("registerProvider(\"{name}\"): {e}");
        let mut pf: ProviderFile = serde_json::from_value(config.clone()).map_err(|e| fail(e.to_string()))?;
        pf.model_overrides = self.json_overrides.get(name).cloned().unwrap_or_default();
        pf.compat = None;
        self.ensure_provider(name);
        self.restore_provider(name);
        let backup = ProviderBackup {
            models: self.models.iter().filter(|m| m.provider == name && !is_virtual(m)).cloned().collect(),
            settings: self.providers.get(name).cloned(),
        };
        self.registered.entry(name.to_string()).or_insert(backup);
        if !pf.models.is_empty() {
            self.models.retain(|m| m.provider != name || is_virtual(m));
            let base = pf.base_url.clone().or_else(|| self.provider_base_url(name).map(str::to_string));
            let base = base.or_else(|| catalog::provider_base_url(name).map(str::to_string));
            let (typed, chat): (Vec<Value>, Vec<Value>) = pf.models.drain(..).partition(extension_typed::is_typed);
            pf.models = chat;
            let typed = typed
                .iter()
                .map(|definition| extension_typed::typed_model(name, base.as_deref(), definition))
                .collect::<Result<Vec<Value>, String>>()
                .map_err(fail)?;
            self.extension_typed.insert(name.to_string(), typed);
        }
        self.apply_provider(name, pf).map_err(fail)
    }

    /// The config the extensions registered for provider `name` (each registration's fields over the one before).
    pub fn extension_provider_config(&self, name: &str) -> Option<&Value> {
        self.extension_configs.get(name)
    }

    /// pi's `unregisterProvider`: the provider's models and settings are
    /// again what they were before it was registered (nothing when it was not).
    pub fn unregister_provider(&mut self, name: &str) {
        self.extension_configs.remove(name);
        if self.restore_provider(name) {
            self.registered.remove(name);
        }
    }

    /// Put back the provider as it was before its first registration.
    fn restore_provider(&mut self, name: &str) -> bool {
        self.extension_typed.remove(name);
        let Some(backup) = self.registered.get(name).cloned() else { return false };
        self.models.retain(|m| m.provider != name || is_virtual(m));
        self.models.extend(backup.models);
        match backup.settings {
            Some(settings) => self.providers.insert(name.to_string(), settings),
            None => self.providers.remove(name),
        };
        true
    }
}
