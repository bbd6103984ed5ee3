package io.driveralias.agent.nri;

import java.io.IOException;

/**
 * What the runtime sent is not NRI as the plugin speaks it: a frame or message over its bound, a
 * malformed field, an unexpected stream. The one error the codec throws, whatever the input; the
 * connection that carried it is closed and made again.
 */
public final class NriProtocolException extends IOException {

    public NriProtocolException(String message) {
        super(message);
    }
}
