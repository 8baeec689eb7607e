//! The file's `node` and `element` arrays read one entry at a time (issue 20: start-up memory).
//!
//! `toml::from_str` of a whole file keeps every token of the text and a tree of every value
//! before the first node is built: several tens of bytes per byte of text, 7–18 KB per DOF of
//! a chain or frame of 10⁴ DOFs. Such a model writes nearly all of its text in its
//! `[[node]]`/`[[element]]` tables or root arrays of inline tables (`node = [{…}, …]`).
//! [`split`] finds those entries with a scan of the text's structure (strings, comments,
//! brackets and table headers, TOML 1.1) and hands the rest of the file to the whole-file
//! reader, each entry blanked to its line breaks so that every line keeps its number. Each
//! entry is then read on its own when it is needed, and dropped once it is built.
//!
//! Any form the scan does not take apart (a `[node.x]` sub-table, a dotted or quoted
//! `node`/`element` key, an array item that is not an inline table, both forms of one array,
//! an unterminated string or bracket) gives `None`: the whole file then goes to the
//! whole-file reader, which reads it and reports its problems as before. A problem found in an
//! entry is reported with the whole file's line numbers and dotted paths
//! ([`super::toml_error`]), as the whole-file reader reports it.

use super::schema::NodeSpec;
use crate::error::ModelError;
use serde::Deserialize;

/// One entry of the `node` or `element` array: its text and where it starts.
///
/// The offsets are 32-bit (12 bytes an entry, not 24: 3.6 MB instead of 7.2 for the 3·10⁵
/// entries of the 10⁵-DOF chain, issue 20); [`split`] takes apart only texts that fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Entry {
    /// Byte offset of the entry's text in the file.
    start: u32,
    /// Byte offset just past the entry's text.
    end: u32,
    /// Whether the entry is an inline table `{…}` (else the body of a `[[…]]` table).
    inline: bool,
}

/// The file taken apart: the entries of its `node` and `element` arrays, in file order, and
/// the rest of the text.
#[derive(Debug)]
pub(super) struct Split {
    /// The file with the `node` and `element` arrays blanked to their line breaks.
    pub rest: String,
    /// Entries of `node`.
    pub nodes: Vec<Entry>,
    /// Entries of `element`.
    pub elements: Vec<Entry>,
}

/// Which of the two arrays a header or key names.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Array {
    Node,
    Element,
}

/// How an array has been written so far.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Form {
    Absent,
    Tables,
    Inline,
}

fn array_named(name: &str) -> Option<Array> {
    match name {
        "node" => Some(Array::Node),
        "element" => Some(Array::Element),
        _ => None,
    }
}

/// A cursor over the file's bytes. Every character TOML gives a meaning to is ASCII, and no
/// byte of a multi-byte UTF-8 character is, so the scan can go byte by byte.
struct Scanner<'t> {
    s: &'t [u8],
    i: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// Past the string that starts here (`"`, `'`, `"""` or `'''`); `None` when it is not
    /// closed (a one-line string at the end of its line, any string at the end of the file).
    fn skip_string(&mut self) -> Option<()> {
        let q = self.s[self.i];
        let s = self.s;
        if s[self.i..].starts_with(&[q, q, q]) {
            self.i += 3;
            loop {
                let c = *s.get(self.i)?;
                if q == b'"' && c == b'\\' {
                    self.i += 2;
                } else if s[self.i..].starts_with(&[q, q, q]) {
                    // A run of up to five quotes closes the string: the last three are the
                    // delimiter, the ones before it belong to the string.
                    while self.peek() == Some(q) {
                        self.i += 1;
                    }
                    return Some(());
                } else {
                    self.i += 1;
                }
            }
        }
        self.i += 1;
        loop {
            let c = *s.get(self.i)?;
            if c == b'\n' {
                return None;
            }
            self.i += 1;
            if q == b'"' && c == b'\\' {
                self.i += 1;
            } else if c == q {
                return Some(());
            }
        }
    }

    /// Past a comment (up to, not including, its line break).
    fn skip_comment(&mut self) {
        while let Some(c) = self.peek() {
            if c == b'\n' {
                return;
            }
            self.i += 1;
        }
    }

    /// Past spaces and tabs.
    fn skip_blank(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    /// Past spaces, tabs, line breaks and comments.
    fn skip_blank_lines(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\r' | b'\n') => self.i += 1,
                Some(b'#') => self.skip_comment(),
                _ => return,
            }
        }
    }

    /// Past the value that starts here, up to the line break that ends its statement (or the
    /// end of the file); `None` when a string or bracket is not closed.
    fn skip_value(&mut self) -> Option<()> {
        self.skip_nested(false)
    }

    /// Past the inline table that starts here at `{`, up to and including its `}`.
    fn skip_inline_table(&mut self) -> Option<()> {
        self.skip_nested(true)
    }

    /// Past strings, comments and nested brackets from here: with `through_close`, up to and
    /// including the bracket that closes the one this starts at (`None` at the end of the
    /// file); otherwise up to the line break at depth 0 (or the end of the file with every
    /// bracket closed). `None` when a string or bracket is not closed.
    fn skip_nested(&mut self, through_close: bool) -> Option<()> {
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                b'"' | b'\'' => {
                    self.skip_string()?;
                    continue;
                }
                b'#' => {
                    self.skip_comment();
                    continue;
                }
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth = depth.checked_sub(1)?;
                    if through_close && depth == 0 {
                        self.i += 1;
                        return Some(());
                    }
                }
                b'\n' if depth == 0 && !through_close => return Some(()),
                _ => {}
            }
            self.i += 1;
        }
        (!through_close && depth == 0).then_some(())
    }

    /// Past the rest of the line (its line break included): `None` unless only blanks and a
    /// comment are left on it.
    fn end_of_line(&mut self) -> Option<()> {
        self.skip_blank();
        if self.peek() == Some(b'#') {
            self.skip_comment();
        }
        match self.peek() {
            None => Some(()),
            Some(b'\n') => {
                self.i += 1;
                Some(())
            }
            Some(b'\r') if self.s.get(self.i + 1) == Some(&b'\n') => {
                self.i += 2;
                Some(())
            }
            _ => None,
        }
    }
}

/// A table header `[a.b]` or `[[a.b]]` (the line's text from its `[`): whether it is an array
/// of tables, and its dotted key's parts (trimmed; quoted parts keep their quotes).
fn header(line: &str) -> Option<(bool, Vec<&str>)> {
    let line = line.trim_end();
    let (inner, array) = match line.strip_prefix("[[") {
        Some(rest) => (rest.strip_suffix("]]")?, true),
        None => (line.strip_prefix('[')?.strip_suffix(']')?, false),
    };
    Some((array, inner.split('.').map(str::trim).collect()))
}

/// Whether a key part names `node` or `element`, written bare or quoted.
fn names_an_array(part: &str) -> bool {
    let bare = part.trim().trim_matches(|c| c == '"' || c == '\'');
    array_named(bare).is_some()
}

/// The file's `node` and `element` entries and the rest of its text; `None` when the file
/// writes those arrays in a form this scan does not take apart, or does not write them at all
/// (the whole-file reader then reads it).
pub(super) fn split(text: &str) -> Option<Split> {
    // The entries' offsets are 32-bit: a longer text (far beyond any model file's bound) goes
    // to the whole-file reader, which refuses it.
    if u32::try_from(text.len()).is_err() {
        return None;
    }
    let mut sc = Scanner {
        s: text.as_bytes(),
        i: 0,
    };
    // Entries of `node` and `element`, indexed by `Array as usize`.
    let mut lists: [Vec<Entry>; 2] = [Vec::new(), Vec::new()];
    let mut forms = [Form::Absent, Form::Absent];
    // Byte ranges of the text taken out (the arrays), in order.
    let mut taken: Vec<(usize, usize)> = Vec::new();
    // The `[[node]]`/`[[element]]` table being read: its array, where its header and its
    // body start.
    let mut open: Option<(Array, usize, usize)> = None;
    let mut root = true;
    let close = |open: &mut Option<(Array, usize, usize)>,
                 at: usize,
                 lists: &mut [Vec<Entry>; 2],
                 taken: &mut Vec<(usize, usize)>| {
        if let Some((array, header_start, body)) = open.take() {
            lists[array as usize].push(Entry::new(body.min(at), at, false));
            taken.push((header_start, at));
        }
    };
    loop {
        sc.skip_blank_lines();
        let Some(c) = sc.peek() else { break };
        let start = sc.i;
        if c == b'[' {
            let line_end = text[start..].find('\n').map_or(text.len(), |k| start + k);
            let line = &text[start..line_end];
            // A quoted key may hold `#`, `.` or `]`: read such headers only to refuse those
            // that could name the two arrays.
            let quoted = line.contains(['"', '\'']);
            let plain = match line.find('#') {
                Some(k) if !quoted => &line[..k],
                _ => line,
            };
            close(&mut open, start, &mut lists, &mut taken);
            root = false;
            if quoted {
                if line.contains("node") || line.contains("element") {
                    return None;
                }
            } else {
                let (array, parts) = header(plain)?;
                if names_an_array(parts[0]) {
                    let which = array_named(parts[0]).filter(|_| array && parts.len() == 1)?;
                    let form = &mut forms[which as usize];
                    if *form == Form::Inline {
                        return None;
                    }
                    *form = Form::Tables;
                    let body = (line_end + 1).min(text.len());
                    open = Some((which, start, body));
                }
            }
            sc.i = line_end;
            continue;
        }
        // A key/value statement: the key, up to `=` (quoted parts may hold `=`).
        loop {
            match sc.peek()? {
                b'"' | b'\'' => sc.skip_string()?,
                b'=' => break,
                b'\n' => return None,
                _ => sc.i += 1,
            }
        }
        let key = text[start..sc.i].trim();
        sc.i += 1;
        let first = key.split('.').next().unwrap_or_default();
        if root && names_an_array(first) {
            let which = array_named(key).filter(|_| !key.contains('.'))?;
            let form = &mut forms[which as usize];
            if *form != Form::Absent {
                return None;
            }
            *form = Form::Inline;
            sc.skip_blank();
            if sc.peek() != Some(b'[') {
                return None;
            }
            sc.i += 1;
            loop {
                sc.skip_blank_lines();
                match sc.peek()? {
                    b']' => {
                        sc.i += 1;
                        break;
                    }
                    b'{' => {}
                    _ => return None,
                }
                let entry_start = sc.i;
                sc.skip_inline_table()?;
                lists[which as usize].push(Entry::new(entry_start, sc.i, true));
                sc.skip_blank_lines();
                match sc.peek()? {
                    b',' => sc.i += 1,
                    b']' => {
                        sc.i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
            taken.push((start, sc.i));
            sc.end_of_line()?;
        } else {
            sc.skip_value()?;
        }
    }
    close(&mut open, text.len(), &mut lists, &mut taken);
    if forms == [Form::Absent, Form::Absent] {
        return None;
    }
    let mut rest =
        String::with_capacity(text.len() - taken.iter().map(|(a, b)| b - a).sum::<usize>());
    let mut at = 0;
    for (a, b) in taken {
        rest.push_str(&text[at..a]);
        rest.extend(text[a..b].bytes().filter(|c| *c == b'\n').map(|_| '\n'));
        at = b;
    }
    rest.push_str(&text[at..]);
    let [mut nodes, mut elements] = lists;
    // The lists grew by doubling: give back what they did not fill (up to half of them).
    nodes.shrink_to_fit();
    elements.shrink_to_fit();
    Some(Split {
        rest,
        nodes,
        elements,
    })
}

impl Entry {
    /// The entry of bytes `start..end` of a text that [`split`] has checked fits 32 bits.
    fn new(start: usize, end: usize, inline: bool) -> Self {
        Self {
            start: start as u32,
            end: end as u32,
            inline,
        }
    }

    /// Where the entry's text is in the file, bytes.
    fn range(&self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    /// The entry read as `T` (a [`NodeSpec`] or an element's table); a problem is reported at
    /// its place in `text` as the whole-file reader reports it.
    fn read<T: for<'de> Deserialize<'de>>(
        &self,
        text: &str,
        source: &str,
    ) -> Result<T, ModelError> {
        let raw = &text[self.range()];
        let read = if self.inline {
            toml::de::ValueDeserializer::parse(raw).and_then(T::deserialize)
        } else {
            toml::from_str(raw)
        };
        read.map_err(|e| super::toml_error(text, source, &e, self.range().start))
    }

    /// The entry read as a node.
    pub fn node(&self, text: &str, source: &str) -> Result<NodeSpec, ModelError> {
        self.read(text, source)
    }

    /// The entry read as an element's table.
    pub fn element(&self, text: &str, source: &str) -> Result<toml::Table, ModelError> {
        self.read(text, source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"title = "[[element]] # in a string" # [[node]] in a comment
notes = """
[[element]]
"""
node = [
  { id = 1, dofs = ["x"] }, # first
  {
    id = 2,
    dofs = ["x", "y"],
  },
]

[analysis]
time_step = 0.001

[[element]]
type = "spring"
name = 'a ] } [[node]]'

[output]
every = 1

[[element]]
type = "mass"
"#;

    #[test]
    fn entries_are_found_and_the_rest_keeps_every_line() {
        let split = split(TEXT).expect("taken apart");
        let texts =
            |list: &[Entry]| -> Vec<&str> { list.iter().map(|e| &TEXT[e.range()]).collect() };
        assert_eq!(
            texts(&split.nodes),
            [
                "{ id = 1, dofs = [\"x\"] }",
                "{\n    id = 2,\n    dofs = [\"x\", \"y\"],\n  }"
            ]
        );
        assert!(split.nodes.iter().all(|e| e.inline));
        assert_eq!(
            texts(&split.elements),
            [
                "type = \"spring\"\nname = 'a ] } [[node]]'\n\n",
                "type = \"mass\"\n"
            ]
        );
        assert!(split.elements.iter().all(|e| !e.inline));
        assert_eq!(split.rest.lines().count(), TEXT.lines().count());
        for (rest, text) in split.rest.lines().zip(TEXT.lines()) {
            assert!(rest.is_empty() || rest == text, "{rest:?} against {text:?}");
        }
        assert!(split.rest.contains("[output]\nevery = 1\n\n\n\n"));
    }

    #[test]
    fn forms_the_scan_does_not_take_apart_go_to_the_whole_file_reader() {
        for (from, to) in [
            ("[output]", "[node.extra]"),
            ("[output]", "[[element.sub]]"),
            ("[output]", "[[\"element\"]]"),
            ("[output]", "[[node]]"),
            ("title = ", "element.x = 1\ntitle = "),
            ("title = ", "element = []\nelement = []\ntitle = "),
            ("{ id = 1, dofs = [\"x\"] },", "5,"),
            ("'a ] } [[node]]'", "'unterminated"),
            ("  },\n]", "  },\n"),
            ("# first", "oops"),
        ] {
            let text = TEXT.replacen(from, to, 1);
            assert_ne!(text, TEXT);
            assert!(split(&text).is_none(), "{from} → {to} was taken apart");
        }
        assert!(split("title = \"no arrays\"\n[analysis]\ntime_step = 0.1\n").is_none());
    }
}
