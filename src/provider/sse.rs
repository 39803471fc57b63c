//! Server-sent events parsing for streaming providers.
