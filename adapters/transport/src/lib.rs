//! pi-transport: what every dialect of pi-rpc shares below its own mapping.
//!
//! * [`framing`]: LF and `Content-Length` framing of a byte stream, with limits and resynchronisation.
//! * [`writer`]: the one writer that owns an output stream.
//! * [`batch`]: the messages of one turn of a connection's loop, in one buffer.
//! * [`streamed`]: messages written as they are serialised (big replies).
//! * [`raw`]: a message's top level as raw tokens (ids echoed exactly as sent).
//! * [`seq`]: the sequence number member of an outbound message (`pi serve`).
//! * [`inflight`]: the requests awaiting their reply.
//! * [`detect`]: which dialect a connection's first record speaks.
//! * [`outbound`]: the requests sent to the client, awaiting its response.
//! * [`connection`]: the loop that serves one connection with a [`connection::Dialect`].
//! * [`protocol`]: the one table of commands every dialect maps, with their params and result types.

pub mod batch;
pub mod connection;
pub mod detect;
pub mod framing;
pub mod inflight;
pub mod outbound;
pub mod protocol;
pub mod raw;
pub mod seq;
pub mod streamed;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod writer;

pub use batch::MessageBatch;
pub use connection::{
    Action, BatchedOutputs, Delivered, Dialect, MessageSink, OpPort, OutputPort, Received, ServeEnd, serve,
    serve_in_order, serve_stream,
};
pub use framing::{FrameError, FrameReader, Framing, Preread, Record, RecordReader, RecordSource};
pub use inflight::InFlight;
pub use outbound::Outbound;
pub use streamed::{Outgoing, StreamedMessage};
