/*
 * Apache Curator's recipes against one server: locks, a semaphore, leader latch, CuratorCache
 * (persistent recursive watches), queues, barriers, TTL nodes and a session that expires
 * server-side while its client is cut off. Run by tests/tests/curator_recipes.rs against each
 * testkeeper flavor and against Apache ZooKeeper 3.8, with Debian's libcurator-*-java.
 *
 * Usage: java -cp DIR:/usr/share/java/curator-recipes.jar:... CuratorRecipes HOST:PORT [recipe...]
 * Prints "PASS <recipe>" or "FAIL <recipe>: <why>" per recipe; the exit code is the number of
 * failures. Every wait is bounded, so a server that never answers fails a recipe, not the run.
 */

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;

public final class CuratorRecipes {
    /** Longest any single wait may take. */
    static final long BOUND_S = 30;

    static String connect;
    static final List<CuratorFramework> clients = new CopyOnWriteArrayList<>();

    public static void main(String[] args) throws Exception {
        connect = args[0];
        List<String> only = List.of(args).subList(1, args.length);
        String[][] recipes = {
            {"lock"}, {"semaphore"}, {"leader-latch"}, {"curator-cache"}, {"queue"},
            {"simple-queue"}, {"barrier"}, {"double-barrier"}, {"ttl-node"}, {"session-expiry"},
        };
        int failures = 0;
        for (String[] r : recipes) {
            String name = r[0];
            if (!only.isEmpty() && !only.contains(name)) {
                continue;
            }
            try {
                run(name);
                System.out.println("PASS " + name);
            } catch (Throwable t) {
                failures++;
                System.out.println("FAIL " + name + ": " + t);
            } finally {
                for (CuratorFramework c : clients) {
                    c.close();
                }
                clients.clear();
            }
            System.out.flush();
        }
        System.exit(failures);
    }

    static void run(String name) throws Exception {
        switch (name) {
            case "lock": lock(); break;
            case "semaphore": semaphore(); break;
            case "leader-latch": leaderLatch(); break;
            case "curator-cache": curatorCache(); break;
            case "queue": queue(); break;
            case "simple-queue": simpleQueue(); break;
            case "barrier": barrier(); break;
            case "double-barrier": doubleBarrier(); break;
            case "ttl-node": ttlNode(); break;
            case "session-expiry": sessionExpiry(); break;
            default: throw new IllegalArgumentException("unknown recipe " + name);
        }
    }

    static CuratorFramework client(String connectString, int sessionMs) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(connectString, sessionMs, 15_000, new RetryNTimes(50, 200));
        clients.add(c);
        c.start();
        check(c.blockUntilConnected((int) BOUND_S, TimeUnit.SECONDS), "connected to " + connectString);
        return c;
    }

    static CuratorFramework client() throws Exception {
        return client(connect, 30_000);
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static void await(BooleanSupplier cond, String what) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_S);
        while (!cond.getAsBoolean()) {
            check(System.nanoTime() < end, what + " within " + BOUND_S + " s");
            Thread.sleep(20);
        }
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Two clients, four threads, one InterProcessMutex: never two inside, no update lost. */
    static void lock() throws Exception {
        CuratorFramework[] cs = {client(), client()};
        AtomicInteger inside = new AtomicInteger(), most = new AtomicInteger(), done = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<Future<?>> fs = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            CuratorFramework c = cs[t % 2];
            fs.add(pool.submit(() -> {
                InterProcessMutex m = new InterProcessMutex(c, "/recipes/lock");
                for (int i = 0; i < 10; i++) {
                    check(m.acquire(BOUND_S, TimeUnit.SECONDS), "lock acquired");
                    most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                    Thread.sleep(2);
                    inside.decrementAndGet();
                    done.incrementAndGet();
                    m.release();
                }
                return null;
            }));
        }
        for (Future<?> f : fs) {
            f.get(BOUND_S, TimeUnit.SECONDS);
        }
        pool.shutdown();
        check(most.get() == 1, "at most one holder, saw " + most.get());
        check(done.get() == 40, "40 critical sections, saw " + done.get());
        check(lockNodesLeft(cs[0], "/recipes/lock").isEmpty(), "no lock node left");
    }

    /**
     * The children still under a lock's parent. Curator creates that parent as a container, and
     * ZooKeeper collects an empty container on its own (every second in the tests' config), so
     * a parent that is already gone has no children either.
     */
    static List<String> lockNodesLeft(CuratorFramework c, String path) throws Exception {
        try {
            return c.getChildren().forPath(path);
        } catch (org.apache.zookeeper.KeeperException.NoNodeException gone) {
            return List.of();
        }
    }

    /** Six contenders for two leases: never more than two held at once. */
    static void semaphore() throws Exception {
        CuratorFramework[] cs = {client(), client()};
        AtomicInteger held = new AtomicInteger(), most = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(6);
        List<Future<?>> fs = new ArrayList<>();
        for (int t = 0; t < 6; t++) {
            CuratorFramework c = cs[t % 2];
            fs.add(pool.submit(() -> {
                InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(c, "/recipes/semaphore", 2);
                for (int i = 0; i < 5; i++) {
                    Lease lease = s.acquire(BOUND_S, TimeUnit.SECONDS);
                    check(lease != null, "lease acquired");
                    most.accumulateAndGet(held.incrementAndGet(), Math::max);
                    Thread.sleep(5);
                    held.decrementAndGet();
                    s.returnLease(lease);
                }
                return null;
            }));
        }
        for (Future<?> f : fs) {
            f.get(BOUND_S, TimeUnit.SECONDS);
        }
        pool.shutdown();
        check(most.get() <= 2 && most.get() >= 1, "at most two leases at once, saw " + most.get());
    }

    /** Three latches: exactly one leader; when it leaves, exactly one other takes over. */
    static void leaderLatch() throws Exception {
        List<LeaderLatch> latches = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            LeaderLatch l = new LeaderLatch(client(), "/recipes/leader", "member-" + i);
            l.start();
            latches.add(l);
        }
        await(() -> latches.stream().filter(LeaderLatch::hasLeadership).count() == 1, "one leader");
        LeaderLatch first = latches.stream().filter(LeaderLatch::hasLeadership).findFirst().get();
        check(first.getLeader().getId().equals(first.getId()), "the leader knows it is the leader");
        first.close();
        latches.remove(first);
        await(() -> latches.stream().filter(LeaderLatch::hasLeadership).count() == 1, "a new leader");
        for (LeaderLatch l : latches) {
            l.close();
        }
    }

    /** CuratorCache over a subtree (a persistent recursive watch): sees creates, changes and
     *  deletes made by another client, and ends equal to the tree. */
    static void curatorCache() throws Exception {
        CuratorFramework writer = client(), reader = client();
        writer.create().creatingParentsIfNeeded().forPath("/recipes/cache", bytes("root"));
        ConcurrentLinkedQueue<String> seen = new ConcurrentLinkedQueue<>();
        CountDownLatch initialized = new CountDownLatch(1);
        CuratorCache cache = CuratorCache.build(reader, "/recipes/cache");
        cache.listenable().addListener(CuratorCacheListener.builder()
            .forCreates(n -> seen.add("create " + n.getPath()))
            .forChanges((before, after) -> seen.add("change " + after.getPath() + "=" + new String(after.getData(), StandardCharsets.UTF_8)))
            .forDeletes(n -> seen.add("delete " + n.getPath()))
            .forInitialized(initialized::countDown)
            .build());
        cache.start();
        check(initialized.await(BOUND_S, TimeUnit.SECONDS), "cache initialized");
        for (String c : new String[] {"a", "b", "c"}) {
            writer.create().forPath("/recipes/cache/" + c, bytes(c));
        }
        List<String> children = List.of("create /recipes/cache/a", "create /recipes/cache/b", "create /recipes/cache/c");
        await(() -> seen.containsAll(children), "cache events " + children + " (saw " + seen + ")");
        // A grandchild made once its parent is cached: only an event naming it (or a re-read of
        // its parent) can tell the cache. No other change follows until it has arrived, so a
        // server whose events name the watched path instead fails here every time.
        writer.create().forPath("/recipes/cache/a/deep", bytes("d"));
        await(() -> seen.contains("create /recipes/cache/a/deep"), "cache event for a grandchild (saw " + seen + ")");
        writer.setData().forPath("/recipes/cache/b", bytes("b2"));
        writer.delete().forPath("/recipes/cache/c");
        List<String> rest = List.of("change /recipes/cache/b=b2", "delete /recipes/cache/c");
        await(() -> seen.containsAll(rest), "cache events " + rest + " (saw " + seen + ")");
        Set<String> paths = cache.stream().map(ChildData::getPath).collect(Collectors.toCollection(TreeSet::new));
        check(paths.equals(new TreeSet<>(List.of("/recipes/cache", "/recipes/cache/a", "/recipes/cache/a/deep", "/recipes/cache/b"))),
            "cache holds the tree, got " + paths);
        check(new String(cache.get("/recipes/cache/b").get().getData(), StandardCharsets.UTF_8).equals("b2"), "cache has the new data");
        cache.close();
    }

    static final QueueSerializer<String> STRINGS = new QueueSerializer<String>() {
        public byte[] serialize(String s) { return bytes(s); }
        public String deserialize(byte[] b) { return new String(b, StandardCharsets.UTF_8); }
    };

    /** DistributedQueue: 20 items put by one client reach another's consumer once each, in order. */
    static void queue() throws Exception {
        CuratorFramework producer = client(), consumerClient = client();
        List<String> got = Collections.synchronizedList(new ArrayList<>());
        QueueConsumer<String> consumer = new QueueConsumer<String>() {
            public void consumeMessage(String m) { got.add(m); }
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        DistributedQueue<String> in = QueueBuilder.builder(consumerClient, consumer, STRINGS, "/recipes/queue").buildQueue();
        in.start();
        DistributedQueue<String> out = QueueBuilder.builder(producer, null, STRINGS, "/recipes/queue").buildQueue();
        out.start();
        List<String> sent = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            sent.add("item-" + i);
            out.put("item-" + i);
        }
        await(() -> got.size() >= 20, "20 items consumed (got " + got.size() + ")");
        Thread.sleep(200);
        check(got.equals(sent), "each item once, in order: " + got);
        out.close();
        in.close();
    }

    /** SimpleDistributedQueue (ZooKeeper's own recipe): FIFO across clients. */
    static void simpleQueue() throws Exception {
        SimpleDistributedQueue a = new SimpleDistributedQueue(client(), "/recipes/simple-queue");
        SimpleDistributedQueue b = new SimpleDistributedQueue(client(), "/recipes/simple-queue");
        for (int i = 0; i < 5; i++) {
            check(a.offer(bytes("m" + i)), "offered");
        }
        for (int i = 0; i < 5; i++) {
            byte[] m = b.poll(BOUND_S, TimeUnit.SECONDS);
            check(m != null && new String(m, StandardCharsets.UTF_8).equals("m" + i), "m" + i + " next");
        }
        check(b.poll() == null, "queue empty");
    }

    /** DistributedBarrier: a waiter on another client is held until the barrier is removed. */
    static void barrier() throws Exception {
        DistributedBarrier setter = new DistributedBarrier(client(), "/recipes/barrier");
        DistributedBarrier waiter = new DistributedBarrier(client(), "/recipes/barrier");
        setter.setBarrier();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        Future<Boolean> passed = pool.submit(() -> waiter.waitOnBarrier(BOUND_S, TimeUnit.SECONDS));
        Thread.sleep(500);
        check(!passed.isDone(), "waiter held while the barrier stands");
        setter.removeBarrier();
        check(passed.get(BOUND_S, TimeUnit.SECONDS), "waiter released");
        pool.shutdown();
    }

    /** DistributedDoubleBarrier of three: all enter together, all leave together. */
    static void doubleBarrier() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(3);
        List<Future<Boolean>> fs = new ArrayList<>();
        AtomicInteger entered = new AtomicInteger();
        for (int i = 0; i < 3; i++) {
            DistributedDoubleBarrier b = new DistributedDoubleBarrier(client(), "/recipes/double-barrier", 3);
            fs.add(pool.submit(() -> {
                boolean in = b.enter(BOUND_S, TimeUnit.SECONDS);
                int n = entered.incrementAndGet();
                return in && b.leave(BOUND_S, TimeUnit.SECONDS) && n <= 3;
            }));
        }
        for (Future<Boolean> f : fs) {
            check(f.get(BOUND_S * 2, TimeUnit.SECONDS), "entered and left");
        }
        pool.shutdown();
    }

    /** A TTL node lives while touched and is collected after its TTL once idle. */
    static void ttlNode() throws Exception {
        CuratorFramework c = client();
        c.create().creatingParentsIfNeeded().forPath("/recipes/ttl-parent");
        c.create().withTtl(1500).withMode(CreateMode.PERSISTENT_WITH_TTL).forPath("/recipes/ttl-parent/t", bytes("x"));
        check(c.checkExists().forPath("/recipes/ttl-parent/t") != null, "TTL node exists");
        await(() -> {
            try {
                return c.checkExists().forPath("/recipes/ttl-parent/t") == null;
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "TTL node collected");
    }

    /**
     * A client cut off by a proxy long enough for its session to expire on the server: Curator
     * reports LOST, the server deletes its ephemeral and frees its lock for another client, and
     * once the proxy lets it through again the client carries on with a new session.
     */
    static void sessionExpiry() throws Exception {
        try (CutProxy proxy = new CutProxy(connect)) {
            CuratorFramework other = client();
            CuratorFramework victim = client(proxy.address(), 4_000);
            List<ConnectionState> states = new CopyOnWriteArrayList<>();
            victim.getConnectionStateListenable().addListener((c, s) -> states.add(s));
            long before = victim.getZookeeperClient().getZooKeeper().getSessionId();
            victim.create().creatingParentsIfNeeded().withMode(CreateMode.EPHEMERAL).forPath("/recipes/expiry/eph");
            InterProcessMutex held = new InterProcessMutex(victim, "/recipes/expiry/lock");
            check(held.acquire(BOUND_S, TimeUnit.SECONDS), "victim holds the lock");
            check(other.checkExists().forPath("/recipes/expiry/eph") != null, "ephemeral visible to others");

            proxy.cut();
            await(() -> states.contains(ConnectionState.LOST), "Curator reports LOST (states " + states + ")");
            await(() -> {
                try {
                    return other.checkExists().forPath("/recipes/expiry/eph") == null;
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "the server deletes the expired session's ephemeral");
            InterProcessMutex taker = new InterProcessMutex(other, "/recipes/expiry/lock");
            check(taker.acquire(BOUND_S, TimeUnit.SECONDS), "another client gets the expired holder's lock");
            taker.release();

            proxy.restore();
            await(() -> states.contains(ConnectionState.RECONNECTED), "Curator reconnects (states " + states + ")");
            victim.create().withMode(CreateMode.EPHEMERAL).forPath("/recipes/expiry/again");
            long after = victim.getZookeeperClient().getZooKeeper().getSessionId();
            check(after != before, "a new session after expiry");
        }
    }
}
