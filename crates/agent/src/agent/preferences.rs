//! The settings as they stand ([`Preferences`]): `settings.json`'s values,
//! the two toggles clients change at run time (auto-compaction, auto-retry),
//! and saving changes back to `settings.json` as pi does.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use crate::config::Settings;
use crate::config::settings::persist_setting;

/// Settings and run-time toggles.
pub(super) struct Preferences {
    settings: Settings,
    /// The agent directory whose `settings.json` changes are saved to
    /// (`None`: not saved).
    save_to: Option<PathBuf>,
    auto_compaction: bool,
    /// Shared with runs, which read it before each retry.
    retry_enabled: Arc<AtomicBool>,
}

impl Preferences {
    /// `save_to`: where changes are saved, when they are.
    pub(super) fn new(settings: Settings, save_to: Option<PathBuf>) -> Self {
        Preferences {
            auto_compaction: settings.compaction.enabled,
            retry_enabled: Arc::new(AtomicBool::new(settings.retry.enabled)),
            settings,
            save_to,
        }
    }

    /// `settings.json`'s values (as read at start).
    pub(super) fn settings(&self) -> &Settings {
        &self.settings
    }

    pub(super) fn auto_compaction(&self) -> bool {
        self.auto_compaction
    }

    /// `set_auto_compaction` (saved).
    pub(super) fn set_auto_compaction(&mut self, enabled: bool) {
        self.auto_compaction = enabled;
        self.save("compaction.enabled", Value::Bool(enabled));
    }

    pub(super) fn auto_retry(&self) -> bool {
        self.retry_enabled.load(Ordering::SeqCst)
    }

    /// The auto-retry flag a run watches.
    pub(super) fn retry_flag(&self) -> Arc<AtomicBool> {
        self.retry_enabled.clone()
    }

    /// `set_auto_retry` (saved; a running run sees it at its next retry).
    pub(super) fn set_auto_retry(&mut self, enabled: bool) {
        self.retry_enabled.store(enabled, Ordering::SeqCst);
        self.save("retry.enabled", Value::Bool(enabled));
    }

    /// `settings.json` read again (pi's reload): its values apply; the
    /// auto-compaction and auto-retry toggles follow the file when changes
    /// are saved to it (else they stay as the client set them).
    pub(super) fn reload(&mut self, settings: Settings) {
        if self.save_to.is_some() {
            self.auto_compaction = settings.compaction.enabled;
            self.retry_enabled.store(settings.retry.enabled, Ordering::SeqCst);
        }
        self.settings = settings;
    }

    /// Save `key` to `settings.json` (when changes are saved); a failure is logged.
    pub(super) fn save(&self, key: &str, value: Value) {
        let Some(agent_dir) = &self.save_to else { return };
        if let Err(e) = persist_setting(agent_dir, key, value) {
            tracing::warn!("cannot save setting {key}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toggles_start_from_the_settings_and_are_saved_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = Settings::default();
        settings.compaction.enabled = false;
        settings.retry.enabled = true;
        let mut prefs = Preferences::new(settings, Some(dir.path().to_path_buf()));
        assert!(!prefs.auto_compaction() && prefs.auto_retry());
        let flag = prefs.retry_flag();
        prefs.set_auto_retry(false);
        prefs.set_auto_compaction(true);
        assert!(!flag.load(Ordering::SeqCst) && prefs.auto_compaction());
        let saved = std::fs::read_to_string(dir.path().join("settings.json")).unwrap();
        let saved: Value = serde_json::from_str(&saved).unwrap();
        assert_eq!(saved["retry"]["enabled"], Value::Bool(false));
        assert_eq!(saved["compaction"]["enabled"], Value::Bool(true));

        let unsaved = Preferences::new(Settings::default(), None);
        unsaved.save("steeringMode", Value::String("all".into()));
    }
}
