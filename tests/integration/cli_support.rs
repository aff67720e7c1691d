//! The built binary run as a user runs it: its stdout read line by line, stopped with Ctrl-C.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub fn binary() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pgtoolbox-operator"));
    command.env_remove("KUBERNETES_SERVICE_HOST");
    command
}

/// `pgtoolbox-operator run` against `kubeconfig`, its endpoints on free loopback ports, every
/// namespace watched; killed when dropped.
pub fn operator_run(kubeconfig: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::from(binary());
    command
        .arg("run")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--metrics-bind-address", "127.0.0.1:0"])
        .args(["--health-probe-bind-address", "127.0.0.1:0"])
        .env_remove("WATCH_NAMESPACES")
        .kill_on_drop(true);
    command
}

/// A client of the server a kubeconfig file written by `sim` names.
pub async fn client_for(kubeconfig: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    kube::Client::try_from(config).expect("client")
}

pub struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    pub seen: Vec<String>,
}

impl Running {
    /// Starts `pgtoolbox-operator ARGS` in `dir`; stderr goes where `stderr` says.
    pub fn start(args: &[&str], dir: &Path, stderr: Stdio) -> Running {
        let mut command = binary();
        command.args(args).current_dir(dir).stderr(stderr);
        Running::spawn(command)
    }

    /// Starts a prepared command of the binary with its stdout read line by line.
    pub fn spawn(mut command: Command) -> Running {
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Running {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The next line containing `what` (30 s at most).
    pub fn wait_for(&mut self, what: &str) -> String {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(30)) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(what) {
                        return line;
                    }
                }
                Err(_) => panic!("no line with {what:?}; got {:?}", self.seen),
            }
        }
    }

    /// The path printed on the `kubeconfig: PATH` line.
    pub fn kubeconfig(&mut self) -> String {
        self.wait_for("kubeconfig: ")
            .trim_start_matches("kubeconfig: ")
            .to_string()
    }

    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Ctrl-C, then the exit status.
    pub fn interrupt(mut self) -> ExitStatus {
        let interrupted = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(interrupted.success());
        self.child.wait().expect("the binary exits")
    }
}

/// A free loopback port (bound then released: another process could take it meanwhile, which
/// only fails this test).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One plain HTTP/1.0 GET of a loopback port: the status code and body, `None` when nothing
/// answers.
pub async fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, body.to_owned()))
}
