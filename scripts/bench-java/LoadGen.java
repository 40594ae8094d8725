import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.zookeeper.AsyncCallback;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * An independent load generator on Apache ZooKeeper's own Java client (async API), to check
 * the ratios `testkeeper bench` reports with a client that shares no code with ours.
 *
 * It mirrors the bench's workload (cli/src/bench/mix.rs, load.rs): KEYS znodes PREFIX/k0..
 * under a random prefix, created before the clock starts; then OPS requests from a seeded
 * weighted mix over those keys (create/delete of a random key may meet NodeExists/NoNode,
 * which count as answers, not errors; multi is create+delete of a fresh key; list is
 * getChildren of the prefix), with WINDOW requests in flight on each of SESSIONS sessions.
 * Latency is request issued to callback run. With several members joined by '|' (a cluster's),
 * session i connects to the (i mod n)-th. A warm-up of OPS/4 unmeasured requests runs
 * first (this JVM's JIT needs it as much as the server's).
 *
 * Usage: java -cp DIR:/usr/share/java/zookeeper.jar LoadGen --connect HOST:PORT[|HOST:PORT...]
 *        [--sessions 1] [--window 1] [--ops 20000] [--value-size 100] [--keys 256]
 *        [--mix create=10,get=50,set=20,delete=10,multi=5,list=5] [--seed N] [--warmup N]
 * Prints one JSON object on stdout:
 *   {"ops", "seconds", "ops_per_sec", "p50_us", "p99_us", "errors", "client_cpu_s", "codes", "seed", ...}
 * where client_cpu_s is this JVM's CPU time during the measured run (to tell a saturated client).
 */
public final class LoadGen {
    static final String[] KINDS = {"create", "get", "set", "delete", "multi", "list"};

    final String connect;
    int sessions = 1, window = 1, keys = 256, valueSize = 100;
    long ops = 20000, warmup = -1, seed = new Random().nextLong();
    int[] weights = {10, 50, 20, 10, 5, 5};
    int totalWeight;

    final List<ZooKeeper> clients = new ArrayList<>();
    String prefix;
    byte[] value;

    LoadGen(String[] args) {
        String c = null;
        for (int i = 0; i + 1 < args.length; i += 2) {
            String v = args[i + 1];
            switch (args[i]) {
                case "--connect": c = v; break;
                case "--sessions": sessions = Integer.parseInt(v); break;
                case "--window": window = Integer.parseInt(v); break;
                case "--ops": ops = Long.parseLong(v); break;
                case "--value-size": valueSize = Integer.parseInt(v); break;
                case "--keys": keys = Integer.parseInt(v); break;
                case "--mix": weights = parseMix(v); break;
                case "--seed": seed = Long.parseLong(v); break;
                case "--warmup": warmup = Long.parseLong(v); break;
                default: throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        if (c == null) throw new IllegalArgumentException("--connect HOST:PORT is required");
        connect = c;
        totalWeight = Arrays.stream(weights).sum();
        if (totalWeight <= 0) throw new IllegalArgumentException("the mix has no op with a positive weight");
        if (warmup < 0) warmup = ops / 4;
    }

    /** Parses "create=10,get=50,..." like Mix::parse; missing kinds weigh 0. */
    static int[] parseMix(String s) {
        int[] w = new int[KINDS.length];
        for (String part : s.split(",")) {
            if (part.isBlank()) continue;
            String[] kv = part.trim().split("=");
            int k = Arrays.asList(KINDS).indexOf(kv[0].trim());
            if (k < 0 || kv.length != 2) throw new IllegalArgumentException("bad mix entry " + part);
            w[k] = Integer.parseInt(kv[1].trim());
        }
        return w;
    }

    int pick(Random rng) {
        int x = rng.nextInt(totalWeight);
        for (int k = 0; k < weights.length; k++) {
            if (x < weights[k]) return k;
            x -= weights[k];
        }
        throw new IllegalStateException("x < total");
    }

    String key(Random rng) {
        return prefix + "/k" + rng.nextInt(keys);
    }

    void connectAll() throws Exception {
        for (int i = 0; i < sessions; i++) {
            CountDownLatch up = new CountDownLatch(1);
            Watcher w = e -> {
                if (e.getState() == Watcher.Event.KeeperState.SyncConnected) up.countDown();
            };
            // Members joined by '|' take the sessions in turn (as `testkeeper bench` places them);
            // a ZooKeeper connect string ("a,b,c") is the client's own choice, at random.
            String[] targets = connect.split("\\|");
            String target = targets[i % targets.length];
            ZooKeeper zk = new ZooKeeper(target, 30000, w);
            clients.add(zk);
            if (!up.await(30, TimeUnit.SECONDS)) throw new IllegalStateException("no session to " + target);
        }
    }

    /** Creates the prefix and the keys, up to 256 in flight (not measured). */
    void setup(Random rng) throws Exception {
        prefix = String.format("/bench-java-%016x", rng.nextLong());
        value = new byte[valueSize];
        rng.nextBytes(value);
        clients.get(0).create(prefix, value, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        Semaphore inFlight = new Semaphore(256);
        for (int i = 0; i < keys; i++) {
            inFlight.acquire();
            clients.get(i % sessions).create(prefix + "/k" + i, value, ZooDefs.Ids.OPEN_ACL_UNSAFE,
                    CreateMode.PERSISTENT, (rc, path, ctx, name) -> inFlight.release(), null);
        }
        inFlight.acquire(256);
        inFlight.release(256);
    }

    /** What one measured (or warm-up) run saw. */
    static final class Result {
        long[] latNs;
        int[] codes;
        int count;
        double seconds;
        double cpuSeconds;
    }

    /** One in-flight slot: sends a request, and from its callback the next, until ops run out. */
    final class Slot {
        final ZooKeeper zk;
        final Random rng;
        final int id;
        final AtomicLong claimed;
        final long total;
        final CountDownLatch done;
        long[] lat;
        int[] codes;
        int n;

        Slot(ZooKeeper zk, int id, long runSeed, AtomicLong claimed, long total, CountDownLatch done) {
            this.zk = zk;
            this.id = id;
            this.rng = new Random(runSeed ^ ((id + 1L) * 0x9E37L));
            this.claimed = claimed;
            this.total = total;
            this.done = done;
            int cap = (int) (total / Math.max(1, sessions * window)) * 5 / 4 + 16;
            this.lat = new long[cap];
            this.codes = new int[cap];
        }

        void next() {
            long op = claimed.getAndIncrement();
            if (op >= total) {
                done.countDown();
                return;
            }
            int kind = pick(rng);
            long t0 = System.nanoTime();
            switch (kind) {
                case 0:
                    zk.create(key(rng), value, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT,
                            (rc, p, c, name) -> reply(t0, rc), null);
                    break;
                case 1: zk.getData(key(rng), false, (rc, p, c, data, stat) -> reply(t0, rc), null); break;
                case 2: zk.setData(key(rng), value, -1, (rc, p, c, stat) -> reply(t0, rc), null); break;
                case 3: zk.delete(key(rng), -1, (rc, p, c) -> reply(t0, rc), null); break;
                case 4: {
                    String path = prefix + "/m" + id + "-" + op;
                    List<Op> multi = List.of(Op.create(path, value, ZooDefs.Ids.OPEN_ACL_UNSAFE,
                            CreateMode.PERSISTENT), Op.delete(path, -1));
                    zk.multi(multi, (rc, p, c, results) -> reply(t0, rc), null);
                    break;
                }
                default: zk.getChildren(prefix, false, (rc, p, c, children) -> reply(t0, rc), null);
            }
        }

        void reply(long t0, int rc) {
            long ns = System.nanoTime() - t0;
            if (n == lat.length) {
                grow();
            }
            lat[n] = ns;
            codes[n++] = rc;
            if (rc == KeeperException.Code.CONNECTIONLOSS.intValue()
                    || rc == KeeperException.Code.SESSIONEXPIRED.intValue()) {
                done.countDown(); // this session is gone; stop the slot
                return;
            }
            next();
        }

        /** Slots share one counter unevenly; only this session's event thread touches the log. */
        void grow() {
            lat = Arrays.copyOf(lat, lat.length * 2);
            codes = Arrays.copyOf(codes, codes.length * 2);
        }
    }

    Result run(long total, long runSeed) throws Exception {
        AtomicLong claimed = new AtomicLong();
        int slots = sessions * window;
        CountDownLatch done = new CountDownLatch(slots);
        List<Slot> all = new ArrayList<>();
        for (int s = 0; s < sessions; s++) {
            for (int w = 0; w < window; w++) {
                all.add(new Slot(clients.get(s), s * window + w, runSeed, claimed, total, done));
            }
        }
        long cpu0 = cpuNanos();
        long start = System.nanoTime();
        for (Slot slot : all) slot.next();
        if (!done.await(600, TimeUnit.SECONDS)) throw new IllegalStateException("run did not finish in 600 s");
        Result r = new Result();
        r.seconds = (System.nanoTime() - start) / 1e9;
        r.cpuSeconds = (cpuNanos() - cpu0) / 1e9;
        r.count = all.stream().mapToInt(x -> x.n).sum();
        r.latNs = new long[r.count];
        r.codes = new int[r.count];
        int i = 0;
        for (Slot slot : all) {
            System.arraycopy(slot.lat, 0, r.latNs, i, slot.n);
            System.arraycopy(slot.codes, 0, r.codes, i, slot.n);
            i += slot.n;
        }
        return r;
    }

    /** CPU time of this whole JVM (all threads, GC and JIT included), or -1 if unknown. */
    static long cpuNanos() {
        var os = ManagementFactory.getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean
                ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() : -1;
    }

    void cleanup() throws Exception {
        Semaphore inFlight = new Semaphore(256);
        for (int i = 0; i < keys; i++) {
            inFlight.acquire();
            clients.get(i % sessions).delete(prefix + "/k" + i, -1, (rc, p, c) -> inFlight.release(), null);
        }
        inFlight.acquire(256);
        try {
            clients.get(0).delete(prefix, -1);
        } catch (KeeperException e) {
            // not measured; a leftover multi key or a lost session does not matter here
        }
        for (ZooKeeper zk : clients) zk.close();
    }

    static long percentileUs(long[] sorted, double q) {
        if (sorted.length == 0) return 0;
        int i = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1000;
    }

    public static void main(String[] args) throws Exception {
        LoadGen g = new LoadGen(args);
        Random rng = new Random(g.seed);
        g.connectAll();
        g.setup(rng);
        if (g.warmup > 0) g.run(g.warmup, g.seed ^ 0x5757);
        Result r = g.run(g.ops, g.seed);
        g.cleanup();

        Map<String, Integer> codes = new TreeMap<>();
        long errors = 0;
        for (int rc : r.codes) {
            KeeperException.Code code = KeeperException.Code.get(rc);
            codes.merge(code == null ? "code" + rc : code.name(), 1, Integer::sum);
            boolean answer = rc == 0 || rc == KeeperException.Code.NODEEXISTS.intValue()
                    || rc == KeeperException.Code.NONODE.intValue();
            if (!answer) errors++;
        }
        errors += g.ops - r.count; // requests never sent because a session was lost
        long[] sorted = r.latNs.clone();
        Arrays.sort(sorted);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("ops", r.count);
        out.put("seconds", r.seconds);
        out.put("ops_per_sec", r.count / Math.max(r.seconds, 1e-9));
        out.put("p50_us", percentileUs(sorted, 0.50));
        out.put("p99_us", percentileUs(sorted, 0.99));
        out.put("errors", errors);
        out.put("client_cpu_s", r.cpuSeconds);
        out.put("codes", codes);
        out.put("seed", g.seed);
        out.put("sessions", g.sessions);
        out.put("window", g.window);
        out.put("keys", g.keys);
        out.put("value_size", g.valueSize);
        out.put("warmup", g.warmup);
        StringBuilder mix = new StringBuilder();
        for (int k = 0; k < KINDS.length; k++) {
            mix.append(k > 0 ? "," : "").append(KINDS[k]).append('=').append(g.weights[k]);
        }
        out.put("mix", mix.toString());
        System.out.println(toJson(out));
        System.exit(0); // the client's threads are daemons, but do not wait on them
    }

    /** Flat JSON of numbers, strings and one level of nested maps: all this program prints. */
    static String toJson(Map<String, ?> m) {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, ?> e : m.entrySet()) {
            if (b.length() > 1) b.append(", ");
            b.append('"').append(e.getKey()).append("\": ");
            Object v = e.getValue();
            if (v instanceof Map) {
                @SuppressWarnings("unchecked") Map<String, ?> inner = (Map<String, ?>) v;
                b.append(toJson(inner));
            } else if (v instanceof String) {
                b.append('"').append(v).append('"');
            } else {
                b.append(v);
            }
        }
        return b.append('}').toString();
    }
}
