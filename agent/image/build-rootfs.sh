#!/usr/bin/env bash
# Builds the agent's container image without Docker, a registry or a base image: the runtime is
# jlinked from the local JDK, the shared libraries it needs are copied from this machine, and the
# tree is packed by Jib (agent/image/pom.xml, FROM scratch) into an OCI image archive that
# `ctr -n k8s.io images import`, `docker load`, `podman load` and `skopeo copy` take. The result
# runs like agent/Dockerfile's, which runs this script (with --no-import) to make its own tree.
#
#   agent/image/build-rootfs.sh [--rootfs DIR] [--jar JAR] [--tag IMAGE] [--archive FILE]
#                               [--load docker|containerd|podman] [--no-import]
#
#   --rootfs DIR    where to build the tree (default agent/target/image-rootfs; emptied first)
#   --jar JAR       the shaded agent jar (default agent/target/driver-alias-agent.jar, from
#                   `mvn -B -pl agent package -DskipTests`)
#   --tag IMAGE     the image's name in the archive (default driver-alias-agent:VERSION, VERSION being
#                   the jar's own, e.g. driver-alias-agent:0.2.0: what k8s/ of the same checkout deploys)
#   --archive FILE  the archive to write (default agent/target/driver-alias-agent-VERSION.oci.tar)
#   --load RUNTIME  then load the archive into this machine's docker (DOCKER_HOST), containerd
#                   (namespace k8s.io, CONTAINERD_ADDRESS) or podman
#   --no-import     build and check the tree only: no archive (Maven is not needed then)
#
# JAVA_HOME picks the JDK (default /usr/lib/jvm/temurin-25-jdk-amd64). This machine's glibc goes
# into the image, so it must be 2.30 or newer (the agent calls statx, renameat2, getdents64 and
# openat through it). As root, the tree is checked with chroot before it is packed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
agent=$(dirname "$here")
rootfs=$agent/target/image-rootfs
jar=$agent/target/driver-alias-agent.jar
tag=
archive=
load=
import=true
while (($#)); do
    case $1 in
        --rootfs) rootfs=${2:?}; shift 2 ;;
        --jar) jar=${2:?}; shift 2 ;;
        --tag) tag=${2:?}; shift 2 ;;
        --archive) archive=${2:?}; shift 2 ;;
        --load) load=${2:?}; shift 2 ;;
        --no-import) import=false; shift ;;
        -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "build-rootfs.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
case $load in
    ""|docker|containerd|podman) ;;
    *) echo "build-rootfs.sh: --load takes docker, containerd or podman, not '$load'" >&2; exit 2 ;;
esac


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
    # The runtime's own libraries (found through its $ORIGIN) are in the tree already.
    [[ $path == "$rootfs"/* ]] && return
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

[[ $import == true ]] || exit 0

# The jar's own version (its manifest, written from the pom): the OCI label and the default tag.
version=$(cd "$rootfs/tmp" && "$JAVA_HOME/bin/jar" -xf "$jar" META-INF/MANIFEST.MF 2>/dev/null \
    && sed -n 's/^Implementation-Version: *//p' META-INF/MANIFEST.MF | tr -d '\r'; rm -rf "$rootfs/tmp/META-INF")
[[ -n $version ]] || die "no Implementation-Version in $jar's manifest"
tag=${tag:-driver-alias-agent:$version}
archive=${archive:-$agent/target/driver-alias-agent-$version.oci.tar}
mkdir -p "$(dirname "$archive")"
archive=$(cd "$(dirname "$archive")" && pwd)/$(basename "$archive")
case $(uname -m) in
    x86_64) architecture=amd64 ;;
    aarch64|arm64) architecture=arm64 ;;
    *) die "no OCI architecture name for $(uname -m)" ;;
esac
command -v mvn >/dev/null || die "no mvn: Jib, which packs the archive, runs in Maven"

echo "build-rootfs.sh: packing $tag into $archive (Jib)"
mkdir -p "$here/target/no-classes"
mvn -B -q -f "$here/pom.xml" jib:buildTar -Dimage.rootfs="$rootfs" -Dimage.name="$tag" \
    -Dimage.version="$version" -Dimage.archive="$archive" -Dimage.architecture="$architecture" \
    -Djib.console=plain -Djib.disableUpdateChecks=true >&2

# Docker before 25 loads only archives with Docker's own manifest.json, which Jib writes in its
# Docker format alone, never beside an OCI layout. Add it, naming the OCI layout's own config
# and layer blobs: one archive that every runtime takes (what `docker save` writes since 25).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xf "$archive" -C "$work" index.json
manifest=$(grep -o '"digest":"sha256:[0-9a-f]*"' "$work/index.json" | head -1 | sed 's/.*sha256:\([0-9a-f]*\)"/\1/')
[[ -n $manifest ]] || die "no manifest in $archive's index.json"
tar -xf "$archive" -C "$work" "blobs/sha256/$manifest"
mapfile -t digests < <(grep -o '"digest":"sha256:[0-9a-f]*"' "$work/blobs/sha256/$manifest" | sed 's/.*sha256:\([0-9a-f]*\)"/\1/')
((${#digests[@]} >= 2)) || die "the manifest in $archive names no config and layers"
layers=$(printf ',"blobs/sha256/%s"' "${digests[@]:1}")
printf '[{"Config":"blobs/sha256/%s","RepoTags":["%s"],"Layers":[%s]}]' "${digests[0]}" "$tag" "${layers#,}" \
    > "$work/manifest.json"

# The image's full name in the OCI index too: Jib writes the name as given (driver-alias-agent:0.2.0),
# which `ctr images import` keeps verbatim, while the kubelet asks containerd for the normalized one
# (docker.io/library/driver-alias-agent:0.2.0). containerd's import takes io.containerd.image.name
# first.
case $tag in
    */*) first=${tag%%/*}
         if [[ $first == *.* || $first == *:* || $first == localhost ]]; then full=$tag; else full=docker.io/$tag; fi ;;
    *) full=docker.io/library/$tag ;;
esac
sed -i "s|\"annotations\":{|\"annotations\":{\"io.containerd.image.name\":\"$full\",|" "$work/index.json"
grep -q "\"io.containerd.image.name\":\"$full\"" "$work/index.json" || die "could not name $full in $archive's index.json"
# Written anew rather than edited in place (Jib's tar ends short of GNU tar's record size, which
# `tar --delete` refuses): the layout first, then the blobs, in a fixed order.
mkdir "$work/all"
tar -xf "$archive" -C "$work/all"
cp "$work/index.json" "$work/manifest.json" "$work/all/"
tar -C "$work/all" --owner=0 --group=0 --numeric-owner --mtime=@0 --sort=name \
    -cf "$archive.new" oci-layout index.json manifest.json blobs
mv "$archive.new" "$archive"
echo "build-rootfs.sh: $(du -h "$archive" | cut -f1) in $archive, image $tag ($full)"

case $load in
    docker)
        docker load -i "$archive" ;;
    containerd)
        ctr -n k8s.io images import "$archive" ;;
    podman)
        podman load -i "$archive" ;;
    "")
        echo "build-rootfs.sh: load it on each node as root (README, Install): ctr -n k8s.io images import," \
            "docker load -i or podman load -i $archive"
        ;;
esac
