#!/usr/bin/env bash
# Starts the N ranks of a data-parallel job on this machine and waits for them:
#
#   scripts/run-distributed.sh N [--tcp PORT] -- program [args...]
#
# Each rank runs `program args...` with OF_RANK (0 .. N-1), OF_WORLD_SIZE (N) and OF_RENDEZVOUS in its
# environment: a fresh directory (removed afterwards), or tcp://127.0.0.1:PORT with --tcp. Programs built
# on oneflow_c read them to create their process group (of_process_group_create; the Fashion-MNIST example
# does). SIGINT and SIGTERM are forwarded to every rank. When a rank fails, the others are stopped (SIGTERM,
# then SIGKILL after 5 s); the exit status is the first failing rank's, 0 when all succeed. Each rank's
# output is prefixed with "[rank r] ".
set -uo pipefail

usage() {
  echo "usage: $0 N [--tcp PORT] -- program [args...]" >&2
  exit 2
}
[ $# -ge 3 ] || usage
world=$1
shift
[[ "$world" =~ ^[1-9][0-9]*$ ]] || { echo "$0: N must be a positive integer, got '$world'" >&2; exit 2; }
port=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    --tcp) port=${2:-}; [[ "$port" =~ ^[0-9]+$ ]] || usage; shift 2 ;;
    *) usage ;;
  esac
done
[ "${1:-}" = "--" ] || usage
shift
[ $# -ge 1 ] || usage

dir=$(mktemp -d /tmp/of_rendezvous_XXXXXX)
rendezvous=${port:+tcp://127.0.0.1:$port}
rendezvous=${rendezvous:-$dir}
pids=()

stop_all() {  # $1: signal, to every rank's process group (each rank leads one: setsid below)
  for pid in "${pids[@]}"; do kill "-$1" -- "-$pid" 2>/dev/null; done
}
cleanup() { rm -rf "$dir"; }
trap 'stop_all INT' INT
trap 'stop_all TERM' TERM
trap cleanup EXIT

for ((r = 0; r < world; ++r)); do
  # Each rank in its own process group (setsid), so that stopping it stops what it started.
  OF_RANK=$r OF_WORLD_SIZE=$world OF_RENDEZVOUS=$rendezvous setsid "$@" > >(sed -u "s/^/[rank $r] /") \
    2> >(sed -u "s/^/[rank $r] /" >&2) &
  pids+=($!)
done

status=0
running=("${pids[@]}")
killer=""
while [ "${#running[@]}" -gt 0 ]; do
  done_pid=""
  wait -n -p done_pid "${running[@]}"
  rc=$?
  [ -n "$done_pid" ] || continue  # a forwarded signal interrupted the wait
  left=()
  for pid in "${running[@]}"; do [ "$pid" = "$done_pid" ] || left+=("$pid"); done
  running=("${left[@]}")
  if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then
    status=$rc
    for ((r = 0; r < world; ++r)); do
      [ "${pids[$r]}" = "$done_pid" ] && echo "run-distributed: rank $r exited with status $rc; stopping the others" >&2
    done
    stop_all TERM
    ( sleep 5; stop_all KILL ) > /dev/null 2>&1 &
    killer=$!
  fi
done
[ -z "$killer" ] || kill "$killer" 2>/dev/null
wait 2>/dev/null
exit "$status"
