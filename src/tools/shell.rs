//! Shell process execution shared by the `bash` tool and the RPC `bash` command.
