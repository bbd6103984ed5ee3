#!/usr/bin/env bash
# Does the JDK's ahead-of-time cache (JDK 25: -XX:AOTCacheOutput / -XX:AOTCache) make the agent
# start faster, and what does it cost? Trains a cache with a run of the agent itself (its start,
# warm-up and first reconcile against a real Docker), then launches the agent RUNS times with the
# cache and RUNS times without, alternating, with the shipped JVM options (agent/image/jvm.options),
# and prints for each: launch to /readyz 200 (wall), CPU used by then, and RSS (anonymous and
# file-backed) once settled. The figures and the decision are in docs/footprint.md.
#
#   bench/aot-cache.sh DOCKER_HOST [RUNS]      e.g. bench/aot-cache.sh unix:///run/docker.sock 5
#
# JAVA_HOME picks the JDK (default /usr/lib/jvm/temurin-25-jdk-amd64); the jar is
# agent/target/driver-alias-agent.jar (mvn -B -pl agent package -DskipTests). The agent watches
# that Docker read-only here: no container is in scope (--include-image matches nothing).
set -euo pipefail

docker_host=${1:?usage: bench/aot-cache.sh DOCKER_HOST [RUNS]}
runs=${2:-5}
repo=$(cd "$(dirname "$0")/.." && pwd)
java=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java
jar=$repo/agent/target/driver-alias-agent.jar
[[ -f $jar ]] || { echo "no $jar: mvn -B -pl agent package -DskipTests" >&2; exit 1; }
work=$(mktemp -d /tmp/aot-bench.XXXXXX)
pid=
cleanup() {
    [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
# The same jar at the same path in training and use: the cache names its class path.
cp "$jar" "$work/agent.jar"

launch() { # launch PORT EXTRA_JVM_OPTION...: starts the agent in the background, sets pid
    local port=$1
    shift
    "$java" @"$repo/agent/image/jvm.options" -Xlog:aot=off "$@" -jar "$work/agent.jar" run \
        --docker-host "$docker_host" --runtime docker --kubernetes off --listen "127.0.0.1:$port" \
        --include-image 'aot-bench-none/*' >"$work/agent.log" 2>&1 &
    pid=$!
}

await_ready() { # await_ready PORT: waits at most 60 s for /readyz 200
    local port=$1
    for _ in $(seq 6000); do
        curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && return 0
        kill -0 "$pid" 2>/dev/null || { echo "the agent exited:" >&2; tail -5 "$work/agent.log" >&2; exit 1; }
        sleep 0.01
    done
    echo "not ready after 60 s" >&2
    exit 1
}

stop() {
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
}

echo "training: the agent's start, warm-up and reconciles for 20 s"
port=$((20000 + RANDOM % 10000))
launch "$port" -XX:AOTCacheOutput="$work/agent.aot"
await_ready "$port"
sleep 20
stop
[[ -f $work/agent.aot ]] || { echo "no cache written" >&2; exit 1; }
echo "cache: $(($(stat -c %s "$work/agent.aot") / 1048576)) MiB"

measure() { # measure LABEL EXTRA_JVM_OPTION...
    local label=$1
    shift
    local port=$((20000 + RANDOM % 10000))
    local t0 t1 cpu
    t0=$(date +%s%N)
    launch "$port" "$@"
    await_ready "$port"
    t1=$(date +%s%N)
    # utime + stime, in clock ticks
    cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%d", ($14 + $15) * 1000 / hz}' "/proc/$pid/stat")
    sleep 30
    local rss mapped
    rss=$(awk '/^RssAnon/ {a = $2} /^RssFile/ {f = $2} END {printf "%.1f MiB (anon %.1f, file %.1f)", (a + f) / 1024, a / 1024, f / 1024}' \
        "/proc/$pid/status")
    # Whether the JVM used the cache: it maps the file.
    grep -q 'agent\.aot' "/proc/$pid/maps" && mapped=yes || mapped=no
    printf '%-9s ready %5d ms  cpu by then %5d ms  rss after 30 s %s  cache mapped: %s\n' \
        "$label" $(((t1 - t0) / 1000000)) "$cpu" "$rss" "$mapped"
    stop
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
for ((i = 1; i <= runs; i++)); do
    measure "no cache"
    measure "AOT cache" -XX:AOTCache="$work/agent.aot"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
