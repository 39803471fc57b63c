//! JUnit XML of a kit run (`pi-compat run --junit FILE`), for the CI of
//! people testing their own implementation: one `<testcase>` per scenario,
//! a failure as `<failure>`, an expected failure or a scenario not run as
//! `<skipped>`. Written by `quick-junit` (nextest's JUnit model), which also
//! escapes the text and drops the characters XML 1.0 forbids.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::run::Outcome;

/// One scenario's result.
pub struct CaseResult {
    pub name: String,
    pub outcome: Outcome,
    pub time: Duration,
}

/// The JUnit XML document of one run (`suite`: e.g. `pi-compat.jsonl`).
pub fn report(suite: &str, cases: &[CaseResult]) -> String {
    let total: Duration = cases.iter().map(|c| c.time).sum();
    let mut test_suite = TestSuite::new(suite);
    test_suite.set_time(total);
    test_suite.add_test_cases(cases.iter().map(|case| test_case(suite, case)));
    let mut report = Report::new("pi-compat");
    report.set_time(total).add_test_suite(test_suite);
    // Serialising into memory fails only on a bug of the writer; the kit's
    // result does not depend on this file.
    report.to_string().unwrap_or_else(|e| {
        tracing::warn!("the JUnit report could not be written: {e}");
        String::new()
    })
}

fn test_case(suite: &str, case: &CaseResult) -> TestCase {
    let mut system_out = None;
    let status = match &case.outcome {
        Outcome::Pass => TestCaseStatus::success(),
        Outcome::Fail(why) => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_message(why.as_str()).set_description(why.as_str());
            status
        }
        Outcome::ExpectedFail(reason, why) => skipped(format!("expected to fail ({reason}): {why}")),
        Outcome::Skipped(reason) => skipped(format!("not run: {reason}")),
        Outcome::UnexpectedPass(reason) => {
            system_out = Some(format!("passed although expected to fail ({reason})"));
            TestCaseStatus::success()
        }
    };
    let mut test_case = TestCase::new(case.name.as_str(), status);
    test_case.set_classname(suite).set_time(case.time);
    if let Some(text) = system_out {
        test_case.set_system_out(text);
    }
    test_case
}

fn skipped(message: String) -> TestCaseStatus {
    let mut status = TestCaseStatus::skipped();
    status.set_message(message);
    status
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
            CaseResult { name: "lucky".into(), outcome: Outcome::UnexpectedPass("flaky".into()), time: Duration::ZERO },
        ];
        let xml = report("pi-compat.jsonl", &cases);
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"), "{xml}");
        assert!(
            xml.contains(r#"<testsuites name="pi-compat" tests="4" skipped="1" failures="1" errors="0" time="1.500">"#),
            "{xml}"
        );
        assert!(
            xml.contains(
                r#"<testsuite name="pi-compat.jsonl" tests="4" skipped="1" errors="0" failures="1" time="1.500">"#
            ),
            "{xml}"
        );
        assert!(xml.contains(r#"<testcase name="ok" classname="pi-compat.jsonl" time="1.500"/>"#), "{xml}");
        // Escaped, and the control character XML forbids dropped.
        let why = "the agent exited (code 127) at start: &lt;x&gt; &amp; &quot;y&quot;";
        assert!(xml.contains(&format!(r#"<failure message="{why}">{why}</failure>"#)), "{xml}");
        assert!(xml.contains(r#"<skipped message="expected to fail (known): rule 1"/>"#), "{xml}");
        assert!(xml.contains("<system-out>passed although expected to fail (flaky)</system-out>"), "{xml}");
        assert!(xml.ends_with("</testsuites>\n"), "{xml}");
    }
}
