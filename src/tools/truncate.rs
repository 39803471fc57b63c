//! Output truncation shared by read, bash and grep (line and byte limits).
