//! crash (stub).
pub async fn run(_pi: &std::path::Path, _seed: u64, _kills: Option<usize>, _seconds: Option<u64>) -> bool {
    true
}
