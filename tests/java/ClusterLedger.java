/*
 * Apache ZooKeeper's Java client writing a ledger to a 3-node cluster while the test kills and
 * restarts the leader in a loop (tests/tests/cluster_clients.rs, through tests/src/ledger.rs).
 * The same protocol as tests/kazoo/cluster_ledger.py:
 *
 *   start session=0x..                     once connected, the ephemeral /ledger-eph-<session> made
 *   acked N                                after every write
 *   state S session=0x..                   every connection state the client reports
 *   final session=0x.. acked=N retries=R   after "stop" on stdin
 *   ack PATH DATA                          one per acknowledged write
 *   mark N                                 echoed when "mark N" arrives on stdin
 *   ready                                  the session is still open; "close" on stdin ends it
 *   ok
 *
 * Each create of /ledger/w-NNNNNN ("vN") is retried through connection loss, timeouts and a
 * moved session until its outcome is known: OK, or NODEEXISTS after an earlier attempt whose
 * reply was lost (that attempt applied it). The servers are tried in the connect string's
 * order (the test orders them from its seed), not shuffled as the stock client does.
 *
 * Usage: ClusterLedger CONNECT_STRING
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public final class ClusterLedger {
    static ZooKeeper zk;
    static int retries;
    static volatile boolean stop;
    static final CountDownLatch close = new CountDownLatch(1);

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Creates path; returns once it is known applied. Anything but a lost outcome throws. */
    static void create(String path, byte[] data, CreateMode mode) throws Exception {
        int attempts = 0;
        while (true) {
            attempts++;
            try {
                zk.create(path, data, ZooDefs.Ids.OPEN_ACL_UNSAFE, mode);
                return;
            } catch (KeeperException.NodeExistsException e) {
                if (attempts == 1) {
                    throw e;
                }
                return; // an earlier attempt whose reply was lost did apply it
            } catch (KeeperException.ConnectionLossException
                    | KeeperException.OperationTimeoutException
                    | KeeperException.SessionMovedException e) {
                retries++;
            }
            Thread.sleep(50);
        }
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        CountDownLatch up = new CountDownLatch(1);
        Watcher w = e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                long id = zk == null ? 0 : zk.getSessionId();
                say("state " + e.getState() + " session=0x" + Long.toHexString(id));
                if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    up.countDown();
                }
            }
        };
        zk = new ZooKeeper(connect, 10000, w, false, new InOrderHosts(connect));
        if (!up.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection to " + connect + " within 30 s");
        }
        try {
            create("/ledger", new byte[0], CreateMode.PERSISTENT);
        } catch (KeeperException.NodeExistsException e) {
            // another client's run made it
        }
        long session = zk.getSessionId();
        create("/ledger-eph-" + Long.toHexString(session), "mine".getBytes(StandardCharsets.UTF_8), CreateMode.EPHEMERAL);
        say("start session=0x" + Long.toHexString(session));
        Thread in = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.startsWith("mark ")) {
                        say(line.trim()); // everything printed before this was printed before the test's step
                    } else if (line.trim().equals("stop")) {
                        stop = true;
                    } else if (line.trim().equals("close")) {
                        break;
                    }
                }
            } catch (Exception e) {
                // end of input: stop and close
            }
            stop = true;
            close.countDown();
        });
        in.setDaemon(true);
        in.start();
        List<String> ledger = new ArrayList<>();
        while (!stop) {
            int n = ledger.size() + 1;
            String path = String.format("/ledger/w-%06d", n);
            String data = "v" + n;
            create(path, data.getBytes(StandardCharsets.UTF_8), CreateMode.PERSISTENT);
            ledger.add(path + " " + data);
            say("acked " + n);
        }
        say("final session=0x" + Long.toHexString(zk.getSessionId()) + " acked=" + ledger.size() + " retries=" + retries);
        for (String l : ledger) {
            say("ack " + l);
        }
        say("ready");
        close.await();
        zk.close();
        say("ok");
    }
}
