//! Unit tests of the resources module.
