//! A headless Debian `chromium` driven over the Chrome DevTools Protocol, for the dashboard's
//! browser test.
//!
//! The protocol goes over `--remote-debugging-pipe` (the browser reads commands on fd 3 and
//! writes replies and events on fd 4, each message a JSON text ended by a NUL byte) rather
//! than a WebSocket: no port to find, nothing to download, and no CDP crate's build time on a
//! two-core machine; the browser is the one Debian ships, found on `PATH`. Each browser gets a
//! fresh `--user-data-dir` and is killed by its PID on drop.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

/// How long one protocol command may take before the test fails.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Debian's `chromium` on `PATH`, if installed.
pub fn chromium_path() -> Option<PathBuf> {
    crate::env::find_in_path("chromium").or_else(|| crate::env::find_in_path("chromium-browser"))
}

/// The flags every run uses: headless, no sandbox (CI runs as root), nothing fetched from the
/// network, a profile of its own.
pub fn base_flags(profile: &std::path::Path) -> Vec<String> {
    [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("--user-data-dir={}", profile.display())])
    .collect()
}

/// A running headless browser and one page attached over CDP.
pub struct Browser {
    child: Child,
    to_browser: std::fs::File,
    from_browser: Receiver<Value>,
    next_id: u64,
    session: Option<String>,
    _profile: TempDir,
    log: PathBuf,
}

impl Browser {
    /// Starts `chromium` with the pipe open.
    ///
    /// # Errors
    /// The browser cannot be spawned.
    pub fn launch(bin: &std::path::Path) -> std::io::Result<Browser> {
        let profile = tempfile::Builder::new().prefix("testkeeper-chromium-").tempdir()?;
        let log = profile.path().join("chromium.log");
        let (cmd_read, cmd_write) = pipe()?;
        let (resp_read, resp_write) = pipe()?;
        let (cmd_fd, resp_fd) = (cmd_read.as_raw_fd(), resp_write.as_raw_fd());
        let mut cmd = Command::new(bin);
        cmd.args(base_flags(profile.path()))
            .arg("--remote-debugging-pipe")
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log)?)
            .stderr(std::fs::File::create(profile.path().join("chromium.err"))?)
            .process_group(0);
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork and exec. The pipe
        // ends are first moved above 10 so that placing them on 3 and 4 cannot clobber one
        // with the other; dup2 clears close-on-exec on the copies, the originals close.
        unsafe {
            cmd.pre_exec(move || {
                let high_cmd = libc::fcntl(cmd_fd, libc::F_DUPFD_CLOEXEC, 10);
                let high_resp = libc::fcntl(resp_fd, libc::F_DUPFD_CLOEXEC, 10);
                if high_cmd < 0 || high_resp < 0 || libc::dup2(high_cmd, 3) < 0 || libc::dup2(high_resp, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        drop(cmd_read);
        drop(resp_write);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(resp_read);
            loop {
                let mut msg = Vec::new();
                match r.read_until(0, &mut msg) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if msg.last() == Some(&0) {
                            msg.pop();
                        }
                        if let Ok(v) = serde_json::from_slice::<Value>(&msg) {
                            if tx.send(v).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        });
        Ok(Browser {
            child,
            to_browser: cmd_write,
            from_browser: rx,
            next_id: 1,
            session: None,
            _profile: profile,
            log,
        })
    }

    /// What the browser wrote on stderr, for a failure message.
    pub fn stderr(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(self.log.with_file_name("chromium.err")) {
            let _ = f.read_to_string(&mut s);
        }
        s.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// Sends one command (to the attached page when `page`) and waits for its result.
    ///
    /// # Errors
    /// The browser answered with an error, went away, or did not answer in time.
    pub fn call(&mut self, method: &str, params: Value, page: bool) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if page {
            let s = self.session.clone().ok_or("no page attached")?;
            msg["sessionId"] = Value::String(s);
        }
        let mut bytes = serde_json::to_vec(&msg).map_err(|e| e.to_string())?;
        bytes.push(0);
        self.to_browser.write_all(&bytes).map_err(|e| format!("writing to chromium: {e}"))?;
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from_browser.recv_timeout(left) {
                Ok(v) if v["id"].as_u64() == Some(id) => {
                    if let Some(e) = v.get("error") {
                        return Err(format!("{method}: {e}"));
                    }
                    return Ok(v["result"].clone());
                }
                Ok(_) => {} // an event, or another command's answer
                Err(RecvTimeoutError::Timeout) => return Err(format!("{method}: no answer in {COMMAND_TIMEOUT:?}")),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("{method}: chromium went away\n{}", self.stderr()))
                }
            }
        }
    }

    /// Opens `url` in a new page and attaches to it; later [`Browser::eval`] calls run there.
    ///
    /// # Errors
    /// As [`Browser::call`].
    pub fn open(&mut self, url: &str) -> Result<(), String> {
        let target = self.call("Target.createTarget", json!({ "url": url }), false)?;
        let id = target["targetId"].as_str().ok_or("no targetId")?.to_string();
        let attached = self.call("Target.attachToTarget", json!({ "targetId": id, "flatten": true }), false)?;
        self.session = Some(attached["sessionId"].as_str().ok_or("no sessionId")?.to_string());
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1440, "height": 1300, "deviceScaleFactor": 1, "mobile": false}),
            true,
        )?;
        Ok(())
    }

    /// Evaluates `expr` in the page (promises awaited) and returns its value.
    ///
    /// # Errors
    /// A protocol error, or the expression threw.
    pub fn eval(&mut self, expr: &str) -> Result<Value, String> {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expr, "awaitPromise": true, "returnByValue": true }),
            true,
        )?;
        if let Some(ex) = r.get("exceptionDetails") {
            return Err(format!("{expr}: threw {ex}"));
        }
        Ok(r["result"]["value"].clone())
    }

    /// Evaluates `expr` until it is `true`, or fails after `within` with `what`.
    ///
    /// # Errors
    /// The expression never became true, or evaluating it failed.
    pub fn wait_for(&mut self, expr: &str, within: Duration, what: &str) -> Result<(), String> {
        let deadline = Instant::now() + within;
        loop {
            if self.eval(expr)? == Value::Bool(true) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!("timed out waiting for {what} ({expr})"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A PNG of the page as it is now.
    ///
    /// # Errors
    /// As [`Browser::call`], or the image is not base64.
    pub fn screenshot(&mut self) -> Result<Vec<u8>, String> {
        let r = self.call("Page.captureScreenshot", json!({ "format": "png", "captureBeyondViewport": true }), true)?;
        let b64 = r["data"].as_str().ok_or("no data")?;
        base64_decode(b64)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The whole process group: chromium's renderer and GPU helpers too.
        let pid = self.child.id() as i32;
        // SAFETY: signalling our own child's process group, by its id.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> std::io::Result<(std::fs::File, std::fs::File)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((std::fs::File::from(r), std::fs::File::from(w)))
}

fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let clean: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace() && *b != b'=').collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c).ok_or_else(|| format!("bad base64 byte {c}"))? << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_known_text() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGk=").unwrap(), b"hi");
        assert_eq!(base64_decode("YWJj").unwrap(), b"abc");
        assert!(base64_decode("a$==").is_err());
    }
}
