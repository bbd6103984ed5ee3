package io.driveralias.agent.mount;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The kernel's octal escapes, and everything that merely looks like one. */
class MountInfoEscapesTest {

    static Stream<Arguments> escapes() {
        return Stream.of(
                Arguments.of("/a\\040b", "/a b"),
                Arguments.of("/a\\011b", "/a\tb"),
                Arguments.of("/a\\012b", "/a\nb"),
                Arguments.of("/a\\134b", "/a\\b"),
                Arguments.of("/\\040\\040", "/  "),
                Arguments.of("/a\\0404", "/a 4"),
                Arguments.of("/a\\134134", "/a\\134"),
                Arguments.of("/a\\000", "/a\0"),
                Arguments.of("/a\\377", "/a\u00ff"),
                Arguments.of("/a\\043", "/a#"),
                // Not a byte escape: kept exactly as written.
                Arguments.of("/a\\400", "/a\\400"),
                Arguments.of("/a\\777", "/a\\777"),
                Arguments.of("/a\\08", "/a\\08"),
                Arguments.of("/a\\12", "/a\\12"),
                Arguments.of("/a\\1", "/a\\1"),
                Arguments.of("/a\\", "/a\\"),
                Arguments.of("/a\\x41", "/a\\x41"),
                Arguments.of("/a\\\\040", "/a\\ "),
                // The kernel leaves carriage returns raw; they are path bytes, not line ends.
                Arguments.of("/a\rb", "/a\rb"));
    }

    @ParameterizedTest
    @MethodSource("escapes")
    void mountPointIsUnescaped(String escaped, String expected) throws Exception {
        MountEntry entry = MountInfoParser.parse(MountInfoParserTest.lineWithMountPoint(escaped)).getFirst();
        assertThat(entry.mountPoint()).isEqualTo(expected);
    }

    @Test
    void rootSourceAndTypeAreUnescapedButOptionsAreNot() throws Exception {
        MountEntry entry = MountInfoParser.parse(
                "1 0 0:1 /r\\040t /m rw,a\\054b - fuse.x\\040y s\\040rc rw,opt=a\\054b\n").getFirst();
        assertThat(entry.root()).isEqualTo("/r t");
        assertThat(entry.fsType()).isEqualTo("fuse.x y");
        assertThat(entry.source()).isEqualTo("s rc");
        assertThat(entry.options()).isEqualTo("rw,a\\054b");
        assertThat(entry.superOptions()).isEqualTo("rw,opt=a\\054b");
    }
}
