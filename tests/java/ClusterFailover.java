/*
 * Apache ZooKeeper's Java client against a 3-node cluster, across a leader failover
 * (tests/tests/cluster_processes.rs): N creates, then "phase1 ..." on stdout; the test kills the
 * leader and writes "go" on stdin; N more creates through whatever server the client reaches,
 * each retried on connection loss until it is known to be applied; then the children count.
 *
 * The servers are tried in the connect string's order (not shuffled, as the stock client does),
 * so the test can put the leader first and know the client's own server dies.
 *
 * Usage: ClusterFailover CONNECT_STRING N
 * Output: "phase1 session=0x..", "phase2 session=0x.. retries=R", "children=C", "ok".
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public final class ClusterFailover {
    static String connect;
    static ZooKeeper zk;
    static int retries;

    static ZooKeeper open() throws Exception {
        CountDownLatch up = new CountDownLatch(1);
        Watcher w = e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                up.countDown();
            }
        };
        ZooKeeper z = new ZooKeeper(connect, 10000, w, false, new InOrderHosts(connect));
        if (!up.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection to " + connect + " within 30 s");
        }
        return z;
    }

    /** Creates path, retrying until it is known to exist: a lost reply may have applied it. */
    static void create(String path) throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try {
                zk.create(path, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                return;
            } catch (KeeperException.NodeExistsException e) {
                if (retries == 0) {
                    throw e;
                }
                return; // an earlier attempt whose reply was lost did apply it
            } catch (KeeperException.ConnectionLossException | KeeperException.OperationTimeoutException e) {
                retries++;
            } catch (KeeperException.SessionExpiredException e) {
                retries++;
                zk.close();
                zk = open();
            }
            if (System.nanoTime() > until) {
                throw new IllegalStateException("create " + path + " did not succeed within 60 s");
            }
            Thread.sleep(50);
        }
    }

    public static void main(String[] args) throws Exception {
        connect = args[0];
        int n = Integer.parseInt(args[1]);
        zk = open();
        create("/jf");
        for (int i = 0; i < n; i++) {
            create("/jf/a-" + i);
        }
        System.out.println("phase1 session=0x" + Long.toHexString(zk.getSessionId()));
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String go = in.readLine();
        if (!"go".equals(go)) {
            throw new IllegalStateException("expected 'go' on stdin, got " + go);
        }
        for (int i = 0; i < n; i++) {
            create("/jf/b-" + i);
        }
        System.out.println("phase2 session=0x" + Long.toHexString(zk.getSessionId()) + " retries=" + retries);
        System.out.println("children=" + zk.getChildren("/jf", false).size());
        zk.close();
        System.out.println("ok");
    }
}
