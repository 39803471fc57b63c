//! The line diff jsdiff computes (its Myers variant with its tie-breaking and
//! edge pruning), so edit diffs align changes exactly as pi shows them.

use super::Kind;

/// One run of the edit script, linked to the run before it.
struct Component {
    count: usize,
    kind: Kind,
    previous: Option<usize>,
}

/// The furthest point reached on one diagonal, with its edit script.
#[derive(Clone, Copy)]
struct Path {
    old_pos: isize,
    last: Option<usize>,
}

struct Search<'a> {
    old: &'a [&'a str],
    new: &'a [&'a str],
    arena: Vec<Component>,
}

impl Search<'_> {
    fn push(&mut self, count: usize, kind: Kind, previous: Option<usize>) -> Option<usize> {
        self.arena.push(Component { count, kind, previous });
        Some(self.arena.len() - 1)
    }

    /// Extend `path` by one insertion or removal, merging with a run of the same kind.
    fn add_to_path(&mut self, path: Path, kind: Kind, old_inc: isize) -> Path {
        let last = path.last.map(|i| (self.arena[i].count, self.arena[i].kind, self.arena[i].previous));
        let last_component = match last {
            Some((count, k, previous)) if k == kind => self.push(count + 1, kind, previous),
            _ => self.push(1, kind, path.last),
        };
        Path { old_pos: path.old_pos + old_inc, last: last_component }
    }

    /// Follow the diagonal while lines are equal; the new position reached.
    fn extract_common(&mut self, path: &mut Path, diagonal: isize) -> isize {
        let (old_len, new_len) = (self.old.len() as isize, self.new.len() as isize);
        let mut old_pos = path.old_pos;
        let mut new_pos = old_pos - diagonal;
        let mut common = 0;
        while new_pos + 1 < new_len
            && old_pos + 1 < old_len
            && self.old[(old_pos + 1) as usize] == self.new[(new_pos + 1) as usize]
        {
            new_pos += 1;
            old_pos += 1;
            common += 1;
        }
        if common > 0 {
            path.last = self.push(common, Kind::Same, path.last);
        }
        path.old_pos = old_pos;
        new_pos
    }

    fn build(&self, mut last: Option<usize>) -> Vec<(Kind, usize)> {
        let mut out = Vec::new();
        while let Some(i) = last {
            out.push((self.arena[i].kind, self.arena[i].count));
            last = self.arena[i].previous;
        }
        out.reverse();
        out
    }
}

/// The edit script turning `old` into `new`: runs of kept, removed and added lines.
pub(super) fn diff(old: &[&str], new: &[&str]) -> Vec<(Kind, usize)> {
    let mut s = Search { old, new, arena: Vec::new() };
    let (old_len, new_len) = (old.len() as isize, new.len() as isize);
    let max_edit = new_len + old_len;
    let offset = max_edit + 2;
    let mut best: Vec<Option<Path>> = vec![None; (2 * offset + 1) as usize];
    let at = |d: isize| (d + offset) as usize;

    let mut seed = Path { old_pos: -1, last: None };
    let new_pos = s.extract_common(&mut seed, 0);
    if seed.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
        return s.build(seed.last);
    }
    best[at(0)] = Some(seed);
    let (mut min_diag, mut max_diag) = (isize::MIN, isize::MAX);
    let mut edit_length: isize = 1;
    while edit_length <= max_edit {
        let mut diagonal = min_diag.max(-edit_length);
        while diagonal <= max_diag.min(edit_length) {
            let remove_path = best.get_mut(at(diagonal - 1)).and_then(Option::take);
            let add_path = best.get(at(diagonal + 1)).copied().flatten();
            let can_add = add_path.is_some_and(|p| (0..new_len).contains(&(p.old_pos - diagonal)));
            let can_remove = remove_path.is_some_and(|p| p.old_pos + 1 < old_len);
            let (Some(base), kind, inc) = (match (can_add, can_remove, add_path, remove_path) {
                (true, false, Some(a), _) => (Some(a), Kind::Added, 0),
                (true, true, Some(a), Some(r)) if r.old_pos < a.old_pos => (Some(a), Kind::Added, 0),
                (_, true, _, Some(r)) => (Some(r), Kind::Removed, 1),
                _ => (None, Kind::Same, 0),
            }) else {
                best[at(diagonal)] = None;
                diagonal += 2;
                continue;
            };
            let mut path = s.add_to_path(base, kind, inc);
            let new_pos = s.extract_common(&mut path, diagonal);
            if path.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
                return s.build(path.last);
            }
            best[at(diagonal)] = Some(path);
            if path.old_pos + 1 >= old_len {
                max_diag = max_diag.min(diagonal - 1);
            }
            if new_pos + 1 >= new_len {
                min_diag = min_diag.max(diagonal + 1);
            }
            diagonal += 2;
        }
        edit_length += 1;
    }
    Vec::new()
}
