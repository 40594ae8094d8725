// testkeeper's stand-in for the suite's Docker harness (tests/rust-client/patch.py puts it in
// place of `struct Cluster` and `impl Cluster`). Each `Cluster` is one `testkeeper serve`
// process in the zookeeper flavor on a free loopback port, as each test got a container of
// its own: a fresh tree per test. The version comes from TESTKEEPER_ZOOKEEPER_VERSION.
// What a container could do and one process cannot (an ensemble, SASL, TLS) panics naming
// the reason; scripts/rust-client-suite.sh skips those tests.

struct Cluster {
    #[cfg(feature = "tls")]
    tls: Option<Tls>,
    servers: Vec<(u32, TestKeeper)>,
}

/// One `testkeeper serve` child; stopped (killed) on drop.
struct TestKeeper {
    child: Mutex<Option<std::process::Child>>,
    port: u16,
}

impl TestKeeper {
    fn spawn(options: &ClusterOptions<'_>, version: String) -> Self {
        use std::io::BufRead as _;
        let bin = std::env::var("TESTKEEPER_BIN").expect("TESTKEEPER_BIN names the testkeeper binary");
        let mut cmd = std::process::Command::new(bin);
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--flavor", "zookeeper", "--zookeeper-version", &version]);
        // The suite's image always carries this super digest (see `zookeeper_image`).
        cmd.args(["--super-digest", "super:D/InIHSb7yEEbrWz8b9l71RjZJU="]);
        for property in &options.properties {
            match property.split_once('=') {
                Some(("-Dznode.container.checkIntervalMs", ms)) => {
                    cmd.args(["--container-check-ms", ms]);
                },
                // TTL nodes need no switch in testkeeper (docs/flavors.md).
                Some(("-Dzookeeper.extendedTypesEnabled", "true")) => {},
                _ => panic!("testkeeper harness: JVM property {property} has no testkeeper equivalent"),
            }
        }
        // The server's log only on request (TESTKEEPER_SUITE_LOG=1): the suite's own output
        // stays readable.
        let log = std::env::var_os("TESTKEEPER_SUITE_LOG").is_some();
        let stderr = if log { std::process::Stdio::inherit() } else { std::process::Stdio::null() };
        cmd.stdout(std::process::Stdio::piped()).stderr(stderr);
        let mut child = cmd.spawn().expect("spawn testkeeper");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("testkeeper harness: unexpected first line {line:?}"));
        Self { child: Mutex::new(Some(child)), port }
    }

    pub fn get_host_port(&self, _container_port: u16) -> u16 {
        self.port
    }

    pub fn stop(&self) {
        if let Some(mut child) = self.child.lock().unwrap().take() {
            child.kill().ok();
            child.wait().ok();
        }
    }

    pub fn start(&self) {
        panic!("testkeeper harness: restarting a server belongs to the ensemble tests, which are skipped")
    }
}

impl Drop for TestKeeper {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Stands in for a container's log stream; only the ensemble tests read it.
struct TestKeeperLogs;

impl TestKeeperLogs {
    pub fn wait_for_message(&self, message: &str) -> std::io::Result<()> {
        let why = format!("testkeeper harness: no container log to wait for {message:?} in");
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, why))
    }
}

impl Cluster {
    pub async fn new() -> Self {
        Self::with_options(Default::default(), None).await
    }

    pub async fn with_properties(properties: Vec<&'_ str>) -> Self {
        Self::with_options(ClusterOptions { properties, ..Default::default() }, None).await
    }

    pub async fn with_options(options: ClusterOptions<'_>, encryption: Option<Encryption>) -> Self {
        if !options.is_standalone() {
            panic!("testkeeper harness: a ZooKeeper ensemble (servers in zoo.cfg) is out of scope");
        }
        if !options.configs.is_empty() {
            panic!("testkeeper harness: zoo.cfg lines {:?} have no testkeeper equivalent", options.configs);
        }
        // The suite's own image (3.9.0) is the version under test. Its old-server test asks 3.3
        // and 3.4 for a plain create's answer and a watch event's zxid (-1): 3.8.0 answers both
        // as they do, so that test runs against --zookeeper-version 3.8.0.
        let version = if options.tag == ZK_IMAGE_TAG {
            std::env::var("TESTKEEPER_ZOOKEEPER_VERSION").unwrap_or_else(|_| "3.9".to_string())
        } else if options.tag == "3.3" || options.tag == "3.4" {
            "3.8.0".to_string()
        } else {
            panic!("testkeeper harness: ZooKeeper {} is not a version testkeeper answers as", options.tag)
        };
        #[cfg(feature = "tls")]
        if matches!(encryption, Some(Encryption::Tls)) {
            panic!("testkeeper harness: testkeeper serves no TLS");
        }
        let _ = encryption;
        let server = TestKeeper::spawn(&options, version);
        Self {
            #[cfg(feature = "tls")]
            tls: None,
            servers: vec![(1, server)],
        }
    }

    pub fn stop(&self) {
        self.servers.iter().for_each(|s| s.1.stop());
    }

    pub fn by_id(&self, id: u32) -> &TestKeeper {
        self.servers.iter().find_map(|s| if s.0 == id { Some(&s.1) } else { None }).expect("server")
    }

    #[allow(dead_code)]
    pub fn logs(&self, _id: u32) -> TestKeeperLogs {
        TestKeeperLogs
    }

    fn url(&self, chroot: Option<&str>) -> (String, bool) {
        let endpoints: Vec<_> = self
            .servers
            .iter()
            .map(|s| {
                // As the original: with or without the explicit scheme, at random.
                let protocol = if rand::random() { "tcp://" } else { "" };
                format!("{}127.0.0.1:{}", protocol, s.1.port)
            })
            .collect();
        (endpoints.join(",") + chroot.unwrap_or(""), false)
    }

    pub fn connector(&self) -> zk::Connector {
        zk::Client::connector()
    }

    pub async fn client(&self, chroot: Option<&str>) -> zk::Client {
        self.custom_client(chroot, |connector| connector).await.unwrap()
    }

    pub async fn custom_client(
        &self,
        chroot: Option<&str>,
        custom: impl FnOnce(zk::Connector) -> zk::Connector,
    ) -> Result<zk::Client, zk::Error> {
        let connector = custom(self.connector());
        let (url, _secure) = self.url(chroot);
        connector.connect(&url).await
    }
}
