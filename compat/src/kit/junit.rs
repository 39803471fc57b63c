//! JUnit XML of a kit run (`pi-compat run --junit FILE`), for the CI of
//! people testing their own implementation: one `<testcase>` per scenario,
//! a failure as `<failure>`, an expected failure or a scenario not run as `<skipped>`.

use std::fmt::Write as _;
use std::time::Duration;

use super::run::Outcome;

/// One scenario's result.
pub struct CaseResult {
    pub name: String,
    pub outcome: Outcome,
    pub time: Duration,
}

/// The JUnit XML document of one run (`suite`: e.g. `pi-compat.jsonl`).
pub fn report(suite: &str, cases: &[CaseResult]) -> String {
    let failures = cases.iter().filter(|c| c.outcome.is_failure()).count();
    let skipped = cases.iter().filter(|c| matches!(c.outcome, Outcome::ExpectedFail(..) | Outcome::Skipped(_))).count();
    let total: f64 = cases.iter().map(|c| c.time.as_secs_f64()).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        r#"<testsuites name="pi-compat" tests="{}" failures="{failures}" skipped="{skipped}" time="{total:.3}">"#,
        cases.len()
    );
    let _ = writeln!(
        out,
        r#"  <testsuite name="{}" tests="{}" failures="{failures}" errors="0" skipped="{skipped}" time="{total:.3}">"#,
        escape(suite),
        cases.len()
    );
    for case in cases {
        let _ = write!(
            out,
            r#"    <testcase classname="{}" name="{}" time="{:.3}""#,
            escape(suite),
            escape(&case.name),
            case.time.as_secs_f64()
        );
        match &case.outcome {
            Outcome::Pass => out.push_str("/>\n"),
            Outcome::Fail(why) => {
                let _ = writeln!(
                    out,
                    ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                    escape(why),
                    escape(why)
                );
            }
            Outcome::ExpectedFail(reason, why) => {
                let text = format!("expected to fail ({reason}): {why}");
                let _ = writeln!(out, ">\n      <skipped message=\"{}\"/>\n    </testcase>", escape(&text));
            }
            Outcome::Skipped(reason) => {
                let text = format!("not run: {reason}");
                let _ = writeln!(out, ">\n      <skipped message=\"{}\"/>\n    </testcase>", escape(&text));
            }
            Outcome::UnexpectedPass(reason) => {
                let text = format!("passed although expected to fail ({reason})");
                let _ = writeln!(out, ">\n      <system-out>{}</system-out>\n    </testcase>", escape(&text));
            }
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Text made safe for XML attributes and content (characters XML 1.0
/// forbids, such as most control characters, become U+FFFD).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junit_report_has_one_case_per_scenario() {
        let cases = [
            CaseResult { name: "ok".into(), outcome: Outcome::Pass, time: Duration::from_millis(1500) },
            CaseResult {
                name: "bad".into(),
                outcome: Outcome::Fail("the agent exited (code 127) at start: <x> & \"y\"\u{1}".into()),
                time: Duration::ZERO,
            },
            CaseResult {
                name: "gap".into(),
                outcome: Outcome::ExpectedFail("known".into(), "rule 1".into()),
                time: Duration::ZERO,
            },
        ];
        let xml = report("pi-compat.jsonl", &cases);
        assert!(
            xml.contains(
                r#"<testsuite name="pi-compat.jsonl" tests="3" failures="1" errors="0" skipped="1" time="1.500">"#
            ),
            "{xml}"
        );
        assert!(xml.contains(r#"<testcase classname="pi-compat.jsonl" name="ok" time="1.500"/>"#));
        assert!(xml.contains("&lt;x&gt; &amp; &quot;y&quot;\u{fffd}"));
        assert!(xml.contains(r#"<skipped message="expected to fail (known): rule 1"/>"#));
    }
}
