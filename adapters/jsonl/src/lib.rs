//! pi-jsonl: the native pi JSONL dialect (`pi --mode rpc`).
