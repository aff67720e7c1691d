//! Label and field selectors as the API server parses them from `labelSelector` / `fieldSelector`.
//!
//! Parsing is ours (kube only builds selectors); matching of label requirements reuses
//! `kube::core::Expression`, with the numeric `<` / `>` operators added on top.

use std::collections::{BTreeMap, BTreeSet};

use kube::core::{Expression, SelectorExt};

/// One parsed label requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Set(Expression),
    GreaterThan(String, i64),
    LessThan(String, i64),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::Set(expr) => expr.matches(labels),
            Requirement::GreaterThan(key, bound) => {
                label_as_int(labels, key).is_some_and(|v| v > *bound)
            }
            Requirement::LessThan(key, bound) => {
                label_as_int(labels, key).is_some_and(|v| v < *bound)
            }
        }
    }
}

fn label_as_int(labels: &BTreeMap<String, String>, key: &str) -> Option<i64> {
    labels.get(key).and_then(|v| v.parse().ok())
}

/// A parsed `labelSelector`: all requirements must hold; the empty selector selects everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses the query-string form (`a=b,c!=d,e in (f,g),!h,i`), validating keys and values.
    pub fn parse(input: &str) -> Result<Self, String> {
        let tokens = tokenize(input);
        let mut parser = Parser { tokens, pos: 0 };
        let mut requirements = Vec::new();
        if parser.peek() == &Token::End {
            return Ok(Self { requirements });
        }
        loop {
            requirements.push(parser.requirement()?);
            match parser.next() {
                Token::End => break,
                Token::Comma => {
                    if matches!(parser.peek(), Token::End | Token::Comma) {
                        return Err(format!(
                            "found '{}', expected: identifier",
                            parser.peek().text()
                        ));
                    }
                }
                other => {
                    return Err(format!(
                        "found '{}', expected: ',' or 'end of string'",
                        other.text()
                    ));
                }
            }
        }
        Ok(Self { requirements })
    }

    /// Whether the labels satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether this selector selects every object.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    In,
    NotIn,
    Bang,
    Equals,
    DoubleEquals,
    NotEquals,
    Greater,
    Less,
    Open,
    Close,
    Comma,
    End,
}

impl Token {
    fn text(&self) -> &str {
        match self {
            Token::Ident(s) => s,
            Token::In => "in",
            Token::NotIn => "notin",
            Token::Bang => "!",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::Greater => ">",
            Token::Less => "<",
            Token::Open => "(",
            Token::Close => ")",
            Token::Comma => ",",
            Token::End => "end of string",
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '!' | '=' | '(' | ')' | ',' | '<' | '>')
}

fn tokenize(input: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = input.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if is_special(c) {
            chars.next();
            let followed_by_eq = chars.peek() == Some(&'=');
            let token = match (c, followed_by_eq) {
                ('!', true) => Token::NotEquals,
                ('=', true) => Token::DoubleEquals,
                ('!', false) => Token::Bang,
                ('=', false) => Token::Equals,
                ('(', _) => Token::Open,
                (')', _) => Token::Close,
                (',', _) => Token::Comma,
                ('<', _) => Token::Less,
                _ => Token::Greater,
            };
            if matches!(token, Token::NotEquals | Token::DoubleEquals) {
                chars.next();
            }
            tokens.push(token);
            continue;
        }
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || is_special(c) {
                break;
            }
            word.push(c);
            chars.next();
        }
        tokens.push(match word.as_str() {
            "in" => Token::In,
            "notin" => Token::NotIn,
            _ => Token::Ident(word),
        });
    }
    tokens.push(Token::End);
    tokens
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        self.tokens.get(self.pos).unwrap_or(&Token::End)
    }

    fn next(&mut self) -> Token {
        let token = self.peek().clone();
        self.pos += 1;
        token
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let negated = self.peek() == &Token::Bang;
        if negated {
            self.pos += 1;
        }
        let key = match self.next() {
            Token::Ident(key) => key,
            other => {
                return Err(format!("found '{}', expected: identifier", other.text()));
            }
        };
        validate_key(&key)?;
        if negated {
            return Ok(Requirement::Set(Expression::DoesNotExist(key)));
        }
        let op = self.peek().clone();
        match op {
            Token::End | Token::Comma => Ok(Requirement::Set(Expression::Exists(key))),
            Token::Equals | Token::DoubleEquals | Token::NotEquals => {
                self.pos += 1;
                let value = self.exact_value()?;
                validate_value(&key, &value)?;
                Ok(Requirement::Set(if op == Token::NotEquals {
                    Expression::NotEqual(key, value)
                } else {
                    Expression::Equal(key, value)
                }))
            }
            Token::In | Token::NotIn => {
                self.pos += 1;
                let values = self.value_set(&key, op.text())?;
                Ok(Requirement::Set(if op == Token::In {
                    Expression::In(key, values)
                } else {
                    Expression::NotIn(key, values)
                }))
            }
            Token::Greater | Token::Less => {
                self.pos += 1;
                let raw = self.exact_value()?;
                let bound = raw.parse::<i64>().map_err(|_| {
                    format!("for 'Gt', 'Lt' operators, the value must be an integer, got '{raw}'")
                })?;
                Ok(if op == Token::Greater {
                    Requirement::GreaterThan(key, bound)
                } else {
                    Requirement::LessThan(key, bound)
                })
            }
            other => Err(format!(
                "found '{}', expected: '=', '!=', '==', 'in', 'notin'",
                other.text()
            )),
        }
    }

    /// A single value after `=`, `==`, `!=`, `<` or `>`; empty when the requirement ends there.
    fn exact_value(&mut self) -> Result<String, String> {
        match self.peek().clone() {
            Token::End | Token::Comma => Ok(String::new()),
            Token::Ident(value) => {
                self.pos += 1;
                Ok(value)
            }
            Token::In | Token::NotIn => {
                self.pos += 1;
                Ok(self.tokens[self.pos - 1].text().to_string())
            }
            other => Err(format!("found '{}', expected: identifier", other.text())),
        }
    }

    fn value_set(&mut self, key: &str, op: &str) -> Result<BTreeSet<String>, String> {
        if self.next() != Token::Open {
            return Err(format!(
                "found '{}', expected: '('",
                self.tokens[self.pos - 1].text()
            ));
        }
        let mut values = BTreeSet::new();
        let mut expect_value = true;
        loop {
            match self.next() {
                Token::Close => {
                    if expect_value && !values.is_empty() {
                        // `(a,)` carries an empty value, as upstream accepts.
                        values.insert(String::new());
                    }
                    break;
                }
                Token::Comma => {
                    if expect_value {
                        values.insert(String::new());
                    }
                    expect_value = true;
                }
                Token::Ident(value) if expect_value => {
                    validate_value(key, &value)?;
                    values.insert(value);
                    expect_value = false;
                }
                token @ (Token::In | Token::NotIn) if expect_value => {
                    values.insert(token.text().to_string());
                    expect_value = false;
                }
                other => {
                    return Err(format!("found '{}', expected: ',' or ')'", other.text()));
                }
            }
        }
        if values.is_empty() {
            return Err(format!(
                "for 'in', 'notin' operators, values set can't be empty ({key} {op} ())"
            ));
        }
        Ok(values)
    }
}

const NAME_PATTERN: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

/// A label name part or value: alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
pub(crate) fn is_qualified_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    let edge = |b: u8| b.is_ascii_alphanumeric();
    !bytes.is_empty()
        && edge(bytes[0])
        && edge(bytes[bytes.len() - 1])
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// An RFC 1123 DNS subdomain: lowercase alphanumerics, `-` and `.`, at most 253 characters.
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        })
}

fn validate_key(key: &str) -> Result<(), String> {
    let invalid = |why: String| Err(format!("key: Invalid value: \"{key}\": {why}"));
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return invalid("prefix part must be non-empty".into());
        }
        if !is_dns_subdomain(prefix) {
            return invalid(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character".into(),
            );
        }
    }
    if name.is_empty() {
        return invalid("name part must be non-empty".into());
    }
    if name.len() > 63 {
        return invalid("name part must be no more than 63 characters".into());
    }
    if !is_qualified_name_part(name) {
        return invalid(format!(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (regex used for validation is '{NAME_PATTERN}')"
        ));
    }
    Ok(())
}

fn validate_value(key: &str, value: &str) -> Result<(), String> {
    if value.len() > 63 {
        return Err(format!(
            "values[0][{key}]: Invalid value: \"{value}\": must be no more than 63 characters"
        ));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        return Err(format!(
            "values[0][{key}]: Invalid value: \"{value}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (regex used for validation is '({NAME_PATTERN})?')"
        ));
    }
    Ok(())
}

/// Field labels beyond `metadata.name` / `metadata.namespace` that the real server accepts for
/// a few built-in kinds, with the JSON pointer each one reads.
fn extra_field_labels(group: &str, kind: &str) -> &'static [(&'static str, &'static str)] {
    match (group, kind) {
        ("", "Event") => &[
            ("involvedObject.kind", "/involvedObject/kind"),
            ("involvedObject.namespace", "/involvedObject/namespace"),
            ("involvedObject.name", "/involvedObject/name"),
            ("involvedObject.uid", "/involvedObject/uid"),
            ("involvedObject.apiVersion", "/involvedObject/apiVersion"),
            (
                "involvedObject.resourceVersion",
                "/involvedObject/resourceVersion",
            ),
            ("involvedObject.fieldPath", "/involvedObject/fieldPath"),
            ("reason", "/reason"),
            ("reportingComponent", "/reportingComponent"),
            ("source", "/source/component"),
            ("type", "/type"),
        ],
        ("", "Pod") => &[
            ("spec.nodeName", "/spec/nodeName"),
            ("spec.restartPolicy", "/spec/restartPolicy"),
            ("spec.schedulerName", "/spec/schedulerName"),
            ("spec.serviceAccountName", "/spec/serviceAccountName"),
            ("spec.hostNetwork", "/spec/hostNetwork"),
            ("status.phase", "/status/phase"),
            ("status.podIP", "/status/podIP"),
            ("status.nominatedNodeName", "/status/nominatedNodeName"),
            ("spec.host", "/spec/nodeName"),
        ],
        ("", "Service") => &[
            ("spec.clusterIP", "/spec/clusterIP"),
            ("spec.type", "/spec/type"),
        ],
        ("batch", "Job" | "CronJob") => &[("status.successful", "/status/succeeded")],
        ("", "Secret") => &[("type", "/type")],
        ("", "Namespace") => &[("status.phase", "/status/phase")],
        ("", "Node") => &[("spec.unschedulable", "/spec/unschedulable")],
        _ => &[],
    }
}

/// Why a field selector was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldSelectorError {
    /// A label the kind does not offer, in the words of its field label conversion.
    UnsupportedLabel(String),
    /// Malformed syntax.
    Invalid(String),
}

impl std::fmt::Display for FieldSelectorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnsupportedLabel(m) | Self::Invalid(m) => f.write_str(m),
        }
    }
}

/// The field labels a kind's conversion function accepts and how it refuses the others.
struct KindLabels<'a> {
    group: &'a str,
    kind: &'a str,
    custom: bool,
    extra: &'static [(&'static str, &'static str)],
}

impl<'a> KindLabels<'a> {
    fn of(group: &'a str, kind: &'a str, custom: bool) -> Self {
        Self {
            group,
            kind,
            custom,
            extra: if custom {
                &[]
            } else {
                extra_field_labels(group, kind)
            },
        }
    }

    /// Node and Namespace conversions accept `metadata.name` but not `metadata.namespace`.
    fn offers_namespace(&self) -> bool {
        self.custom || !matches!((self.group, self.kind), ("", "Node" | "Namespace"))
    }

    fn pointer(&self, key: &str) -> Result<&'static str, FieldSelectorError> {
        match key {
            "metadata.name" => return Ok(NAME_POINTER),
            "metadata.namespace" if self.offers_namespace() => return Ok(NAMESPACE_POINTER),
            _ => {}
        }
        self.extra
            .iter()
            .find(|(label, _)| *label == key)
            .map(|(_, pointer)| *pointer)
            .ok_or_else(|| FieldSelectorError::UnsupportedLabel(self.refusal(key)))
    }

    /// The refusal of the kind's conversion function: core kinds with a registered function
    /// and custom resources say `field label not supported: L`, batch kinds name the label and
    /// kind, and every other kind falls back to `DefaultMetaV1FieldSelectorConversion`, which
    /// names the two labels it supports.
    fn refusal(&self, key: &str) -> String {
        match (self.group, self.kind) {
            _ if self.custom => format!("field label not supported: {key}"),
            (
                "",
                "Pod"
                | "Node"
                | "ReplicationController"
                | "Event"
                | "Namespace"
                | "Secret"
                | "Service",
            ) => {
                format!("field label not supported: {key}")
            }
            ("batch", kind @ ("Job" | "CronJob")) => {
                format!("field label {key:?} not supported for {kind:?}")
            }
            _ => format!(
                "{key:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
            ),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldTerm {
    /// JSON pointer of the field in the object.
    pointer: &'static str,
    value: String,
    negated: bool,
}

/// A parsed `fieldSelector`; every kind supports `metadata.name` and `metadata.namespace`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses `metadata.name=x,metadata.namespace!=y` (`=`, `==`, `!=`; `\` escapes `,`, `=`, `!`, `\`).
    #[cfg(test)]
    pub fn parse(input: &str) -> Result<Self, String> {
        Self::parse_for(input, "", "")
    }

    /// Like [`parse`](Self::parse), also accepting the field labels the real server offers for
    /// this kind (`involvedObject.name` on core Events, `status.phase` on Pods, `type` on Secrets...).
    #[cfg(test)]
    pub fn parse_for(input: &str, group: &str, kind: &str) -> Result<Self, String> {
        Self::parse_for_kind(input, group, kind, false).map_err(|e| e.to_string())
    }

    /// Like [`parse_for`](Self::parse_for); a label the kind does not offer is refused in the
    /// words of its field label conversion (`custom`: served from a CRD).
    pub fn parse_for_kind(
        input: &str,
        group: &str,
        kind: &str,
        custom: bool,
    ) -> Result<Self, FieldSelectorError> {
        let labels = KindLabels::of(group, kind, custom);
        let mut terms = Vec::new();
        for raw in split_unescaped(input, ',') {
            if raw.trim().is_empty() {
                continue;
            }
            terms.push(parse_field_term(&raw, &labels)?);
        }
        Ok(Self { terms })
    }

    /// Whether an object with this name and namespace (None for cluster-scoped) is selected;
    /// terms on other fields compare against an empty value, so use
    /// [`matches_object`](Self::matches_object) for selectors built with `parse_for`.
    #[cfg(test)]
    pub fn matches(&self, name: &str, namespace: Option<&str>) -> bool {
        self.terms.iter().all(|term| {
            let actual = match term.pointer {
                NAME_POINTER => name,
                NAMESPACE_POINTER => namespace.unwrap_or(""),
                _ => "",
            };
            (actual == term.value) != term.negated
        })
    }

    /// Whether the object is selected; absent fields read as empty, non-strings as their JSON text.
    pub fn matches_object(&self, object: &serde_json::Value) -> bool {
        self.terms.iter().all(|term| {
            let actual = match object.pointer(term.pointer) {
                None | Some(serde_json::Value::Null) => String::new(),
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            (actual == term.value) != term.negated
        })
    }
}

const NAME_POINTER: &str = "/metadata/name";
const NAMESPACE_POINTER: &str = "/metadata/namespace";

/// Splits on `sep` not preceded by a backslash, keeping escapes for the next stage.
fn split_unescaped(input: &str, sep: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in input.chars() {
        let current = parts.last_mut();
        match current {
            Some(part) if escaped => {
                part.push(c);
                escaped = false;
            }
            Some(part) if c == '\\' => {
                part.push(c);
                escaped = true;
            }
            Some(_) if c == sep => parts.push(String::new()),
            Some(part) => part.push(c),
            None => {}
        }
    }
    parts
}

fn parse_field_term(raw: &str, labels: &KindLabels<'_>) -> Result<FieldTerm, FieldSelectorError> {
    let chars: Vec<char> = raw.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '!' if chars.get(i + 1) == Some(&'=') => {
                return field_term(&chars[..i], &chars[i + 2..], true, labels);
            }
            '=' if chars.get(i + 1) == Some(&'=') => {
                return field_term(&chars[..i], &chars[i + 2..], false, labels);
            }
            '=' => return field_term(&chars[..i], &chars[i + 1..], false, labels),
            _ => i += 1,
        }
    }
    Err(FieldSelectorError::Invalid(format!(
        "invalid selector: '{raw}'; can't understand '{raw}'"
    )))
}

fn field_term(
    key: &[char],
    value: &[char],
    negated: bool,
    labels: &KindLabels<'_>,
) -> Result<FieldTerm, FieldSelectorError> {
    let key: String = key.iter().collect::<String>().trim().to_string();
    let value = unescape(value).map_err(FieldSelectorError::Invalid)?;
    let pointer = labels.pointer(&key)?;
    Ok(FieldTerm {
        pointer,
        value,
        negated,
    })
}

fn unescape(value: &[char]) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = value.iter();
    while let Some(&c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(&e @ ('\\' | ',' | '=' | '!')) => out.push(e),
                Some(&e) => {
                    return Err(format!(
                        "invalid field selector value: invalid escape sequence '\\{e}'"
                    ));
                }
                None => {
                    return Err("invalid field selector value: unterminated escape sequence".into());
                }
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn label_selectors_match_like_the_api_server() {
        let app_web = labels(&[("app", "web"), ("tier", "front"), ("replicas", "3")]);
        let app_db = labels(&[("app", "db")]);
        let none = labels(&[]);
        // (selector, matches app_web, matches app_db, matches none)
        let cases = [
            ("", true, true, true),
            ("app=web", true, false, false),
            ("app==web", true, false, false),
            ("app!=web", false, true, true),
            ("app", true, true, false),
            ("!app", false, false, true),
            ("!tier", false, true, true),
            ("app in (web, db)", true, true, false),
            ("app in (web)", true, false, false),
            ("app notin (web)", false, true, true),
            ("app=web,tier=front", true, false, false),
            ("app=web, tier=back", false, false, false),
            ("app,!tier", false, true, false),
            ("replicas>2", true, false, false),
            ("replicas<3", false, false, false),
            ("example.com/team=", false, false, false),
            ("tier notin (front),app", false, true, false),
            ("  app  =  web  ", true, false, false),
        ];
        for (selector, web, db, empty) in cases {
            let parsed =
                LabelSelector::parse(selector).unwrap_or_else(|e| panic!("{selector}: {e}"));
            assert_eq!(parsed.matches(&app_web), web, "{selector} on app_web");
            assert_eq!(parsed.matches(&app_db), db, "{selector} on app_db");
            assert_eq!(parsed.matches(&none), empty, "{selector} on no labels");
        }
    }

    #[test]
    fn empty_value_selects_empty_label() {
        let parsed = LabelSelector::parse("a=").unwrap();
        assert!(parsed.matches(&labels(&[("a", "")])));
        assert!(!parsed.matches(&labels(&[("a", "x")])));
        let set = LabelSelector::parse("a in (x,)").unwrap();
        assert!(set.matches(&labels(&[("a", "")])));
    }

    #[test]
    fn invalid_label_selectors_are_refused_with_a_reason() {
        let cases = [
            ("a b", "expected: '=', '!=', '==', 'in', 'notin'"),
            ("a=b c", "expected: ',' or 'end of string'"),
            ("app in ()", "values set can't be empty"),
            ("app in web", "expected: '('"),
            ("app in (a b)", "expected: ',' or ')'"),
            ("=web", "expected: identifier"),
            ("a,", "expected: identifier"),
            ("a,,b", "expected: identifier"),
            ("-app=web", "name part must consist of alphanumeric"),
            (
                "Example.com/app=x",
                "prefix part a lowercase RFC 1123 subdomain",
            ),
            ("/app=x", "prefix part must be non-empty"),
            ("app=we b!", "expected: ',' or 'end of string'"),
            ("app=-web", "a valid label must be an empty string"),
            ("app=web_", "a valid label must be an empty string"),
            ("replicas>x", "must be an integer"),
            ("app in (ok,-bad)", "a valid label must be an empty string"),
        ];
        for (selector, want) in cases {
            let err = LabelSelector::parse(selector).expect_err(selector);
            assert!(err.contains(want), "{selector}: got {err:?}, want {want:?}");
        }
        let long_key = "k".repeat(64);
        let err = LabelSelector::parse(&long_key).expect_err("long key");
        assert!(err.contains("no more than 63 characters"), "{err}");
        let long_value = format!("k={}", "v".repeat(64));
        let err = LabelSelector::parse(&long_value).expect_err("long value");
        assert!(err.contains("no more than 63 characters"), "{err}");
    }

    #[test]
    fn field_selectors_match_name_and_namespace() {
        // (selector, name, namespace, expected)
        let cases = [
            ("", "a", Some("ns"), true),
            ("metadata.name=a", "a", Some("ns"), true),
            ("metadata.name==a", "b", Some("ns"), false),
            ("metadata.name!=a", "b", None, true),
            ("metadata.namespace=ns", "a", Some("ns"), true),
            ("metadata.namespace=ns", "a", None, false),
            ("metadata.namespace=", "a", None, true),
            (
                "metadata.name=a,metadata.namespace!=ns",
                "a",
                Some("other"),
                true,
            ),
            (
                "metadata.name=a,metadata.namespace!=ns",
                "a",
                Some("ns"),
                false,
            ),
            (r"metadata.name=a\,b", "a,b", None, true),
        ];
        for (selector, name, namespace, expected) in cases {
            let parsed =
                FieldSelector::parse(selector).unwrap_or_else(|e| panic!("{selector}: {e}"));
            assert_eq!(
                parsed.matches(name, namespace),
                expected,
                "{selector} on {name}/{namespace:?}"
            );
        }
    }

    #[test]
    fn kind_specific_field_labels() {
        let event = serde_json::json!({
            "metadata": {"name": "e1", "namespace": "ns"},
            "involvedObject": {"kind": "PgAccessRequest", "name": "req"},
            "reason": "Granted", "type": "Normal", "source": {"component": "pgtoolbox"}
        });
        // (selector, expected)
        let cases = [
            ("involvedObject.name=req", true),
            (
                "involvedObject.name=req,involvedObject.kind=PgAccessRequest",
                true,
            ),
            ("involvedObject.name=other", false),
            ("reason!=Granted", false),
            ("type=Normal,source=pgtoolbox,metadata.namespace=ns", true),
            ("involvedObject.uid=", true),
        ];
        for (selector, expected) in cases {
            let parsed = FieldSelector::parse_for(selector, "", "Event")
                .unwrap_or_else(|e| panic!("{selector}: {e}"));
            assert_eq!(parsed.matches_object(&event), expected, "{selector}");
        }
        let pod = serde_json::json!({"metadata": {"name": "p"}, "spec": {"hostNetwork": true}, "status": {"phase": "Running"}});
        let running =
            FieldSelector::parse_for("status.phase=Running,spec.hostNetwork=true", "", "Pod")
                .unwrap();
        assert!(running.matches_object(&pod));
        let err = FieldSelector::parse_for("involvedObject.name=x", "", "Pod").unwrap_err();
        assert_eq!(err, "field label not supported: involvedObject.name");
        let by_name = FieldSelector::parse("metadata.name=p").unwrap();
        assert!(by_name.matches_object(&pod));
        assert!(by_name.matches("p", None));
    }

    #[test]
    fn invalid_field_selectors_are_refused() {
        let cases = [
            (
                "spec.nodeName=x",
                r#""spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace""#,
            ),
            (
                "status.phase!=Running",
                r#""status.phase" is not a known field selector"#,
            ),
            ("metadata.name", "invalid selector"),
            (r"metadata.name=a\x", "invalid escape sequence"),
        ];
        for (selector, want) in cases {
            let err = FieldSelector::parse(selector).expect_err(selector);
            assert!(err.contains(want), "{selector}: got {err:?}, want {want:?}");
        }
    }

    #[test]
    fn unsupported_labels_are_refused_in_the_words_of_the_kind() {
        let refusal = |group: &str, kind: &str, custom: bool, selector: &str| {
            FieldSelector::parse_for_kind(selector, group, kind, custom).unwrap_err()
        };
        let unsupported = FieldSelectorError::UnsupportedLabel;
        assert_eq!(
            refusal("", "ConfigMap", false, "spec.foo=bar"),
            unsupported(
                r#""spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#
                    .into()
            )
        );
        assert_eq!(
            refusal("", "Pod", false, "spec.foo=bar"),
            unsupported("field label not supported: spec.foo".into())
        );
        assert_eq!(
            refusal("", "Node", false, "metadata.namespace=x"),
            unsupported("field label not supported: metadata.namespace".into())
        );
        assert_eq!(
            refusal("batch", "Job", false, "spec.foo=1"),
            unsupported(r#"field label "spec.foo" not supported for "Job""#.into())
        );
        assert_eq!(
            refusal("example.com", "Widget", true, "spec.foo=1"),
            unsupported("field label not supported: spec.foo".into())
        );
        assert!(matches!(
            refusal("", "ConfigMap", false, "metadata.name"),
            FieldSelectorError::Invalid(_)
        ));
    }

    /// A tiny deterministic generator: arbitrary selector-ish input must never panic.
    fn scrambled_inputs(alphabet: &[char], count: usize) -> Vec<String> {
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..count)
            .map(|_| {
                let len = (next() % 24) as usize;
                (0..len)
                    .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                    .collect()
            })
            .collect()
    }

    #[test]
    fn arbitrary_input_never_panics() {
        let alphabet: Vec<char> = "ab=!(),<> \\.-_/9inotéx".chars().collect();
        let labels = labels(&[("a", "b"), ("b", "9")]);
        let mut accepted = 0;
        for input in scrambled_inputs(&alphabet, 5000) {
            if let Ok(selector) = LabelSelector::parse(&input) {
                accepted += 1;
                let _ = selector.matches(&labels);
            }
            if let Ok(selector) = FieldSelector::parse_for(&input, "", "Event") {
                let _ = selector.matches_object(&serde_json::json!({"metadata": {"name": "a"}}));
            }
        }
        // The generator must exercise the success path too, or the test proves little.
        assert!(accepted > 50, "only {accepted} inputs parsed");
    }
}
