// `testkeeper bench --cluster`'s Curator side: starts Curator's TestingCluster(3) (three
// in-process ZooKeeper 3.8 quorum peers on free ports, Debian's libcurator-test-java) N times
// and prints, for each, the milliseconds from the constructor to the first server whose `srvr`
// says "Mode: leader" (polled every millisecond), as "start_to_leader_ms MS". The bench writes
// this file out and runs it with `java -cp ... ClusterStart.java N`.

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;

public class ClusterStart {
    static String srvr(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
            s.setSoTimeout(1000);
            s.getOutputStream().write("srvr".getBytes(StandardCharsets.US_ASCII));
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            return "";
        }
    }

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        for (int r = 0; r < n; r++) {
            long t0 = System.nanoTime();
            TestingCluster c = new TestingCluster(3);
            c.start();
            boolean leader = false;
            long limit = t0 + 60_000_000_000L;
            while (!leader && System.nanoTime() < limit) {
                for (InstanceSpec i : c.getInstances()) {
                    leader |= srvr(i.getPort()).contains("Mode: leader");
                }
                if (!leader) {
                    Thread.sleep(1);
                }
            }
            long t1 = System.nanoTime();
            if (!leader) {
                System.err.println("no leader within 60 s");
                System.exit(1);
            }
            System.out.println("start_to_leader_ms " + (t1 - t0) / 1e6);
            System.out.flush();
            c.close();
        }
        // TestingCluster leaves non-daemon threads behind; do not wait for them.
        System.exit(0);
    }
}
