//! An extension's registrations made live: its tools callable, its
//! virtual models and providers in the model registry, kept in step with
//! each registration it sends (those it no longer registers go).

use std::sync::Arc;

use super::Agent;
use crate::event::AgentEvent;
use crate::extensions::ExtensionTool;

impl Agent {
    /// Put extension `id`'s virtual models in the registry (those it no
    /// longer registers go); one whose id a physical model has is refused.
    pub(super) async fn sync_virtual_models(&mut self, id: usize) {
        let Some(ext) = self.ext.handle().get(id).filter(|e| !e.is_dead()) else { return };
        let Some(registration) = ext.registration() else { return };
        let mut now = Vec::new();
        for model in registration.virtual_models {
            let key = (model.provider.clone(), model.id.clone());
            match self.models.add_virtual(model) {
                Ok(()) => now.push(key),
                Err(error) => self.registration_refused(ext.path_string(), error).await,
            }
        }
        for (provider, model) in self.ext.replace_virtual_models(id, now.clone()) {
            if !now.contains(&(provider.clone(), model.clone())) {
                self.models.remove_virtual(&provider, &model);
            }
        }
    }

    /// Put extension `id`'s providers in the registry, as it registers them
    /// now: those it no longer registers are taken out (latest first, so
    /// each is restored to what it replaced); a new or changed one goes in,
    /// merged over the config registered for that name before, by this
    /// extension or another (pi's model runtime); an unchanged one stays as
    /// it is. A config the registry refuses is one `extension_error`.
    pub(super) async fn sync_providers(&mut self, id: usize) {
        let Some(ext) = self.ext.handle().get(id).filter(|e| !e.is_dead()) else { return };
        let Some(registration) = ext.registration() else { return };
        let before = self.ext.replace_providers(id, Vec::new());
        if before.is_empty() && registration.providers.is_empty() {
            return;
        }
        for spec in before.iter().rev().filter(|b| !registration.providers.iter().any(|p| p.name == b.name)) {
            self.models.unregister_provider(spec);
        }
        let streams: std::sync::Arc<dyn crate::provider::runtime::PiEventSource> =
            std::sync::Arc::new(crate::extensions::provider_stream::ExtensionStreams::new(ext.clone()));
        let mut now = Vec::new();
        for spec in registration.providers {
            if before.contains(&spec) {
                now.push(spec);
                continue;
            }
            // Registered again by this extension: only the fields of the
            // calls made since go over the provider's config (pi merges each
            // call alone, over what other extensions registered meanwhile).
            let mut config = std::borrow::Cow::Borrowed(&spec.config);
            let first = match before.iter().find(|b| b.name == spec.name) {
                Some(old) => {
                    self.models.drop_provider_services(old);
                    if let Some(calls) = spec.calls_since(old) {
                        config = std::borrow::Cow::Owned(calls);
                    }
                    false
                }
                None => true,
            };
            // Extensions loaded after this one registered the name already
            // (their registrations arrived first): this config goes under
            // theirs, as pi applies registrations in load order.
            let later = if first { self.ext.providers_after(id, &spec.name) } else { Vec::new() };
            if !later.is_empty() {
                self.models.forget_provider_config(&spec.name);
            }
            match self.models.register_provider(&spec, &config, streams.clone(), &ext) {
                Ok(()) => now.push(spec),
                Err(error) => self.registration_refused(ext.path_string(), error).await,
            }
            for spec in &later {
                self.models.reapply_provider_config(spec);
            }
        }
        self.ext.replace_providers(id, now);
    }

    /// Make extension `id`'s registered tools callable (replacing those of
    /// an earlier registration). A name another extension owns is refused.
    pub(super) async fn sync_extension_tools(&mut self, id: usize) {
        let Some(ext) = self.ext.handle().get(id).filter(|e| !e.is_dead()) else { return };
        let Some(registration) = ext.registration() else { return };
        // Tools left out of the new registration go; the others are replaced
        // in place, keeping their place in the active list.
        let previous = self.ext.take_tools_of(id);
        for name in previous.iter().filter(|n| !registration.tools.iter().any(|t| &t.name == *n)) {
            self.remove_extension_tool(name);
        }
        let known_before = self.ext.known_tools(id);
        let mut added = Vec::new();
        let mut auto = Vec::new();
        for spec in registration.tools {
            // pi's `--tools` allowlist: a tool it does not name is not registered.
            if !self.ext.tool_allowed(&spec.name) {
                continue;
            }
            let owner = self.ext.tool_owner(&spec.name);
            if let Some(owner) = owner {
                let other = self.ext.handle().get(owner).map(|e| e.path_string()).unwrap_or_default();
                let error = format!("tool \"{}\" is already registered by {other}", spec.name);
                let event =
                    AgentEvent::ExtensionError { extension_path: ext.path_string(), event: "register".into(), error };
                self.emit(event).await;
                continue;
            }
            // A tool is activated when registered as one pi activates on
            // registration (unless excluded: the registry refuses it) and
            // the extension's previous registration did not (a new tool,
            // or one that was `hidden`, `codemode`, `defaultActive: false`);
            // otherwise re-registering keeps what `setActiveTools` made of
            // it since. With a `--tools`
            // allowlist only the tools it names are, and a tool `--tools`
            // names is whatever its `defaultActive` (as pi's loadout).
            let (on_registration, named) = self.ext.activates_on_registration(&spec);
            let activate = !known_before.contains(&spec.name) && on_registration && !self.toolbox.withheld(&spec.name);
            if spec.active || named {
                auto.push(spec.name.clone());
            }
            let name = spec.name.clone();
            let tool = Arc::new(ExtensionTool::new(ext.clone(), spec));
            if activate && named {
                self.toolbox.add_extension_tool_in_order(tool, self.ext.requested_tools());
            } else {
                self.toolbox.add_extension_tool(tool, activate);
            }
            added.push(name);
        }
        self.ext.record_tools(id, added, auto);
        // Once the session started, a registry change activates `--tools`' tools again.
        if self.toolbox.mcp_activation_begun() {
            self.reactivate_named_tools();
        }
        self.ext.tools_changed();
    }

    /// The path of the extension that registered tool `name`, if one did.
    pub(super) fn extension_tool_owner(&self, name: &str) -> Option<String> {
        let owner = self.ext.tool_owner(name)?;
        self.ext.handle().get(owner).map(|e| e.path_string())
    }

    /// Remove an extension tool; a built-in it replaced comes back.
    pub(super) fn remove_extension_tool(&mut self, name: &str) {
        self.toolbox.remove_extension_tool(name);
    }
}
