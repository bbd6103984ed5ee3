package io.driveralias.agent.grpc;

/**
 * A server-streaming call's answers, read one at a time by one thread; {@link #close()} from any
 * thread cancels the call and ends a waiting {@link #next}.
 */
public final class ServerStream<R> implements AutoCloseable {

    private final H2Connection connection;
    private final GrpcStream stream;
    private final GrpcMethod<?, R> method;
    private final int[] credit = new int[1];

    ServerStream(H2Connection connection, GrpcStream stream, GrpcMethod<?, R> method) {
        this.connection = connection;
        this.stream = stream;
        this.method = method;
    }

    /**
     * The next message, waiting up to {@code timeoutNanos}: null if none came by then. The end of
     * the call is a {@link GrpcException}, with code OK for one that ended well, after the messages
     * before it.
     */
    public R next(long timeoutNanos) throws GrpcException, InterruptedException {
        long deadline = System.nanoTime() + Math.min(timeoutNanos, Long.MAX_VALUE / 4);
        credit[0] = 0;
        byte[] message = stream.take(deadline, credit);
        if (credit[0] > 0) {
            connection.grant(stream, credit[0]);
        }
        if (message == null) {
            return null;
        }
        if (message == GrpcStream.END) {
            throw new GrpcException(GrpcException.Code.OK, "the server ended the stream", null);
        }
        return GrpcClient.read(method, message);
    }

    @Override
    public void close() {
        connection.cancel(stream, new GrpcException(GrpcException.Code.CANCELLED, "closed by the client", null));
    }
}
