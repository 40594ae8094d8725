package io.testkeeper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The extension as a user meets it, with Apache ZooKeeper's own Java client (Debian's). */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class TestKeeperExtensionTest {
    @RegisterExtension
    static TestKeeperExtension extension = TestKeeperExtension.flavor(System.getProperty("testkeeper.flavor", "zookeeper"));

    private static ZooKeeper connect(TestKeeperServer tk, CountDownLatch expired) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(tk.connectString(), 10_000, (WatchedEvent e) -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
            if (e.getState() == Watcher.Event.KeeperState.Expired && expired != null) {
                expired.countDown();
            }
        });
        assertTrue(connected.await(10, TimeUnit.SECONDS), "connected");
        return zk;
    }

    @Test
    @Order(1)
    void createsANode(TestKeeperServer tk) throws Exception {
        ZooKeeper zk = connect(tk, null);
        zk.create("/left-behind", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        assertNotNull(zk.exists("/left-behind", false));
        zk.close();
    }

    @Test
    @Order(2)
    void eachTestStartsEmpty(TestKeeperServer tk) throws Exception {
        ZooKeeper zk = connect(tk, null);
        assertNull(zk.exists("/left-behind", false), "reset before each test");
        assertEquals(1, tk.sessionIds().size());
        zk.close();
    }

    @Test
    @Order(3)
    void sessionExpiredOverHttp(TestKeeperServer tk) throws Exception {
        CountDownLatch expired = new CountDownLatch(1);
        ZooKeeper zk = connect(tk, expired);
        zk.create("/lock", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
        tk.expireSession(zk.getSessionId());
        tk.awaitLog(10_000, "session expired", "0x" + Long.toHexString(zk.getSessionId()));
        if (System.getProperty("testkeeper.flavor", "zookeeper").equals("zookeeper")) {
            assertTrue(expired.await(15, TimeUnit.SECONDS), "the client saw Expired");
        }
        zk.close();
        ZooKeeper other = connect(tk, null);
        assertNull(other.exists("/lock", false), "the ephemeral went with its session");
        other.close();
    }

    @Test
    @Order(4)
    void faultsFromJava(TestKeeperServer tk) throws Exception {
        ZooKeeper zk = connect(tk, null);
        zk.create("/f", "1".getBytes(), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        long id = tk.addFault("error:code=NONODE,op=getData,path=/f,count=1");
        assertThrows(KeeperException.NoNodeException.class, () -> zk.getData("/f", false, null));
        String events = tk.eventsJson();
        assertTrue(events.contains("\"rule\":" + id) && events.contains("\"op\":\"getData\""), events);
        assertEquals("1", new String(zk.getData("/f", false, null)));
        TestKeeperServer.AdminException bad = assertThrows(TestKeeperServer.AdminException.class,
                () -> tk.addFault("drop-everything"));
        assertEquals(400, bad.status);
        zk.close();
    }
}
