package io.testkeeper;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A {@code testkeeper serve} child process for Java tests, in the spirit of Curator's
 * TestingServer: it binds a free loopback port, reads the one stdout line
 * ({@code testkeeper listening on ADDR}) and the admin endpoint's line from stderr, and talks
 * to the admin endpoint (expire sessions, drop connections, fault rules, reset). Only the JDK
 * is needed. The binary is the {@code testkeeper.bin} system property, else $TESTKEEPER_BIN,
 * else {@code testkeeper} on PATH.
 *
 * <pre>
 * try (TestKeeperServer tk = TestKeeperServer.start("zookeeper")) {
 *     ZooKeeper zk = new ZooKeeper(tk.connectString(), 10000, event -&gt; {});
 *     tk.expireSession(zk.getSessionId());
 * }
 * </pre>
 */
public final class TestKeeperServer implements AutoCloseable {
    private static final String LISTENING = "testkeeper listening on ";
    private static final String HTTP_LISTENING = "testkeeper http listening on ";

    private final Process process;
    private final String connectString;
    private volatile String adminUrl;
    private final List<String> log = new ArrayList<>();

    /** An error status from the admin endpoint. */
    public static final class AdminException extends IOException {
        public final int status;

        AdminException(int status, String body) {
            super("HTTP " + status + ": " + body);
            this.status = status;
        }
    }

    private TestKeeperServer(String flavor, String... extraArgs) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(Arrays.asList(binary(), "serve", "--listen", "127.0.0.1:0", "--http",
                "127.0.0.1:0", "--flavor", flavor));
        cmd.addAll(Arrays.asList(extraArgs));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().putIfAbsent("RUST_LOG", "info");
        process = pb.start();
        process.getOutputStream().close();
        BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        if (line == null || !line.startsWith(LISTENING)) {
            process.destroyForcibly();
            throw new IOException("testkeeper did not start: " + line);
        }
        connectString = line.substring(LISTENING.length()).trim();
        CountDownLatch http = new CountDownLatch(1);
        Thread drain = new Thread(() -> {
            // Kept whole so a test can read the log; drained so the server never blocks on it.
            try (BufferedReader err = new BufferedReader(
                    new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
                String l;
                while ((l = err.readLine()) != null) {
                    synchronized (log) {
                        log.add(l);
                    }
                    if (l.startsWith(HTTP_LISTENING)) {
                        adminUrl = "http://" + l.substring(HTTP_LISTENING.length()).trim();
                        http.countDown();
                    }
                }
            } catch (IOException ignored) {
                // the process ended
            }
        }, "testkeeper-stderr");
        drain.setDaemon(true);
        drain.start();
        if (!http.await(30, TimeUnit.SECONDS)) {
            close();
            throw new IOException("testkeeper printed no admin endpoint line");
        }
    }

    /** Starts a server of {@code flavor} ("keeper" or "zookeeper") with extra serve flags. */
    public static TestKeeperServer start(String flavor, String... extraArgs) throws IOException, InterruptedException {
        return new TestKeeperServer(flavor, extraArgs);
    }

    private static String binary() {
        String b = System.getProperty("testkeeper.bin");
        if (b == null || b.isEmpty()) {
            b = System.getenv("TESTKEEPER_BIN");
        }
        return b == null || b.isEmpty() ? "testkeeper" : b;
    }

    /** {@code 127.0.0.1:PORT}, for any ZooKeeper client. */
    public String connectString() {
        return connectString;
    }

    /** {@code http://127.0.0.1:PORT} of the admin endpoint. */
    public String adminUrl() {
        return adminUrl;
    }

    private String call(String method, String path, String body) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(adminUrl + path).openConnection();
        c.setRequestMethod(method);
        c.setConnectTimeout(10_000);
        c.setReadTimeout(10_000);
        // A JSON content type passes the endpoint's cross-site guard.
        c.setRequestProperty("Content-Type", "application/json");
        c.setRequestProperty("X-Testkeeper", "1");
        if (body != null) {
            c.setDoOutput(true);
            try (OutputStream os = c.getOutputStream()) {
                os.write(body.getBytes(StandardCharsets.UTF_8));
            }
        }
        int status = c.getResponseCode();
        java.io.InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream();
        String text = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
        if (status >= 300) {
            throw new AdminException(status, text.trim());
        }
        return text;
    }

    /** Expires a session now, as its timeout would: its ephemerals go, its client sees Expired. */
    public void expireSession(long sessionId) throws IOException {
        call("POST", "/api/v1/sessions/0x" + Long.toHexString(sessionId) + "/expire", "");
    }

    /** The live sessions, as the endpoint's JSON ({@code {"sessions":[...]}}). */
    public String sessionsJson() throws IOException {
        return call("GET", "/api/v1/sessions", null);
    }

    /** The ids of the live sessions. */
    public List<Long> sessionIds() throws IOException {
        List<Long> ids = new ArrayList<>();
        Matcher m = Pattern.compile("\"id\":\"0x([0-9a-f]+)\"").matcher(sessionsJson());
        while (m.find()) {
            ids.add(Long.parseUnsignedLong(m.group(1), 16));
        }
        return ids;
    }

    /** Closes a connection as a dropped link would; its session lives on. */
    public void dropConnection(long connectionId) throws IOException {
        call("DELETE", "/api/v1/connections/" + connectionId, null);
    }

    /** Installs a fault rule in the grammar of docs/faults.md; returns its id. */
    public long addFault(String rule) throws IOException {
        String body = call("POST", "/api/v1/faults", "{\"rule\":\"" + rule.replace("\\", "\\\\").replace("\"", "\\\"") + "\"}");
        Matcher m = Pattern.compile("\"id\":(\\d+)").matcher(body);
        if (!m.find()) {
            throw new IOException("no id in " + body);
        }
        return Long.parseLong(m.group(1));
    }

    /** Removes every fault rule. */
    public void clearFaults() throws IOException {
        call("DELETE", "/api/v1/faults", null);
    }

    /** The fired faults, as the endpoint's JSON ({@code {"total":N,"events":[...]}}). */
    public String eventsJson() throws IOException {
        return call("GET", "/api/v1/faults/events", null);
    }

    /** An empty tree, no sessions, no fault rules: a fresh server on the same address. */
    public void reset() throws IOException {
        call("POST", "/api/v1/reset", "");
    }

    /** Every stderr line so far. */
    public List<String> log() {
        synchronized (log) {
            return new ArrayList<>(log);
        }
    }

    /** Waits for a log line containing every one of {@code parts}; returns it. */
    public String awaitLog(long timeoutMs, String... parts) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            for (String l : log()) {
                if (Arrays.stream(parts).allMatch(l::contains)) {
                    return l;
                }
            }
            Thread.sleep(20);
        }
        throw new AssertionError("no log line with " + Arrays.toString(parts) + " in:\n" + String.join("\n", log()));
    }

    /** Stops the process (SIGTERM, then SIGKILL after 10 s). */
    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
