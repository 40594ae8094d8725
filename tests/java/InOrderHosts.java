/*
 * A HostProvider that tries the connect string's servers in order (not shuffled, as the stock
 * client does), round and round, pausing after a full turn, so a cluster test can put the leader
 * first and know the client's own server dies. Shared by ClusterLedger and ClusterFailover.
 */

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import org.apache.zookeeper.client.HostProvider;

final class InOrderHosts implements HostProvider {
    private final List<InetSocketAddress> hosts = new ArrayList<>();
    private int next;

    InOrderHosts(String connect) {
        for (String hp : connect.split(",")) {
            int colon = hp.lastIndexOf(':');
            hosts.add(new InetSocketAddress(hp.substring(0, colon), Integer.parseInt(hp.substring(colon + 1))));
        }
    }

    @Override
    public int size() {
        return hosts.size();
    }

    @Override
    public InetSocketAddress next(long spinDelay) {
        if (next > 0 && next % hosts.size() == 0 && spinDelay > 0) {
            try {
                Thread.sleep(spinDelay);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return hosts.get(next++ % hosts.size());
    }

    @Override
    public void onConnected() {}

    @Override
    public boolean updateServerList(Collection<InetSocketAddress> servers, InetSocketAddress current) {
        return false;
    }
}
