//! Path resolution for tools (relative to the session cwd, `~` expansion).
