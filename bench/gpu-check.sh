#!/usr/bin/env bash
# The check against a real NVIDIA driver, for a machine with a GPU whose driver lives under
# /usr/local/nvidia (read-only), as on this project's lent GPU machines. It copies the driver's
# versioned files (and only those: no aliases) into a fresh root with the real nvidia-smi,
# shows nvidia-smi failing there in a chroot, runs `repair --root`, shows it working, and
# writes the SONAMEs it saw as a test fixture.
#
#   bench/gpu-check.sh OUTDIR     (as root; needs java 25 on PATH or JAVA_HOME, and the agent
#                                  jar at agent/target/driver-alias-agent.jar)
set -euo pipefail
out=${1:?usage: gpu-check.sh OUTDIR}
mkdir -p "$out"
driver=/usr/local/nvidia
java=${JAVA_HOME:+$JAVA_HOME/bin/}java
jar=agent/target/driver-alias-agent.jar

lib=$(dirname "$(ls "$driver"/lib64/libnvidia-ml.so.* "$driver"/lib/libnvidia-ml.so.* 2>/dev/null | head -1)")
version=$(ls "$lib" | sed -n 's/^libnvidia-ml\.so\.\([0-9][0-9.]*[0-9]\)$/\1/p' | head -1)
[ -n "$version" ] || { echo "no versioned libnvidia-ml under $driver" >&2; exit 1; }
echo "driver $version in $lib" | tee "$out/driver.txt"

root=$(mktemp -d /tmp/gpu-check-root.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/lib/x86_64-linux-gnu" "$root/usr/bin" "$root/lib64" "$root/dev" "$root/proc"
for f in "$lib"/lib*.so."$version"; do cp "$f" "$root/usr/lib/x86_64-linux-gnu/"; done
smi=$(command -v nvidia-smi || echo "$driver/bin/nvidia-smi")
cp "$smi" "$root/usr/bin/nvidia-smi"
# nvidia-smi's own C library and loader, from this machine, at Debian's paths.
for dep in $(ldd "$smi" | awk '/=> \//{print $3} /ld-linux/{print $1}'); do
    cp -L "$dep" "$root/usr/lib/x86_64-linux-gnu/$(basename "$dep")"
done
ln -s ../usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/lib64/ld-linux-x86-64.so.2"
mount --bind /dev "$root/dev"; mount -t proc proc "$root/proc"
trap 'umount "$root/proc" "$root/dev" 2>/dev/null; rm -rf "$root"' EXIT

echo "== before: nvidia-smi in a chroot of the versioned files only" | tee "$out/log.txt"
chroot "$root" /usr/bin/nvidia-smi -L >>"$out/log.txt" 2>&1 && echo "unexpected: it worked" | tee -a "$out/log.txt" || true
echo "== repair --root" | tee -a "$out/log.txt"
"$java" -jar "$jar" repair --root "$root" --lib-dir /usr/lib/x86_64-linux-gnu | tee -a "$out/log.txt"
"$java" -jar "$jar" repair --root "$root" --json > "$out/repair.json"
echo "== after" | tee -a "$out/log.txt"
chroot "$root" /usr/bin/nvidia-smi -L 2>&1 | tee -a "$out/log.txt"

# The fixture: file name, SONAME (as readelf reports it), one line each.
for f in "$root"/usr/lib/x86_64-linux-gnu/lib*.so."$version"; do
    printf '%s\t%s\n' "$(basename "$f")" "$(readelf -d "$f" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')"
done | sort > "$out/driver-$version-sonames.tsv"
cat "$out/driver-$version-sonames.tsv"
