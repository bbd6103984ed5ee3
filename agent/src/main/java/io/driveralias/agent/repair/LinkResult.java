package io.driveralias.agent.repair;

import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.core.LinkAction;

/** One link: what was planned and what came of it. {@code reason} is set only when FAILED. */
public record LinkResult(LinkAction action, LinkStatus status, FailureReason reason, String message) {

    static LinkResult of(LinkAction action, LinkStatus status) {
        return new LinkResult(action, status, null, "");
    }

    static LinkResult failed(LinkAction action, FailureReason reason, String message) {
        return new LinkResult(action, LinkStatus.FAILED, reason, message);
    }
}
