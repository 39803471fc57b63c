//! pi-jsonrpc: the JSON-RPC 2.0 dialect of pi-rpc.
