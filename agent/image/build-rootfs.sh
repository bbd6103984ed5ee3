#!/usr/bin/env bash
# Builds the agent's container image without a registry or base image: the runtime is jlinked
# from the local JDK, the shared libraries it needs are copied from this machine, and the tree
# is loaded into the local Docker with `docker import`. The result runs like agent/Dockerfile's,
# which runs this script (with --no-import) to make its own tree.
#
#   agent/image/build-rootfs.sh [--rootfs DIR] [--jar JAR] [--tag IMAGE] [--no-import]
#
#   --rootfs DIR   where to build the tree (default agent/target/image-rootfs; emptied first)
#   --jar JAR      the shaded agent jar (default agent/target/driver-alias-agent.jar, from
#                  `mvn -B -pl agent package -DskipTests`)
#   --tag IMAGE    the image to create (default driver-alias-agent:VERSION, VERSION being the jar's
#                  own, e.g. driver-alias-agent:0.2.0: what k8s/ of the same checkout deploys)
#   --no-import    build and check the tree only; Docker is not needed then
#
# JAVA_HOME picks the JDK (default /usr/lib/jvm/temurin-25-jdk-amd64). This machine's glibc goes
# into the image, so it must be 2.30 or newer (the agent calls statx, renameat2, getdents64 and
# openat through it). As root, the tree is checked with chroot before it is imported.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
agent=$(dirname "$here")
rootfs=$agent/target/image-rootfs
jar=$agent/target/driver-alias-agent.jar
tag=
import=true
while (($#)); do
    case $1 in
        --rootfs) rootfs=${2:?}; shift 2 ;;
        --jar) jar=${2:?}; shift 2 ;;
        --tag) tag=${2:?}; shift 2 ;;
        --no-import) import=false; shift ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "build-rootfs.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}

# agent/Dockerfile's ENTRYPOINT (ContainerImageTest keeps them equal): the JVM's options come from
# jvm.options beside this script, installed next to the jar.
ENTRYPOINT='["/opt/java/bin/java", "@/opt/driver-alias-agent/jvm.options", "-jar", "/opt/driver-alias-agent/driver-alias-agent.jar"]'
CMD='["run"]'

die() { echo "build-rootfs.sh: $*" >&2; exit 1; }

[[ -f $jar ]] || die "no agent jar at $jar: run mvn -B -pl agent package -DskipTests first"
jar=$(cd "$(dirname "$jar")" && pwd)/$(basename "$jar")
[[ -x $JAVA_HOME/bin/jlink ]] || die "no jlink in JAVA_HOME=$JAVA_HOME"
glibc=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
[[ $(printf '%s\n' 2.30 "$glibc" | sort -V | head -1) == 2.30 ]] || die "glibc $glibc is older than 2.30"
case $rootfs in
    /|"") die "refusing to use '$rootfs' as the image tree" ;;
esac

rm -rf "$rootfs"
mkdir -p "$rootfs"
rootfs=$(cd "$rootfs" && pwd)

echo "build-rootfs.sh: linking the Java runtime"
"$here/jlink-runtime.sh" "$rootfs/opt/java"
install -D -m 0644 "$jar" "$rootfs/opt/driver-alias-agent/driver-alias-agent.jar"
install -D -m 0644 "$here/jvm.options" "$rootfs/opt/driver-alias-agent/jvm.options"

# Every library the runtime's executables and libraries load, and the dynamic loader, copied
# to the same path as here (links resolved). libjvm.so and its siblings come with the runtime.
copy_library() {
    local path=$1
    [[ -e $rootfs$path ]] && return
    mkdir -p "$rootfs$(dirname "$path")"
    cp -L "$path" "$rootfs$path"
}
mapfile -t objects < <(find "$rootfs/opt/java" -type f \( -name '*.so' -o -perm -u+x \) )
for object in "${objects[@]}"; do
    [[ $(od -An -c -N4 "$object" | tr -d ' ') == '177ELF' ]] || continue
    while read -r line; do
        case $line in
            *"=> not found"*)
                name=${line%% *}
                [[ -n $(find "$rootfs/opt/java" -name "$name" -print -quit) ]] \
                    || die "$object needs $name, which this machine does not have"
                ;;
            *"=> /"*)
                path=${line#*=> }
                copy_library "${path%% (*}"
                ;;
            /*)
                copy_library "${line%% (*}"
                ;;
        esac
    done < <(ldd "$object" 2>/dev/null || true)
done
# Name lookups (user names, /etc/hosts) are inside libc since glibc 2.34; older glibc loads them
# from these at run time, where ldd does not see them.
libc=$(ldd "$rootfs/opt/java/bin/java" | awk '/libc\.so/ {print $3}')
for name in libnss_files.so.2 libnss_dns.so.2 libresolv.so.2; do
    [[ -e $(dirname "$libc")/$name ]] && copy_library "$(dirname "$libc")/$name"
done

# What a process expects to find: a root user, a writable /tmp. Docker and the kubelet provide
# /etc/hosts, /etc/resolv.conf, /proc, /dev and /sys at run time.
mkdir -p "$rootfs/etc" "$rootfs/tmp" "$rootfs/proc" "$rootfs/dev" "$rootfs/sys"
chmod 1777 "$rootfs/tmp"
echo 'root:x:0:0:root:/root:/sbin/nologin' > "$rootfs/etc/passwd"
echo 'root:x:0:' > "$rootfs/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "$rootfs/etc/nsswitch.conf"
mkdir -p "$rootfs/root"

# A container has /proc (the loader resolves the launcher's $ORIGIN through /proc/self/exe):
# give the chroot one for the check, and take it away before the tree is packed.
check_with_chroot() {
    mount -t proc proc "$rootfs/proc" 2>/dev/null || {
        echo "build-rootfs.sh: cannot mount /proc for the chroot check; skipped" >&2
        return 0
    }
    local status=0
    chroot "$rootfs" /opt/java/bin/java @/opt/driver-alias-agent/jvm.options -version || status=1
    if ((status == 0)); then
        chroot "$rootfs" /opt/java/bin/java @/opt/driver-alias-agent/jvm.options \
            -jar /opt/driver-alias-agent/driver-alias-agent.jar --help >/dev/null || status=1
    fi
    umount "$rootfs/proc"
    ((status == 0)) || die "the agent does not start in $rootfs"
}
if [[ $(id -u) == 0 ]] && command -v chroot >/dev/null; then
    echo "build-rootfs.sh: checking the tree with chroot"
    check_with_chroot
fi
echo "build-rootfs.sh: $(du -sh "$rootfs" | cut -f1) in $rootfs"

if [[ $import == true ]]; then
    # The jar's own version (its manifest, written from the pom): the OCI label and the default tag.
    version=$(cd "$rootfs/tmp" && "$JAVA_HOME/bin/jar" -xf "$jar" META-INF/MANIFEST.MF 2>/dev/null \
        && sed -n 's/^Implementation-Version: *//p' META-INF/MANIFEST.MF | tr -d '\r'; rm -rf "$rootfs/tmp/META-INF")
    [[ -n $version ]] || die "no Implementation-Version in $jar's manifest"
    tag=${tag:-driver-alias-agent:$version}
    command -v docker >/dev/null || die "no docker command: use --no-import, or install Docker"
    tar -C "$rootfs" --numeric-owner --owner=0 --group=0 -c . \
        | docker import \
            --change "ENTRYPOINT $ENTRYPOINT" \
            --change "CMD $CMD" \
            --change "LABEL org.opencontainers.image.title=driver-alias-agent" \
            --change "LABEL org.opencontainers.image.version=$version" \
            --change "LABEL org.opencontainers.image.licenses=Apache-2.0" \
            - "$tag" >/dev/null
    echo "build-rootfs.sh: imported $tag"
fi
