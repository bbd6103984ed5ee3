package io.driveralias.agent.testing;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;

/**
 * A unit test class whose assertions bound latencies of a second or less (a probe answered within
 * a second while a flood runs, a handshake turn within 100 ms, a refusal within 150 ms). The
 * build runs the other unit test classes two JVMs at a time and these alone, after them
 * (surefire's {@code timing} execution): their bounds are about the code under test, not about a
 * second JVM of the build competing for the same two cores.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Tag("timing")
public @interface Timing {
}
