//! A session id as a held lease keeps it: a UUID in its canonical text (every
//! id pi makes: lower-case hex, hyphens at 8, 13, 18 and 23) in its 16 bytes,
//! inline, any other id on the heap. Every session of a worker in a cluster
//! holds a lease, so its id costs no allocation in the common case. Beside
//! it, in the room the enum's tag leaves before the id's 8-byte-aligned
//! bytes, a small number of its holder's (the fence keeps its session
//! directory's index there, see `fence`): no byte more.

use std::fmt;
use std::ops::Deref;

/// Length of a UUID's canonical text.
const TEXT: usize = 36;
const HYPHENS: [usize; 4] = [8, 13, 18, 23];
const HEX: &[u8; 16] = b"0123456789abcdef";

/// A session id, held compactly, and its holder's small number (`beside`).
#[derive(Clone, PartialEq, Eq)]
pub(super) enum CompactId {
    /// A UUID whose canonical text is the id.
    Uuid {
        beside: u32,
        bytes: [u8; 16],
    },
    Other {
        beside: u32,
        id: Box<str>,
    },
}

/// The text of a [`CompactId`] (formatted on the stack for a UUID).
pub(super) enum IdText<'a> {
    Uuid([u8; TEXT]),
    Other(&'a str),
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// The 16 bytes of `id` when it is a UUID in canonical text (upper case is
/// not: its text would not come back the same).
fn parse(id: &str) -> Option<[u8; 16]> {
    let text = id.as_bytes();
    if text.len() != TEXT || HYPHENS.iter().any(|&at| text[at] != b'-') {
        return None;
    }
    let mut digits = text.iter().enumerate().filter(|(at, _)| !HYPHENS.contains(at)).map(|(_, &c)| nibble(c));
    let mut bytes = [0u8; 16];
    for byte in &mut bytes {
        *byte = (digits.next()?? << 4) | digits.next()??;
    }
    Some(bytes)
}

impl CompactId {
    /// Session `id`, with its holder's number `beside`.
    pub(super) fn new(id: &str, beside: u32) -> CompactId {
        match parse(id) {
            Some(bytes) => CompactId::Uuid { beside, bytes },
            None => CompactId::Other { beside, id: id.into() },
        }
    }

    /// The holder's number kept beside the id.
    pub(super) fn beside(&self) -> u32 {
        match self {
            CompactId::Uuid { beside, .. } | CompactId::Other { beside, .. } => *beside,
        }
    }

    /// The id's text.
    pub(super) fn text(&self) -> IdText<'_> {
        match self {
            CompactId::Uuid { bytes, .. } => {
                let mut text = [b'-'; TEXT];
                let mut digits = (0..TEXT).filter(|at| !HYPHENS.contains(at));
                for byte in bytes {
                    for nibble in [byte >> 4, byte & 0xf] {
                        if let Some(at) = digits.next() {
                            text[at] = HEX[usize::from(nibble)];
                        }
                    }
                }
                IdText::Uuid(text)
            }
            CompactId::Other { id, .. } => IdText::Other(id),
        }
    }
}

impl Deref for IdText<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            // Hex digits and hyphens: always UTF-8.
            IdText::Uuid(text) => std::str::from_utf8(text).unwrap_or_default(),
            IdText::Other(id) => id,
        }
    }
}

impl AsRef<str> for IdText<'_> {
    fn as_ref(&self) -> &str {
        self
    }
}

impl fmt::Display for IdText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl fmt::Debug for CompactId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.text(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_canonical_uuid_is_held_inline_and_every_id_comes_back_the_same() {
        let made = pi_core::session::new_session_id();
        assert!(matches!(CompactId::new(&made, 0), CompactId::Uuid { .. }), "{made}");
        for id in [
            made.as_str(),
            "0190e2a4-7b1c-7def-8000-0123456789ab",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
            "00000000-0000-0000-0000-000000000000",
            // Not canonical: upper case, braces, no hyphens, misplaced hyphen, not hex, other lengths.
            "0190E2A4-7B1C-7DEF-8000-0123456789AB",
            "0190e2a47b1c7def80000123456789ab",
            "0190e2a4-7b1c7-def-8000-0123456789ab",
            "0190e2a4-7b1c-7def-8000-0123456789ag",
            "0190e2a4-7b1c-7def-8000-0123456789abc",
            "my-session",
            "a",
        ] {
            for beside in [0, 7, u32::MAX] {
                let compact = CompactId::new(id, beside);
                assert_eq!(&*compact.text(), id);
                assert_eq!(compact.text().to_string(), id);
                assert_eq!(compact.beside(), beside, "{id}");
                assert_eq!(matches!(compact, CompactId::Uuid { .. }), parse(id).is_some(), "{id}");
            }
        }
        assert!(matches!(CompactId::new("0190E2A4-7B1C-7DEF-8000-0123456789AB", 1), CompactId::Other { .. }));
        assert!(matches!(CompactId::new("0190e2a4-7b1c-7def-8000-0123456789ab", 1), CompactId::Uuid { .. }));
    }

    #[test]
    fn it_takes_less_room_than_a_boxed_id_and_its_allocation() {
        // A boxed id: 16 bytes inline and a 36-byte allocation. The number
        // beside it takes no room: it sits in the tag's padding.
        assert!(std::mem::size_of::<CompactId>() <= 24, "{}", std::mem::size_of::<CompactId>());
    }
}
