//! pi's `parseArgs(args)` (pi 1.6.0's `Args` object) computed from pi-rpc's
//! own command-line table ([`crate::cli_args::Args`]): which options exist,
//! their short forms and whether they take a value come from that table;
//! how pi reads them is pi's: an option whose value is missing or invalid is
//! a diagnostic, not a failure, `@path` arguments are `fileArgs`, options
//! pi does not know are `unknownFlags` (`--name=value`, `--name value`
//! unless the value starts with `-` or `@`, else `--name` alone), an unknown
//! short option is an error diagnostic. pi-rpc's own options (`--protocol`,
//! `--tool-approval`, `--faux-script`) are not pi's: unknown flags here.

use clap::{ArgAction, CommandFactory};
use serde_json::{Map, Value, json};

use crate::cli_args::{Args, normalize_args};

/// pi's thinking levels, in its order (its warning lists them).
const THINKING_LEVELS: [&str; 7] = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

/// How one option of the table reads.
#[derive(Clone, Copy, PartialEq)]
enum Takes {
    Nothing,
    Value,
    /// An optional value (`--list-models [search]`).
    MaybeValue,
}

/// One option of the table as pi names it.
struct Option_ {
    id: String,
    takes: Takes,
    /// Comma-separated (`--tools`, `--models`, `--exclude-tools`).
    list: bool,
    /// Repeatable (`--extension`, `--skill`, …).
    repeated: bool,
}

/// The key of pi's `Args` for the table's option `id`; `None` for pi-rpc's own options.
fn pi_key(id: &str) -> Option<String> {
    match id {
        "continue_session" => Some("continue".to_string()),
        "approve" | "no_approve" => Some("projectTrustOverride".to_string()),
        "protocol" | "tool_approval" | "faux_script" | "messages" | "extension_flags" => None,
        _ => {
            let mut out = String::new();
            let mut upper = false;
            for c in id.chars() {
                if c == '_' {
                    upper = true;
                } else if upper {
                    out.extend(c.to_uppercase());
                    upper = false;
                } else {
                    out.push(c);
                }
            }
            Some(out)
        }
    }
}

/// The option `arg` names (`--long` or `-s`), when pi knows it.
fn lookup(command: &clap::Command, arg: &str) -> Option<Option_> {
    let found = if let Some(long) = arg.strip_prefix("--") {
        command.get_arguments().find(|a| a.get_long() == Some(long))
    } else {
        let mut chars = arg.strip_prefix('-')?.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else { return None };
        command.get_arguments().find(|a| a.get_short() == Some(c))
    }?;
    pi_key(found.get_id().as_str())?;
    let optional = found.get_num_args().is_some_and(|range| range.min_values() == 0);
    let takes = match (found.get_action().takes_values(), optional) {
        (false, _) => Takes::Nothing,
        (true, false) => Takes::Value,
        (true, true) => Takes::MaybeValue,
    };
    Some(Option_ {
        id: found.get_id().as_str().to_string(),
        takes,
        list: found.get_value_delimiter().is_some(),
        repeated: matches!(found.get_action(), ArgAction::Append),
    })
}

/// What pi's `parseArgs` accumulates.
#[derive(Default)]
struct Parsed {
    fields: Map<String, Value>,
    messages: Vec<String>,
    file_args: Vec<String>,
    /// In first-set order; a later value replaces an earlier one (pi's `Map.set`).
    unknown: Vec<(String, Value)>,
    diagnostics: Vec<Value>,
}

impl Parsed {
    fn positional(&mut self, arg: &str) {
        match arg.strip_prefix('@') {
            Some(path) => self.file_args.push(path.to_string()),
            None => self.messages.push(arg.to_string()),
        }
    }

    fn unknown_flag(&mut self, name: &str, value: Value) {
        match self.unknown.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = value,
            None => self.unknown.push((name.to_string(), value)),
        }
    }

    fn diagnostic(&mut self, kind: &str, message: String) {
        self.diagnostics.push(json!({"type": kind, "message": message}));
    }

    /// `value` given to option `option` (`key` in pi's `Args`).
    fn set(&mut self, option: &Option_, key: &str, value: &str) {
        match option.id.as_str() {
            "thinking" if !THINKING_LEVELS.contains(&value) => {
                let valid = THINKING_LEVELS.join(", ");
                return self
                    .diagnostic("warning", format!("Invalid thinking level \"{value}\". Valid values: {valid}"));
            }
            "mode" if !["text", "json", "rpc"].contains(&value) => {
                return self.diagnostic("error", format!("Invalid mode \"{value}\". Valid values: text, json, rpc"));
            }
            "tui_mode" if !["regular", "fullscreen"].contains(&value) => {
                let message = format!("Invalid TUI mode \"{value}\". Valid values: regular, fullscreen");
                return self.diagnostic("error", message);
            }
            _ => {}
        }
        if option.list {
            let items = value.split(',').map(str::trim).filter(|s| !s.is_empty());
            self.fields.insert(key.to_string(), json!(items.collect::<Vec<_>>()));
        } else if option.repeated {
            let entry = self.fields.entry(key.to_string()).or_insert_with(|| json!([]));
            if let Some(list) = entry.as_array_mut() {
                list.push(json!(value));
            }
        } else {
            self.fields.insert(key.to_string(), json!(value));
        }
    }

    fn into_json(self) -> Value {
        let mut out = self.fields;
        out.insert("messages".to_string(), json!(self.messages));
        out.insert("fileArgs".to_string(), json!(self.file_args));
        let unknown = self.unknown.into_iter().map(|(name, value)| json!([name, value]));
        out.insert("unknownFlags".to_string(), Value::Array(unknown.collect()));
        out.insert("diagnostics".to_string(), Value::Array(self.diagnostics));
        Value::Object(out)
    }
}

/// The message pi gives when option `id` has no usable value, if it gives one.
fn missing_value_message(id: &str) -> Option<&'static str> {
    match id {
        "mode" => Some("--mode requires text, json, or rpc"),
        "use_theme" => Some("--use-theme requires a theme name"),
        "tui_mode" => Some("--tui-mode requires regular or fullscreen"),
        "name" => Some("--name requires a value"),
        _ => None,
    }
}

/// pi's `parseArgs(args)`: its `Args` as JSON, `unknownFlags` as `[name, value]` pairs.
pub fn pi_args(args: &[String]) -> Value {
    let command = Args::command();
    let args: Vec<String> = normalize_args(args.iter().map(std::ffi::OsString::from))
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut parsed = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        let next = args.get(i + 1).map(String::as_str);
        i += 1;
        if arg == "--" {
            args[i..].iter().for_each(|a| parsed.positional(a));
            break;
        }
        if arg == "--help" || arg == "-h" {
            parsed.fields.insert("help".to_string(), json!(true));
            continue;
        }
        if let Some(option) = lookup(&command, arg)
            && let Some(key) = pi_key(&option.id)
        {
            match option.takes {
                Takes::Nothing => {
                    let value = option.id != "no_approve";
                    parsed.fields.insert(key, json!(value));
                    // `-p <message>`: the next argument is a message unless it looks like an option or a file.
                    let message = next.filter(|n| !n.starts_with('@') && (!n.starts_with('-') || n.starts_with("---")));
                    if let (true, Some(message)) = (option.id == "print", message) {
                        parsed.messages.push(message.to_string());
                        i += 1;
                    }
                    continue;
                }
                Takes::MaybeValue => {
                    match next.filter(|n| !n.starts_with('-') && !n.starts_with('@')) {
                        Some(value) => {
                            parsed.fields.insert(key, json!(value));
                            i += 1;
                        }
                        None => {
                            parsed.fields.insert(key, json!(true));
                        }
                    }
                    continue;
                }
                Takes::Value => {
                    // These three refuse a value that looks like an option; the others take whatever follows.
                    let strict = matches!(option.id.as_str(), "mode" | "use_theme" | "tui_mode");
                    let usable = next.filter(|n| !strict || !n.starts_with('-'));
                    match (usable, missing_value_message(&option.id)) {
                        (Some(value), _) => {
                            parsed.set(&option, &key, value);
                            i += 1;
                            continue;
                        }
                        (None, Some(message)) => {
                            parsed.diagnostic("error", message.to_string());
                            continue;
                        }
                        // pi reads a value option at the end as an unknown flag.
                        (None, None) => {}
                    }
                }
            }
        }
        if arg.starts_with('@') {
            parsed.positional(arg);
        } else if let Some(body) = arg.strip_prefix("--") {
            match body.split_once('=') {
                Some((name, value)) => parsed.unknown_flag(name, json!(value)),
                None => match next.filter(|n| !n.starts_with('-') && !n.starts_with('@')) {
                    Some(value) => {
                        parsed.unknown_flag(body, json!(value));
                        i += 1;
                    }
                    None => parsed.unknown_flag(body, json!(true)),
                },
            }
        } else if arg.starts_with('-') {
            parsed.diagnostic("error", format!("Unknown option: {arg}"));
        } else {
            parsed.positional(arg);
        }
    }
    parsed.into_json()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Value {
        pi_args(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn reads_options_as_pi_does() {
        let args = parse(&["-p", "say hi", "--thinking", "high", "--tools", "read, bash,", "-nc", "@a.md", "-a"]);
        assert_eq!(args["print"], true);
        assert_eq!(args["messages"], json!(["say hi"]));
        assert_eq!(args["tools"], json!(["read", "bash"]));
        assert_eq!(args["noContextFiles"], true);
        assert_eq!(args["fileArgs"], json!(["a.md"]));
        assert_eq!(args["projectTrustOverride"], true);
        let args = parse(&["--mode", "weird", "--protocol", "jsonl", "--x=1", "-q", "--list-models", "--", "-z"]);
        assert_eq!(args["unknownFlags"], json!([["protocol", "jsonl"], ["x", "1"]]));
        assert_eq!(args["listModels"], true);
        assert_eq!(args["messages"], json!(["-z"]));
        let messages: Vec<&str> =
            args["diagnostics"].as_array().unwrap().iter().filter_map(|d| d["message"].as_str()).collect();
        assert_eq!(messages, ["Invalid mode \"weird\". Valid values: text, json, rpc", "Unknown option: -q"]);
        assert!(args.get("mode").is_none());
        let args = parse(&["-e", "a", "--extension", "b", "--name", "-nc", "--thinking", "big"]);
        assert_eq!((args["extensions"].clone(), args["name"].clone()), (json!(["a", "b"]), json!("-nc")));
        assert_eq!(args["diagnostics"][0]["type"], "warning");
    }
}
