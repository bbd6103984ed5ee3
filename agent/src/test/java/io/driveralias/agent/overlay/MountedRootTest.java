package io.driveralias.agent.overlay;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.mount.MountEntry;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which mount at a container's MergedDir is that container's own root. */
class MountedRootTest {

    private static final String HOME = "/var/lib/docker/overlay2/";
    private static final String MERGED = HOME + "abc/merged";
    private static final String UPPER = HOME + "abc/diff";

    private static MountEntry mount(String type, String point, String superOptions) {
        return new MountEntry(700, 30, 0, 90, "/", point, "rw,relatime", List.of(), type, "overlay", superOptions);
    }

    @Test
    void theContainersOwnOverlayIsItsRoot() {
        assertThat(MountedRoot.matches(mount("overlay", MERGED,
                "rw,lowerdir=" + HOME + "l/X:" + HOME + "l/Y,upperdir=" + UPPER + ",workdir=" + HOME + "abc/work"),
                MERGED, UPPER)).isTrue();
        // Docker writes the layers relative to its overlay2 directory when they would not fit a page.
        assertThat(MountedRoot.matches(mount("overlay", MERGED, "rw,lowerdir=l/X:l/Y,upperdir=abc/diff,workdir=abc/work"),
                MERGED, UPPER)).isTrue();
    }

    @Test
    void anyOtherMountAtThatPathIsNot() {
        assertThat(MountedRoot.matches(mount("overlay", MERGED, "rw,lowerdir=l/X,upperdir=" + HOME + "other/diff"),
                MERGED, UPPER)).as("another container's layer").isFalse();
        assertThat(MountedRoot.matches(mount("overlay", MERGED, "rw,lowerdir=l/X,upperdir=other/diff"),
                MERGED, UPPER)).isFalse();
        assertThat(MountedRoot.matches(mount("overlay", MERGED, "rw,lowerdir=l/X,upperdir=../abc/diff"),
                MERGED, UPPER)).isFalse();
        assertThat(MountedRoot.matches(mount("overlay", MERGED, "rw,lowerdir=l/X,upperdir="), MERGED, UPPER)).isFalse();
        assertThat(MountedRoot.matches(mount("tmpfs", MERGED, "rw,upperdir=" + UPPER), MERGED, UPPER))
                .as("not an overlay").isFalse();
        assertThat(MountedRoot.matches(mount("overlay", HOME + "abc/merged/sub", "rw,upperdir=" + UPPER), MERGED, UPPER))
                .as("mounted elsewhere").isFalse();
        assertThat(MountedRoot.matches(mount("overlay", MERGED, "rw,lowerdir=" + UPPER + ",upperdir=" + HOME + "x/diff"),
                MERGED, UPPER)).as("its layer only as a lower one").isFalse();
    }
}
