//! Python literals as barman writes some `backup.info` fields (`repr()` of lists, tuples and
//! dicts, read back with `ast.literal_eval`), turned into the JSON `json.dumps` gives of the
//! value: `None` is `null`, `True`/`False` are booleans, tuples are arrays, dict keys are
//! strings.

use serde_json::{Map, Number, Value};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("not a Python literal at byte {at}: {what}")]
pub struct LiteralError {
    pub at: usize,
    pub what: &'static str,
}

/// Parses one Python literal (the whole text).
pub fn parse(text: &str) -> Result<Value, LiteralError> {
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        i: 0,
    };
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("trailing text"));
    }
    Ok(v)
}

/// Nesting deeper than this is refused (a `backup.info` nests three levels at most).
const MAX_DEPTH: usize = 32;

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn err(&self, what: &'static str) -> LiteralError {
        LiteralError { at: self.i, what }
    }

    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn value(&mut self, depth: usize) -> Result<Value, LiteralError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deep"));
        }
        self.ws();
        match self.peek() {
            Some(b'[') => self.sequence(b']', depth),
            Some(b'(') => self.sequence(b')', depth),
            Some(b'{') => self.dict(depth),
            Some(b'\'' | b'"') => self.string().map(Value::String),
            Some(b'-' | b'+' | b'0'..=b'9' | b'.') => self.number(),
            Some(_) => self.word(),
            None => Err(self.err("a value was expected")),
        }
    }

    fn word(&mut self) -> Result<Value, LiteralError> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            self.i += 1;
        }
        match &self.text[start..self.i] {
            "None" => Ok(Value::Null),
            "True" => Ok(Value::Bool(true)),
            "False" => Ok(Value::Bool(false)),
            _ => {
                self.i = start;
                Err(self.err("None, True, False, a number, a string, [, ( or { expected"))
            }
        }
    }

    fn number(&mut self) -> Result<Value, LiteralError> {
        let start = self.i;
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.i += 1;
        }
        let mut float = false;
        while let Some(b) = self.peek() {
            match b {
                b'0'..=b'9' | b'_' => {}
                b'.' | b'e' | b'E' => float = true,
                b'-' | b'+' if matches!(self.s.get(self.i - 1), Some(b'e' | b'E')) => {}
                _ => break,
            }
            self.i += 1;
        }
        let digits: String = self.text[start..self.i]
            .chars()
            .filter(|c| *c != '_')
            .collect();
        let digits = digits.strip_prefix('+').unwrap_or(&digits);
        if !float {
            if let Ok(n) = digits.parse::<i64>() {
                return Ok(Value::Number(n.into()));
            }
            if let Ok(n) = digits.parse::<u64>() {
                return Ok(Value::Number(n.into()));
            }
        }
        digits
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or(LiteralError {
                at: start,
                what: "not a number",
            })
    }

    fn string(&mut self) -> Result<String, LiteralError> {
        let Some(quote) = self.peek() else {
            return Err(self.err("a string was expected"));
        };
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while self.peek().is_some_and(|b| b != quote && b != b'\\') {
                self.i += 1;
            }
            out.push_str(&self.text[start..self.i]);
            match self.peek() {
                None => return Err(self.err("unterminated string")),
                Some(b'\\') => {
                    self.i += 1;
                    self.escape(&mut out)?;
                }
                Some(_) => {
                    self.i += 1;
                    return Ok(out);
                }
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), LiteralError> {
        let Some(b) = self.peek() else {
            return Err(self.err("unterminated escape"));
        };
        self.i += 1;
        let simple = match b {
            b'\\' => Some('\\'),
            b'\'' => Some('\''),
            b'"' => Some('"'),
            b'n' => Some('\n'),
            b't' => Some('\t'),
            b'r' => Some('\r'),
            b'a' => Some('\x07'),
            b'b' => Some('\x08'),
            b'f' => Some('\x0c'),
            b'v' => Some('\x0b'),
            b'0' => Some('\0'),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            return Ok(());
        }
        let width = match b {
            b'x' => 2,
            b'u' => 4,
            b'U' => 8,
            b'\n' => return Ok(()),
            _ => {
                // Python keeps an unknown escape as written.
                out.push('\\');
                self.i -= 1;
                return Ok(());
            }
        };
        let hex = self
            .text
            .get(self.i..self.i + width)
            .ok_or_else(|| self.err("short escape"))?;
        let c = u32::from_str_radix(hex, 16)
            .ok()
            .and_then(char::from_u32)
            .ok_or_else(|| self.err("bad escape"))?;
        self.i += width;
        out.push(c);
        Ok(())
    }

    fn sequence(&mut self, close: u8, depth: usize) -> Result<Value, LiteralError> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            self.ws();
            if self.peek() == Some(close) {
                self.i += 1;
                return Ok(Value::Array(items));
            }
            items.push(self.value(depth + 1)?);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(c) if c == close => {}
                _ => return Err(self.err("',' or the closing bracket expected")),
            }
        }
    }

    fn dict(&mut self, depth: usize) -> Result<Value, LiteralError> {
        self.i += 1;
        let mut map = Map::new();
        loop {
            self.ws();
            if self.peek() == Some(b'}') {
                self.i += 1;
                return Ok(Value::Object(map));
            }
            // json.dumps writes keys as strings: numbers, booleans and None converted.
            let key = match self.value(depth + 1)? {
                Value::String(s) => s,
                Value::Null => "null".to_owned(),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => n.to_string(),
                _ => return Err(self.err("a dict key must be a string or a number")),
            };
            self.ws();
            if self.peek() != Some(b':') {
                return Err(self.err("':' expected"));
            }
            self.i += 1;
            let value = self.value(depth + 1)?;
            map.insert(key, value);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {}
                _ => return Err(self.err("',' or '}' expected")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::parse;

    #[test]
    fn python_literals_become_the_json_json_dumps_gives() {
        assert_eq!(parse("None"), Ok(json!(null)));
        assert_eq!(parse(" True "), Ok(json!(true)));
        assert_eq!(
            parse("[1, -2, 3.5, 1e3, False]"),
            Ok(json!([1, -2, 3.5, 1000.0, false]))
        );
        assert_eq!(
            parse("[('tbs1', 16387, '/srv/tbs1'), (\"t'2\", 1, 'a\\\\b\\n')]"),
            Ok(json!([["tbs1", 16387, "/srv/tbs1"], ["t'2", 1, "a\\b\n"]]))
        );
        assert_eq!(
            parse("{'total_time': 1.5, 'n': None, 1: (2,), 'u': '\\xe9\\u20ac'}"),
            Ok(json!({"total_time": 1.5, "n": null, "1": [2], "u": "é€"}))
        );
        assert_eq!(parse("[]"), Ok(json!([])));
        assert_eq!(parse("{}"), Ok(json!({})));
    }

    #[test]
    fn what_is_no_literal_is_an_error() {
        for bad in [
            "",
            "[1, 2",
            "'open",
            "none",
            "{'a' 1}",
            "[1 2]",
            "1 2",
            "os.system('x')",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(parse(&deep).is_err(), "nesting is bounded");
    }
}
