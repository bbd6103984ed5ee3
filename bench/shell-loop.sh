#!/usr/bin/env bash
# The obvious alternative an operator writes by hand, kept as the benchmark's baseline:
# follow `docker events`, and for each started container inspect it, find the driver files
# mounted into it, read each one's SONAME on the host, and `nsenter ... ln -sf` the alias.
# (It runs the container's own `ln` as root in the container's mount namespace, and it
# resubscribes after Docker restarts without looking for what it missed: both are the point
# of the comparison.)
#
#   shell-loop.sh DOCKER_HOST     prints "repaired <id> <milliseconds>" per container
set -u
export DOCKER_HOST="$1"
while true; do
    docker events --filter type=container --filter event=start --format '{{.ID}} {{.TimeNano}}' |
    while read -r id started; do
        pid=$(docker inspect -f '{{.State.Pid}}' "$id" 2>/dev/null) || continue
        [ "$pid" -gt 0 ] 2>/dev/null || continue
        docker inspect -f '{{range .Mounts}}{{.Source}} {{.Destination}}{{"\n"}}{{end}}' "$id" |
        while read -r source destination; do
            case "$destination" in
                */lib*.so.[0-9]*.[0-9]*) ;;
                *) continue ;;
            esac
            soname=$(readelf -d "$source" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
            [ -n "$soname" ] || continue
            nsenter -t "$pid" -m -- ln -sf "$(basename "$destination")" "$(dirname "$destination")/$soname"
        done
        now=$(date +%s%N)
        echo "repaired $id $(( (now - started) / 1000000 ))"
    done
    sleep 1
done
