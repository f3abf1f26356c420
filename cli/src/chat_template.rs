//! A model directory's chat template, rendered as transformers' `apply_chat_template` renders it.
//!
//! The template is the Jinja source of `chat_template.jinja` beside the model, else the `chat_template` of its
//! `tokenizer_config.json` (a string, or a list of `{name, template}` of which `default` is taken). It runs in
//! `minijinja` set up as transformers sets up Jinja for chat templates (`trim_blocks`, `lstrip_blocks`, loop
//! controls, `raise_exception`, Python's string and dict methods through `minijinja-contrib`'s pycompat), with
//! `tojson` writing what Python's `json.dumps(x, ensure_ascii=False)` writes (`", "` and `": "` separators, keys
//! in their order), because the tools' JSON lines are part of the prompt the model was trained on.

use anyhow::{Context, Result, anyhow, bail};
use minijinja::value::{Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind};
use std::path::Path;

/// A loaded chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    /// Where it came from, for messages.
    pub origin: String,
}

impl ChatTemplate {
    /// The chat template of model directory `dir`. Errors: no template there, or one that does not compile.
    pub fn from_model_dir(dir: &Path) -> Result<Self> {
        let jinja = dir.join("chat_template.jinja");
        let (src, origin) = if jinja.is_file() {
            (std::fs::read_to_string(&jinja).with_context(|| format!("reading {}", jinja.display()))?, jinja.display().to_string())
        } else {
            let path = dir.join("tokenizer_config.json");
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("{} has no chat_template.jinja and no readable tokenizer_config.json", dir.display()))?;
            let v: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
            let t = match &v["chat_template"] {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Array(list) => list
                    .iter()
                    .find(|t| t["name"] == "default")
                    .and_then(|t| t["template"].as_str())
                    .map(str::to_string)
                    .with_context(|| format!("{}: chat_template is a list without a \"default\" template", path.display()))?,
                _ => bail!("{}: no chat_template (this model has no chat format)", path.display()),
            };
            (t, path.display().to_string())
        };
        Self::from_source(src, origin)
    }

    /// A template from its Jinja source; `origin` names it in errors.
    pub fn from_source(src: String, origin: String) -> Result<Self> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        minijinja_contrib::add_to_environment(&mut env);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", tojson);
        env.add_function("raise_exception", |msg: String| -> Result<Value, Error> { Err(Error::new(ErrorKind::InvalidOperation, msg)) });
        env.add_template_owned("chat", src).map_err(|e| anyhow!("{origin}: the chat template does not compile: {e:#}"))?;
        Ok(ChatTemplate { env, origin })
    }

    /// The prompt for `messages` (chat messages as minijinja values: `role`, `content`, `tool_calls`, ...),
    /// `tools` (a list of function schemas, or none), with the generation prompt when `add_generation_prompt`,
    /// thinking on or off (`enable_thinking`).
    pub fn render(&self, messages: &[Value], tools: Option<&Value>, add_generation_prompt: bool, enable_thinking: bool) -> Result<String> {
        let t = self.env.get_template("chat").expect("added in from_source");
        let ctx = minijinja::context! {
            messages => Value::from(messages.to_vec()),
            tools => tools.cloned().unwrap_or(Value::from(())),
            add_generation_prompt => add_generation_prompt,
            enable_thinking => enable_thinking,
        };
        t.render(ctx).map_err(|e| anyhow!("{}: rendering the chat template: {e:#}", self.origin))
    }
}

/// Python's `json.dumps(value, ensure_ascii=False)` (transformers' `tojson` for chat templates), as a string.
fn tojson(value: Value) -> Result<Value, Error> {
    let mut out = String::new();
    py_dumps(&value, &mut out)?;
    Ok(Value::from_safe_string(out))
}

/// Append `v` as Python's `json.dumps` writes it.
pub fn py_dumps(v: &Value, out: &mut String) -> Result<(), Error> {
    match v.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            if let Ok(i) = i64::try_from(v.clone()) {
                out.push_str(&i.to_string());
            } else {
                let f = f64::try_from(v.clone())?;
                // Python writes floats with repr: 1.0, 0.5, 1e-05.
                let s = serde_json::to_string(&f).map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
                out.push_str(&s);
            }
        }
        ValueKind::String => out.push_str(&serde_json::to_string(v.as_str().unwrap_or_default()).expect("a string serializes")),
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            for (i, item) in v.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_dumps(&item, out)?;
            }
            out.push(']');
        }
        ValueKind::Map => {
            out.push('{');
            for (i, key) in v.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let k = key.as_str().map(str::to_string).unwrap_or_else(|| key.to_string());
                out.push_str(&serde_json::to_string(&k).expect("a string serializes"));
                out.push_str(": ");
                py_dumps(&v.get_item(&key)?, out)?;
            }
            out.push('}');
        }
        _ => return Err(Error::new(ErrorKind::InvalidOperation, format!("tojson: cannot write a {} value", v.kind()))),
    }
    Ok(())
}

/// JSON text as a minijinja value, maps in their written order.
pub fn parse_json(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str::<Value>(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qwen35() -> ChatTemplate {
        ChatTemplate::from_source(crate::tokenizer::CHAT_TEMPLATE.to_string(), "the Qwen3.5 template".into()).unwrap()
    }

    fn msgs(json: &str) -> Vec<Value> {
        parse_json(json).unwrap().try_iter().unwrap().collect()
    }

    /// The renderings transformers' `apply_chat_template` gives for the same conversations
    /// (`tokenizer.rs`'s transformers check asserts these strings of transformers itself).
    #[test]
    fn renders_as_transformers_does() {
        let t = qwen35();
        let q = msgs(r#"[{"role": "user", "content": "What is 6*7?"}]"#);
        assert_eq!(t.render(&q, None, true, true).unwrap(), "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n<think>\n");
        assert_eq!(
            t.render(&q, None, true, false).unwrap(),
            "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
        );
        let tools = parse_json(
            r#"[{"type": "function", "function": {"name": "calc", "description": "Evaluate an expression",
               "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}]"#,
        )
        .unwrap();
        let conv = msgs(
            r#"[{"role": "user", "content": "What is -139552.6575*-0.3?"},
                {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "calc", "arguments": {"expression": "-139552.6575*-0.3"}}}]},
                {"role": "tool", "content": "41865.79725"}]"#,
        );
        let r = t.render(&conv, Some(&tools), true, false).unwrap();
        assert!(
            r.starts_with(
                "<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"calc\", \
                 \"description\": \"Evaluate an expression\", \"parameters\": {\"type\": \"object\", \"properties\": {\"expression\": {\"type\": \"string\"}}, \
                 \"required\": [\"expression\"]}}}\n</tools>"
            ),
            "{r}"
        );
        assert!(
            r.ends_with(
                "<|im_start|>user\nWhat is -139552.6575*-0.3?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n\
                 <tool_call>\n<function=calc>\n<parameter=expression>\n-139552.6575*-0.3\n</parameter>\n</function>\n\
                 </tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n41865.79725\n</tool_response><|im_end|>\n\
                 <|im_start|>assistant\n<think>\n\n</think>\n\n"
            ),
            "{r}"
        );
        let mut two = conv.clone();
        two.extend(msgs(r#"[{"role": "tool", "content": "7"}]"#));
        assert!(t.render(&two, None, false, true).unwrap().ends_with(
            "<|im_start|>user\n<tool_response>\n41865.79725\n</tool_response>\n<tool_response>\n7\n</tool_response><|im_end|>\n"
        ));
    }

    #[test]
    fn tojson_is_pythons() {
        let v = parse_json(r#"{"b": 1, "a": [true, null, 2.5, "é\n\"x\""], "c": {}}"#).unwrap();
        let mut s = String::new();
        py_dumps(&v, &mut s).unwrap();
        assert_eq!(s, r#"{"b": 1, "a": [true, null, 2.5, "é\n\"x\""], "c": {}}"#);
    }

    #[test]
    fn a_template_that_raises_or_does_not_compile_is_an_error() {
        let e = ChatTemplate::from_source("{% if %}".into(), "T".into()).err().unwrap().to_string();
        assert!(e.contains("T: the chat template does not compile"), "{e}");
        let t = ChatTemplate::from_source("{{ raise_exception('no system role') }}".into(), "T".into()).unwrap();
        let e = format!("{:#}", t.render(&[], None, true, true).err().unwrap());
        assert!(e.contains("no system role"), "{e}");
    }
}
