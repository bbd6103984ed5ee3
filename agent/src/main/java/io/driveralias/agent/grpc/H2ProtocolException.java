package io.driveralias.agent.grpc;

import java.io.IOException;

/**
 * What the server sent is not HTTP/2 (RFC 9113, RFC 7541) as the client reads it, or goes over one
 * of its bounds: the one error the codec throws, whatever the input. It ends the connection (the
 * client tells the server why with GOAWAY and connects again for the next call); the calls on it
 * fail as UNAVAILABLE.
 */
public class H2ProtocolException extends IOException {

    static final int NO_ERROR = 0x0;
    static final int PROTOCOL_ERROR = 0x1;
    static final int INTERNAL_ERROR = 0x2;
    static final int FLOW_CONTROL_ERROR = 0x3;
    static final int FRAME_SIZE_ERROR = 0x6;
    static final int REFUSED_STREAM = 0x7;
    static final int CANCEL = 0x8;
    static final int COMPRESSION_ERROR = 0x9;
    static final int ENHANCE_YOUR_CALM = 0xb;
    static final int INADEQUATE_SECURITY = 0xc;

    private final int code;

    H2ProtocolException(int code, String message) {
        super(message);
        this.code = code;
    }

    static H2ProtocolException protocol(String message) {
        return new H2ProtocolException(PROTOCOL_ERROR, message);
    }

    /** HTTP/2's error code for GOAWAY. */
    int code() {
        return code;
    }

    /** The server answered with an HTTP/1.x status line: another API on the socket (Docker's, a web server's). */
    public static final class Http1 extends H2ProtocolException {
        Http1() {
            super(PROTOCOL_ERROR, "the server answers HTTP/1.x, not HTTP/2");
        }
    }
}
