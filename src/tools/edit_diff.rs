//! Diff and patch generation for the `edit` tool.
