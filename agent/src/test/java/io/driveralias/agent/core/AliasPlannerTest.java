package io.driveralias.agent.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

class AliasPlannerTest {

    private static final String DIR = "/usr/lib/x86_64-linux-gnu";
    private static final DriverLibrary CUDA = new DriverLibrary(DIR, "libcuda.so.535.104.05", "libcuda.so.1");

    /** One row: what is at libcuda.so.1 now, and what the planner must decide. */
    static Stream<Arguments> aliasCases() {
        return Stream.of(
                Arguments.of("nothing there", null, ActionKind.CREATE, "missing"),
                Arguments.of("right relative link", DirEntry.symlink("libcuda.so.1", "libcuda.so.535.104.05"),
                        ActionKind.KEEP, ""),
                Arguments.of("right link with ./", DirEntry.symlink("libcuda.so.1", "./libcuda.so.535.104.05"),
                        ActionKind.KEEP, ""),
                Arguments.of("right absolute link", DirEntry.symlink("libcuda.so.1", DIR + "/libcuda.so.535.104.05"),
                        ActionKind.KEEP, ""),
                Arguments.of("stale link to an older driver that is still there",
                        DirEntry.symlink("libcuda.so.1", "libcuda.so.470.199.02"), ActionKind.REPLACE,
                        "points to libcuda.so.470.199.02"),
                Arguments.of("dangling link", DirEntry.symlink("libcuda.so.1", "libcuda.so.418.87.01"),
                        ActionKind.REPLACE, "dangling: libcuda.so.418.87.01"),
                Arguments.of("absolute link to an older driver in the same directory",
                        DirEntry.symlink("libcuda.so.1", DIR + "/libcuda.so.470.199.02"), ActionKind.REPLACE,
                        "points to " + DIR + "/libcuda.so.470.199.02"),
                Arguments.of("link out of the root: not ours", DirEntry.symlink("libcuda.so.1", "/host/etc/shadow"),
                        ActionKind.CONFLICT,
                        "a link the agent did not make holds the alias name (points to /host/etc/shadow)"),
                Arguments.of("CUDA forward compatibility chosen by the image",
                        DirEntry.symlink("libcuda.so.1", "/usr/local/cuda/compat/libcuda.so.1"), ActionKind.CONFLICT,
                        "a link the agent did not make holds the alias name"
                                + " (points to /usr/local/cuda/compat/libcuda.so.1)"),
                Arguments.of("a link to another library that exists here",
                        DirEntry.symlink("libcuda.so.1", "libc.so.6"), ActionKind.CONFLICT,
                        "a link the agent did not make holds the alias name (points to libc.so.6)"),
                Arguments.of("a relative link through another directory",
                        DirEntry.symlink("libcuda.so.1", "../lib64/libcuda.so.470.199.02"), ActionKind.CONFLICT,
                        "a link the agent did not make holds the alias name (points to ../lib64/libcuda.so.470.199.02)"),
                Arguments.of("a link to the image's own versioned file that is not a driver version",
                        DirEntry.symlink("libcuda.so.1", "libcuda.so.1.1"), ActionKind.CONFLICT,
                        "a link the agent did not make holds the alias name (points to libcuda.so.1.1)"),
                Arguments.of("a link to itself", DirEntry.symlink("libcuda.so.1", "libcuda.so.1"),
                        ActionKind.REPLACE, "dangling: libcuda.so.1"),
                Arguments.of("the image ships its own copy", DirEntry.file("libcuda.so.1"), ActionKind.CONFLICT,
                        "a regular file holds the alias name"),
                Arguments.of("a directory at the alias", DirEntry.directory("libcuda.so.1"), ActionKind.CONFLICT,
                        "a directory holds the alias name"),
                Arguments.of("a FIFO at the alias", DirEntry.other("libcuda.so.1"), ActionKind.CONFLICT,
                        "a special file holds the alias name"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("aliasCases")
    void decidesWhatToDoAtTheAliasName(String description, DirEntry atAlias, ActionKind expected, String detail) {
        List<DirEntry> listing = new ArrayList<>(List.of(
                DirEntry.file("libcuda.so.535.104.05"), DirEntry.file("libcuda.so.470.199.02"),
                DirEntry.file("libc.so.6"), DirEntry.file("libcuda.so.1.1")));
        if (atAlias != null) {
            listing.add(atAlias);
        }

        List<LinkAction> plan = new AliasPlanner(false).plan(DIR, List.of(CUDA), DirectoryListing.of(listing));

        assertThat(plan).containsExactly(
                new LinkAction(expected, DIR, "libcuda.so.1", "libcuda.so.535.104.05", detail));
    }

    @Test
    void anImagesOwnLibraryLinkIsNeverReplacedEvenIfAFileClaimsItsName() {
        // A file named like a driver file of the image's libz: were it ever taken for the
        // driver's, the image's own libz.so.1 -> libz.so.1.2.13 must still stand.
        DriverLibrary fake = new DriverLibrary(DIR, "libz.so.535.104.05", "libz.so.1");

        List<LinkAction> plan = new AliasPlanner(false).plan(DIR, List.of(fake), DirectoryListing.of(List.of(
                DirEntry.file("libz.so.535.104.05"), DirEntry.file("libz.so.1.2.13"),
                DirEntry.symlink("libz.so.1", "libz.so.1.2.13"))));

        assertThat(plan).extracting(LinkAction::kind).containsExactly(ActionKind.CONFLICT);
    }

    @Test
    void skipsALibraryWhoseSonameIsItsFileName() {
        DriverLibrary internal = new DriverLibrary(DIR, "libnvidia-glcore.so.535.104.05", "libnvidia-glcore.so.535.104.05");

        List<LinkAction> plan = new AliasPlanner(true).plan(DIR, List.of(internal),
                DirectoryListing.of(List.of(DirEntry.file(internal.fileName()))));

        assertThat(plan).extracting(LinkAction::kind).containsExactly(ActionKind.SKIP);
    }

    @Test
    void readsEachSonameRatherThanAssumingDotOne() {
        List<DriverLibrary> libs = List.of(
                new DriverLibrary(DIR, "libnvidia-nvvm.so.535.104.05", "libnvidia-nvvm.so.4"),
                new DriverLibrary(DIR, "libGLX_nvidia.so.535.104.05", "libGLX_nvidia.so.0"),
                new DriverLibrary(DIR, "libGLESv2_nvidia.so.535.104.05", "libGLESv2_nvidia.so.2"));

        List<LinkAction> plan = new AliasPlanner(false).plan(DIR, libs, DirectoryListing.of(List.of()));

        assertThat(plan).extracting(LinkAction::name, LinkAction::target).containsExactlyInAnyOrder(
                org.assertj.core.groups.Tuple.tuple("libnvidia-nvvm.so.4", "libnvidia-nvvm.so.535.104.05"),
                org.assertj.core.groups.Tuple.tuple("libGLX_nvidia.so.0", "libGLX_nvidia.so.535.104.05"),
                org.assertj.core.groups.Tuple.tuple("libGLESv2_nvidia.so.2", "libGLESv2_nvidia.so.535.104.05"));
        assertThat(plan).extracting(LinkAction::kind).containsOnly(ActionKind.CREATE);
    }

    @Test
    void twoDriverVersionsSideBySideAliasTheRequestedOneOnly() {
        // The image carries 470 with its aliases; 535 was injected. Only 535's files are libraries.
        DriverLibrary ml535 = new DriverLibrary(DIR, "libnvidia-ml.so.535.104.05", "libnvidia-ml.so.1");
        DirectoryListing listing = DirectoryListing.of(List.of(
                DirEntry.file("libcuda.so.470.199.02"), DirEntry.file("libnvidia-ml.so.470.199.02"),
                DirEntry.symlink("libcuda.so.1", "libcuda.so.470.199.02"),
                DirEntry.symlink("libnvidia-ml.so.1", "libnvidia-ml.so.470.199.02"),
                DirEntry.file("libcuda.so.535.104.05"), DirEntry.file("libnvidia-ml.so.535.104.05")));

        List<LinkAction> plan = new AliasPlanner(false).plan(DIR, List.of(CUDA, ml535), listing);

        assertThat(plan).extracting(LinkAction::kind, LinkAction::name, LinkAction::target).containsExactly(
                org.assertj.core.groups.Tuple.tuple(ActionKind.REPLACE, "libcuda.so.1", "libcuda.so.535.104.05"),
                org.assertj.core.groups.Tuple.tuple(ActionKind.REPLACE, "libnvidia-ml.so.1", "libnvidia-ml.so.535.104.05"));
    }

    @Test
    void anImageWithItsOwnOlderNvmlAsARegularFileIsAConflictNotAnOverwrite() {
        DriverLibrary ml = new DriverLibrary(DIR, "libnvidia-ml.so.535.104.05", "libnvidia-ml.so.1");
        DirectoryListing listing = DirectoryListing.of(List.of(
                DirEntry.file("libnvidia-ml.so.535.104.05"), DirEntry.file("libnvidia-ml.so.1")));

        List<LinkAction> plan = new AliasPlanner(false).plan(DIR, List.of(ml), listing);

        assertThat(plan).singleElement().satisfies(a -> {
            assertThat(a.kind()).isEqualTo(ActionKind.CONFLICT);
            assertThat(a.kind().changesSomething()).isFalse();
        });
    }

    @Test
    void devLinksOnlyWhenAskedAndPointingAtTheSoname() {
        DirectoryListing empty = DirectoryListing.of(List.of());

        assertThat(new AliasPlanner(false).plan(DIR, List.of(CUDA), empty)).hasSize(1);
        List<LinkAction> withDev = new AliasPlanner(true).plan(DIR, List.of(CUDA), empty);

        assertThat(withDev).extracting(LinkAction::name, LinkAction::target).containsExactly(
                org.assertj.core.groups.Tuple.tuple("libcuda.so.1", "libcuda.so.535.104.05"),
                org.assertj.core.groups.Tuple.tuple("libcuda.so", "libcuda.so.1"));
    }

    @Test
    void devLinkOverARegularFileIsAConflictAndARightOneIsKept() {
        DriverLibrary ml = new DriverLibrary(DIR, "libnvidia-ml.so.535.104.05", "libnvidia-ml.so.1");
        DirectoryListing listing = DirectoryListing.of(List.of(
                DirEntry.file("libcuda.so"), DirEntry.symlink("libnvidia-ml.so", "libnvidia-ml.so.1")));

        List<LinkAction> plan = new AliasPlanner(true).plan(DIR, List.of(CUDA, ml), listing);

        assertThat(plan).filteredOn(a -> a.name().endsWith(".so")).extracting(LinkAction::name, LinkAction::kind)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("libcuda.so", ActionKind.CONFLICT),
                        org.assertj.core.groups.Tuple.tuple("libnvidia-ml.so", ActionKind.KEEP));
    }

    @Test
    void aFileMayOnlyNameAnAliasOfItsOwnLibrary() {
        // A hostile image ships a "driver file" whose SONAME is the loader's or libc's name.
        DriverLibrary loader = new DriverLibrary(DIR, "libnvidia-evil.so.535.104.05", "ld-linux-x86-64.so.2");
        DriverLibrary libc = new DriverLibrary(DIR, "libnvidia-a.so.535.104.05", "libc.so.6");
        DirectoryListing listing = DirectoryListing.of(List.of(
                DirEntry.symlink("ld-linux-x86-64.so.2", "x86_64-linux-gnu/ld-linux-x86-64.so.2")));

        List<LinkAction> plan = new AliasPlanner(true).plan(DIR, List.of(loader, libc), listing);

        assertThat(plan).extracting(LinkAction::kind, LinkAction::detail).containsOnly(
                org.assertj.core.groups.Tuple.tuple(ActionKind.SKIP, "SONAME names another library"));
    }

    @Test
    void twoFilesClaimingOneDevLinkConflictInsteadOfFlapping() {
        DriverLibrary a = new DriverLibrary(DIR, "libnvidia-x.so.535.104.05", "libnvidia-x.so.1");
        DriverLibrary b = new DriverLibrary(DIR, "libnvidia-x.so.2.535.104.05", "libnvidia-x.so.2");

        List<LinkAction> plan = new AliasPlanner(true).plan(DIR, List.of(b, a), DirectoryListing.of(List.of()));

        assertThat(plan).filteredOn(x -> x.name().equals("libnvidia-x.so")).extracting(LinkAction::kind)
                .containsExactly(ActionKind.CREATE, ActionKind.CONFLICT);
    }

    @Test
    void refusesHostileNamesBeforeTheyReachThePlan() {
        assertThatThrownBy(() -> new DriverLibrary(DIR, "libcuda.so.535.104.05", "../../etc/ld.so.preload"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new DriverLibrary(DIR, "libcuda.so.535.104.05", ".."))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aLibraryFromAnotherDirectoryIsAProgrammingError() {
        DriverLibrary elsewhere = new DriverLibrary("/usr/lib64", "libcuda.so.535.104.05", "libcuda.so.1");

        assertThatThrownBy(() -> new AliasPlanner(false).plan(DIR, List.of(elsewhere), DirectoryListing.of(List.of())))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
