//! The table of requests the server sent to its client and awaits an
//! answer for (ACP `session/request_permission`, `fs/*`, `terminal/*`): each
//! gets a fresh JSON-RPC id, with what its answer needs (the core's request
//! id, the method, the session), until the answer arrives or the core stops
//! waiting. The same table as [`InFlight`](crate::inflight::InFlight), whose
//! tags are the ids sent.

/// Outbound requests awaiting the client's response, by the id they were sent with.
pub type Outbound<T> = crate::inflight::InFlight<T>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fresh_and_answers_are_taken_once() {
        let mut table = Outbound::default();
        let a = table.insert("a");
        let b = table.insert("b");
        assert_ne!(a, b);
        assert_eq!(table.remove(a), Some("a"));
        assert_eq!(table.remove(a), None, "a second answer is not an answer");
        assert_eq!(table.take_where(|e| *e == "b"), Some((b, "b")));
        assert!(table.is_empty());
    }
}
