#!/usr/bin/env bash
# Links the minimal Java runtime the agent runs on: jlink-runtime.sh OUTPUT_DIR
# Used by agent/Dockerfile and agent/image/build-rootfs.sh, so both images carry the same runtime.
# Needs a JDK 25 (JAVA_HOME, or jlink on PATH).
set -euo pipefail

output=${1:?usage: jlink-runtime.sh OUTPUT_DIR}
jlink=${JAVA_HOME:+$JAVA_HOME/bin/}jlink

# The modules, from `jdeps --multi-release 25 --ignore-missing-deps --print-module-deps` on the
# shaded jar, minus what only optional code paths use, plus what is reached by name at run time.
modules=(
    java.base
    java.logging       # java.util.logging, used by several libraries; System.Logger's backend
    java.management    # ManagementFactory: JVM and process metrics (Micrometer)
    jdk.management     # com.sun.management: process CPU and memory metrics
    java.naming        # logback and Bouncy Castle (docker-java's TLS certificates) reference JNDI
    java.net.http      # fabric8's HTTP client (kubernetes-httpclient-jdk)
    java.sql           # Jackson's and fabric8's java.sql.* date types
    java.xml           # logback.xml
    jdk.unsupported    # sun.misc.Signal (SIGTERM) and sun.misc.Unsafe (JNA, docker-java's Unix socket)
)
# Left out although jdeps lists them, because only code the agent never runs needs them:
#   java.desktop        java.beans / java.awt: Jackson's optional @ConstructorProperties support,
#                       Micrometer's Log4j2 binder, commons-compress pack200, JNA's AWT helpers;
#                       it would also pull libawt and X11 libraries into the image
#   java.security.jgss  Kerberos/SPNEGO authentication in docker-java's HTTP client
#   java.compiler       Error Prone's compile-time annotations
# jdk.crypto.ec is not needed either: since JDK 22 the EC algorithms (TLS to the API server)
# are in java.base.

rm -rf "$output"
"$jlink" \
    --add-modules "$(IFS=,; echo "${modules[*]}")" \
    --strip-debug \
    --no-man-pages \
    --no-header-files \
    --compress=zip-6 \
    --output "$output"
