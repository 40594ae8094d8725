package io.testkeeper;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5: one testkeeper process per test class, reset before each test, injected as a
 * {@link TestKeeperServer} parameter.
 *
 * <pre>
 * &#64;ExtendWith(TestKeeperExtension.class)                 // keeper flavor
 * class MyTest {
 *     &#64;Test void works(TestKeeperServer tk) { ... tk.connectString() ... }
 * }
 * // or, to choose the flavor:
 * &#64;RegisterExtension static TestKeeperExtension tk = TestKeeperExtension.flavor("zookeeper");
 * </pre>
 */
public final class TestKeeperExtension implements BeforeAllCallback, BeforeEachCallback, ParameterResolver {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(TestKeeperExtension.class);

    private final String flavor;

    /** The keeper flavor (for {@code @ExtendWith}). */
    public TestKeeperExtension() {
        this("keeper");
    }

    private TestKeeperExtension(String flavor) {
        this.flavor = flavor;
    }

    /** An extension whose server imitates {@code flavor} ("keeper" or "zookeeper"). */
    public static TestKeeperExtension flavor(String flavor) {
        return new TestKeeperExtension(flavor);
    }

    /** Closed by JUnit with the class's store. */
    private static final class Held implements ExtensionContext.Store.CloseableResource {
        final TestKeeperServer server;

        Held(TestKeeperServer server) {
            this.server = server;
        }

        @Override
        public void close() {
            server.close();
        }
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        context.getStore(NS).put("server", new Held(TestKeeperServer.start(flavor)));
    }

    private static TestKeeperServer server(ExtensionContext context) {
        Held held = context.getStore(NS).get("server", Held.class);
        if (held == null) {
            throw new IllegalStateException("TestKeeperExtension: no server (register the extension on the class)");
        }
        return held.server;
    }

    @Override
    public void beforeEach(ExtensionContext context) throws Exception {
        server(context).reset();
    }

    @Override
    public boolean supportsParameter(ParameterContext p, ExtensionContext e) throws ParameterResolutionException {
        return p.getParameter().getType() == TestKeeperServer.class;
    }

    @Override
    public Object resolveParameter(ParameterContext p, ExtensionContext e) throws ParameterResolutionException {
        return server(e);
    }
}
