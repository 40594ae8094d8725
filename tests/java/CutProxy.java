/*
 * A TCP forwarder for CuratorRecipes' session-expiry recipe: it can drop every proxied
 * connection and refuse new ones, so the client is cut off from the server (which then expires
 * the session) while both stay up.
 */

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** A TCP forwarder to the server that can cut every connection and refuse new ones. */
final class CutProxy implements AutoCloseable {
    final ServerSocket listen = new ServerSocket();
    final String target;
    final List<Socket> open = new CopyOnWriteArrayList<>();
    volatile boolean cut;

    CutProxy(String target) throws IOException {
        this.target = target;
        listen.bind(new InetSocketAddress("127.0.0.1", 0));
        Thread t = new Thread(this::acceptLoop, "proxy-accept");
        t.setDaemon(true);
        t.start();
    }

    String address() {
        return "127.0.0.1:" + listen.getLocalPort();
    }

    void acceptLoop() {
        while (!listen.isClosed()) {
            try {
                Socket client = listen.accept();
                if (cut) {
                    client.close();
                    continue;
                }
                String[] hp = target.split(":");
                Socket server = new Socket(hp[0], Integer.parseInt(hp[1]));
                open.add(client);
                open.add(server);
                pump(client, server);
                pump(server, client);
            } catch (IOException e) {
                // closed, or the server is gone: the client sees a connection loss
            }
        }
    }

    void pump(Socket from, Socket to) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[65536];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                for (int n; (n = in.read(buf)) > 0; ) {
                    out.write(buf, 0, n);
                }
            } catch (IOException e) {
                // one side closed
            }
            closeQuietly(from);
            closeQuietly(to);
        }, "proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    /** Drops every proxied connection and refuses new ones until restore(). */
    void cut() {
        cut = true;
        for (Socket s : open) {
            closeQuietly(s);
        }
        open.clear();
    }

    void restore() {
        cut = false;
    }

    static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // already closed
        }
    }

    public void close() throws IOException {
        cut();
        listen.close();
    }
}
