//! Argument splitting and placeholder substitution.

use super::strings;
use crate::resources::{parse_command_args as parse, substitute_args as sub};

#[test]
fn words_split_on_any_whitespace() {
    assert_eq!(parse("a b\tc\n d  "), strings(&["a", "b", "c", "d"]));
    assert_eq!(parse(""), Vec::<String>::new());
    assert_eq!(parse("   "), Vec::<String>::new());
    // JavaScript `\s` includes NBSP and the BOM.
    assert_eq!(parse("a\u{a0}b\u{feff}c"), strings(&["a", "b", "c"]));
    // ...but not U+0085.
    assert_eq!(parse("a\u{85}b"), strings(&["a\u{85}b"]));
}

#[test]
fn documented_examples() {
    // `/review "API compatibility"` supplies one argument containing a space.
    assert_eq!(parse("\"API compatibility\""), strings(&["API compatibility"]));
    // Apostrophes inside words stay as text.
    assert_eq!(parse("doesn't matter"), strings(&["doesn't", "matter"]));
    // A quote with no closing match is kept as text.
    assert_eq!(parse("\"unclosed words"), strings(&["\"unclosed", "words"]));
    // Backslash before the same quote keeps it: `the "fast" path`.
    assert_eq!(parse(r#""the \"fast\" path""#), strings(&[r#"the "fast" path"#]));
    // Other backslashes are kept as typed.
    assert_eq!(parse(r#""a\b\'c""#), strings(&[r#"a\b\'c"#]));
    assert_eq!(parse(r#"a\"b c\d"#), strings(&[r#"a\"b"#, r"c\d"]));
}

#[test]
fn quote_rules() {
    assert_eq!(parse("'it\\'s here' x"), strings(&["it's here", "x"]));
    assert_eq!(parse("\"\" '' x"), strings(&["", "", "x"]));
    // A quote opens only at the start of an argument.
    assert_eq!(parse("ab\"c d\""), strings(&["ab\"c", "d\""]));
    // Text right after a closing quote joins the same argument.
    assert_eq!(parse("\"a b\"c \"d\" 'e'"), strings(&["a bc", "d", "e"]));
    // The other quote character is plain text inside quotes.
    assert_eq!(parse("\"it's\" 'say \"hi\"'"), strings(&["it's", "say \"hi\""]));
    // Unclosed after other arguments: the quote becomes text and the rest is split normally
    // (a quote at the start of a later argument opens again).
    assert_eq!(parse("x 'a \"b c\""), strings(&["x", "'a", "b c"]));
    assert_eq!(parse("x\"y\"z 'a''b'"), strings(&["x\"y\"z", "a'b'"]));
    // Unclosed quote that ended with an escaped quote.
    assert_eq!(parse(r#""a\""#), strings(&[r#""a\""#]));
    assert_eq!(parse("\""), strings(&["\""]));
    assert_eq!(parse("a \""), strings(&["a", "\""]));
    // Multi-byte text survives the rewind.
    assert_eq!(parse("'héllo wörld"), strings(&["'héllo", "wörld"]));
}

#[test]
fn positional_and_all() {
    let args = strings(&["one", "two", "three"]);
    assert_eq!(sub("$1|$2|$3|$4", &args), "one|two|three|");
    assert_eq!(sub("$@ / $ARGUMENTS", &args), "one two three / one two three");
    assert_eq!(sub("$0|$00|$99999999999999999999999", &args), "||");
    let many: Vec<String> = (1..=11).map(|i| format!("a{i}")).collect();
    assert_eq!(sub("$10 $11 $1x", &many), "a10 a11 a1x");
    assert_eq!(sub("$ARGUMENTSX $@@", &args), "one two threeX one two three@");
}

#[test]
fn defaults() {
    let none: Vec<String> = Vec::new();
    assert_eq!(sub("Focus on ${1:-correctness, security}.", &none), "Focus on correctness, security.");
    assert_eq!(sub("Focus on ${1:-correctness}.", &strings(&["speed"])), "Focus on speed.");
    // An empty argument takes the default too.
    assert_eq!(sub("${1:-d}|${2:-e}", &strings(&["", "x"])), "d|x");
    assert_eq!(sub("${@:-all}|${ARGUMENTS:-all}", &none), "all|all");
    assert_eq!(sub("${@:-all}", &strings(&["a", "b"])), "a b");
    // The default ends at the first `}`; it may be empty and span lines.
    assert_eq!(sub("${1:-a}b}|${1:-}|${1:-x\ny}", &none), "ab}||x\ny");
    assert_eq!(sub("${0:-zero}", &strings(&["a"])), "zero");
}

#[test]
fn slices() {
    let args = strings(&["a", "b", "c", "d"]);
    assert_eq!(sub("${@:2}", &args), "b c d");
    assert_eq!(sub("${@:2:2}", &args), "b c");
    assert_eq!(sub("${@:1:1}", &args), "a");
    assert_eq!(sub("${@:0}", &args), "a b c d");
    assert_eq!(sub("${@:0:1}", &args), "a");
    assert_eq!(sub("${@:9}|${@:3:99}|${@:2:0}", &args), "|c d|");
    assert_eq!(sub("${@:99999999999999999999999}|${@:2:99999999999999999999999}", &args), "|b c d");
}

#[test]
fn no_recursion_and_literals_kept() {
    let args = strings(&["$2", "${1:-x}", "$@"]);
    assert_eq!(sub("$1 $2 $3", &args), "$2 ${1:-x} $@");
    let kept = "$ $x ${x} ${@} ${@:} ${@:a} ${@:1:} ${1} ${1:x} $$ end$";
    assert_eq!(sub(kept, &args), kept);
    assert_eq!(sub("$$1", &strings(&["v"])), "$v");
}

#[test]
fn observed_reference_argument_list() {
    // pi 1.6.0 turned this into `$1`="API compatibility", `$2`="two",
    // `${@:2}`="two three four doesn't \"unclosed".
    let args = parse("\"API compatibility\" two 'three four' doesn't \"unclosed");
    assert_eq!(args, strings(&["API compatibility", "two", "three four", "doesn't", "\"unclosed"]));
    assert_eq!(sub("${@:2}", &args), "two three four doesn't \"unclosed");
}
