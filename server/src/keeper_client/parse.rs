//! keeper-client's command language (ClickHouse `programs/keeper-client/Parser.cpp` and the
//! `parse` of each command in `Commands.cpp`): statements separated by `;`, each a command
//! name and its arguments. An argument is a quoted string (`'a b'`, `"a b"`, `` `a b` ``, with
//! backslash escapes) or a run of characters up to whitespace or `;`. A bare word of four
//! letters that is no command is a four-letter word, as keeper-client treats it.

use super::text::COMMANDS;

/// How `create` makes the node (keeper-client's `[mode]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Persistent,
    PersistentSequential,
    Ephemeral,
    EphemeralSequential,
}

impl Mode {
    /// The wire's create flags.
    pub fn flags(self) -> i32 {
        match self {
            Mode::Persistent => 0,
            Mode::Ephemeral => 1,
            Mode::PersistentSequential => 2,
            Mode::EphemeralSequential => 3,
        }
    }
}

/// One parsed statement. Paths are as typed (relative to the working path or absolute).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Ls(Option<String>),
    Cd(Option<String>),
    Set { path: String, value: String, version: Option<i32> },
    Create { path: String, value: String, mode: Mode },
    Touch(String),
    Get(String),
    Exists(String),
    GetStat(Option<String>),
    FindSuperNodes { threshold: u64, path: String },
    DeleteStaleBackups,
    FindBigFamily { path: String, n: u64 },
    Rm { path: String, version: Option<i32> },
    Rmr { path: String, limit: u64 },
    Sync(String),
    Help,
    Flwc(String),
    GetDirectChildrenNumber(String),
    GetAllChildrenNumber(String),
    Cp { src: String, dest: String },
    Mv { src: String, dest: String },
}

impl Command {
    /// Whether it changes the tree (the HTTP route checks such lines against the cross-site
    /// guard).
    pub fn writes(&self) -> bool {
        matches!(
            self,
            Command::Set { .. }
                | Command::Create { .. }
                | Command::Touch(_)
                | Command::Rm { .. }
                | Command::Rmr { .. }
                | Command::Cp { .. }
                | Command::Mv { .. }
                | Command::DeleteStaleBackups
        )
    }
}

/// A statement that does not parse: where, and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based character position in the text.
    pub position: usize,
    pub message: String,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Syntax error: failed at position {}: {}", self.position, self.message)
    }
}

/// Reads arguments of one statement.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn skip_space(&mut self) {
        while self.text[self.at..].starts_with(|c: char| c.is_whitespace()) {
            self.at += self.text[self.at..].chars().next().map_or(1, char::len_utf8);
        }
    }

    fn at_end(&mut self) -> bool {
        self.skip_space();
        self.at >= self.text.len() || self.text[self.at..].starts_with(';')
    }

    fn error(&self, message: impl Into<String>) -> SyntaxError {
        SyntaxError { position: self.text[..self.at].chars().count() + 1, message: message.into() }
    }

    /// The next argument, or `None` at the end of the statement.
    fn arg(&mut self) -> Result<Option<String>, SyntaxError> {
        if self.at_end() {
            return Ok(None);
        }
        let rest = &self.text[self.at..];
        let quote = rest.chars().next().filter(|c| matches!(c, '\'' | '"' | '`'));
        let mut out = String::new();
        if let Some(q) = quote {
            let mut chars = rest.char_indices().skip(1);
            loop {
                match chars.next() {
                    None => return Err(self.error(format!("unterminated {q}-quoted string"))),
                    Some((i, c)) if c == q => {
                        self.at += i + c.len_utf8();
                        break;
                    }
                    Some((_, '\\')) => match chars.next() {
                        Some((_, e)) => out.push(match e {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            '0' => '\0',
                            other => other,
                        }),
                        None => return Err(self.error("a backslash at the end of the text")),
                    },
                    Some((_, c)) => out.push(c),
                }
            }
        }
        // As keeper-client: what follows without a space belongs to the same argument.
        let tail: String = self.text[self.at..].chars().take_while(|c| !c.is_whitespace() && *c != ';').collect();
        self.at += tail.len();
        out.push_str(&tail);
        Ok(Some(out))
    }

    fn path(&mut self, what: &str) -> Result<String, SyntaxError> {
        self.arg()?.ok_or_else(|| self.error(format!("expected {what}")))
    }

    fn number<T: std::str::FromStr>(&mut self, what: &str) -> Result<Option<T>, SyntaxError> {
        let save = self.at;
        match self.arg()? {
            None => Ok(None),
            Some(w) => w.parse().map(Some).map_err(|_| {
                self.at = save;
                self.error(format!("expected {what}, got '{w}'"))
            }),
        }
    }

    fn mode(&mut self) -> Result<Mode, SyntaxError> {
        let save = self.at;
        let first = self.arg()?.map(|w| w.to_ascii_uppercase());
        let sequential = |c: &mut Self| -> Result<bool, SyntaxError> {
            let save = c.at;
            match c.arg()?.map(|w| w.to_ascii_uppercase()) {
                Some(w) if w == "SEQUENTIAL" => Ok(true),
                Some(_) => {
                    c.at = save;
                    Ok(false)
                }
                None => Ok(false),
            }
        };
        Ok(match first.as_deref() {
            None => Mode::Persistent,
            Some("PERSISTENT") if sequential(self)? => Mode::PersistentSequential,
            Some("PERSISTENT") => Mode::Persistent,
            Some("EPHEMERAL") if sequential(self)? => Mode::EphemeralSequential,
            Some("EPHEMERAL") => Mode::Ephemeral,
            Some(other) => {
                self.at = save;
                return Err(self.error(format!("expected a mode (PERSISTENT, EPHEMERAL [SEQUENTIAL]), got '{other}'")));
            }
        })
    }
}

/// Parses `text` into statements.
///
/// # Errors
/// The first statement that does not parse.
pub fn parse(text: &str) -> Result<Vec<Command>, SyntaxError> {
    let mut c = Cursor { text, at: 0 };
    let mut out = Vec::new();
    loop {
        c.skip_space();
        while c.text[c.at..].starts_with(';') {
            c.at += 1;
            c.skip_space();
        }
        if c.at >= text.len() {
            return Ok(out);
        }
        let start = c.at;
        let name: String = text[c.at..].chars().take_while(|ch| ch.is_ascii_alphanumeric() || *ch == '_').collect();
        if name.is_empty() {
            return Err(c.error(format!("expected a command: {}", COMMANDS.join(", "))));
        }
        c.at += name.len();
        let cmd = match name.as_str() {
            "ls" => Command::Ls(c.arg()?),
            "cd" => Command::Cd(c.arg()?),
            "set" => {
                Command::Set { path: c.path("a path")?, value: c.path("a value")?, version: c.number("a version")? }
            }
            "create" => Command::Create { path: c.path("a path")?, value: c.path("a value")?, mode: c.mode()? },
            "touch" => Command::Touch(c.path("a path")?),
            "get" => Command::Get(c.path("a path")?),
            "exists" => Command::Exists(c.path("a path")?),
            "get_stat" => Command::GetStat(c.arg()?),
            "find_super_nodes" => {
                let threshold = c.number("a threshold")?.ok_or_else(|| c.error("expected a threshold"))?;
                Command::FindSuperNodes { threshold, path: c.arg()?.unwrap_or_else(|| ".".into()) }
            }
            "delete_stale_backups" => Command::DeleteStaleBackups,
            "find_big_family" => {
                let path = c.arg()?.unwrap_or_else(|| ".".into());
                Command::FindBigFamily { path, n: c.number("a count")?.unwrap_or(10) }
            }
            "rm" => Command::Rm { path: c.path("a path")?, version: c.number("a version")? },
            "rmr" => Command::Rmr { path: c.path("a path")?, limit: c.number("a limit")?.unwrap_or(100) },
            "sync" => Command::Sync(c.path("a path")?),
            "help" => Command::Help,
            "flwc" => Command::Flwc(c.path("a four-letter word")?),
            "get_direct_children_number" => Command::GetDirectChildrenNumber(c.arg()?.unwrap_or_else(|| ".".into())),
            "get_all_children_number" => Command::GetAllChildrenNumber(c.arg()?.unwrap_or_else(|| ".".into())),
            "cp" => Command::Cp { src: c.path("a source path")?, dest: c.path("a destination path")? },
            "mv" => Command::Mv { src: c.path("a source path")?, dest: c.path("a destination path")? },
            word if word.len() == 4 => Command::Flwc(word.to_string()),
            other => {
                c.at = start;
                return Err(c.error(format!("unknown command '{other}'; expected one of: {}", COMMANDS.join(", "))));
            }
        };
        if !c.at_end() {
            return Err(c.error("unexpected text after the command"));
        }
        out.push(cmd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_arguments_and_quotes() {
        assert_eq!(
            parse("ls; cd /a ; set \"/a b\" 'x\\'y' 3").unwrap(),
            vec![
                Command::Ls(None),
                Command::Cd(Some("/a".into())),
                Command::Set { path: "/a b".into(), value: "x'y".into(), version: Some(3) }
            ]
        );
        assert_eq!(
            parse("create q v ephemeral sequential").unwrap(),
            vec![Command::Create { path: "q".into(), value: "v".into(), mode: Mode::EphemeralSequential }]
        );
        assert_eq!(parse("find_big_family").unwrap(), vec![Command::FindBigFamily { path: ".".into(), n: 10 }]);
        assert_eq!(parse("rmr /x").unwrap(), vec![Command::Rmr { path: "/x".into(), limit: 100 }]);
        assert_eq!(parse("ruok").unwrap(), vec![Command::Flwc("ruok".into())]);
        assert_eq!(parse("  ;; ").unwrap(), vec![]);
    }

    #[test]
    fn errors_say_where_and_what() {
        let e = parse("ls /a; bogus /x").unwrap_err();
        assert_eq!(e.position, 8, "{e}");
        assert!(e.to_string().contains("unknown command 'bogus'"), "{e}");
        assert!(parse("set /a").unwrap_err().message.contains("expected a value"));
        assert!(parse("rm /a x").unwrap_err().message.contains("expected a version"));
        assert!(parse("get 'open").unwrap_err().message.contains("unterminated"));
        assert!(parse("create /a v sometimes").unwrap_err().message.contains("expected a mode"));
        assert!(parse("get /a /b").unwrap_err().message.contains("unexpected text"));
    }
}
