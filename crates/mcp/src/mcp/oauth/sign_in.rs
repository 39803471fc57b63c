//! Signing in to an MCP server (filled in below).
