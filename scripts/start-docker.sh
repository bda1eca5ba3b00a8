#!/usr/bin/env bash
# Make sure a Docker engine answers `docker info`; start one if needed.
#
# Idempotent and harmless when Docker already runs. On a fresh Debian bookworm
# machine (CI, run as root) it installs docker.io, starts dockerd in the
# background and waits for it. Exits non-zero with a message otherwise.
# --no-install: start an installed engine, never install one (scripts/start.sh).
set -euo pipefail

install=1
[ "${1:-}" = "--no-install" ] && install=0

WAIT_SECONDS="${CO_DOCKER_WAIT:-60}"
LOG_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/co-kernel"
LOG_FILE="$LOG_DIR/dockerd.log"

say() { printf 'start-docker: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root to run: $* (re-run as root or install sudo)"
    fi
}

engine_up() { docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && engine_up; then
    say "Docker engine already running."
    exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
    [ "$install" -eq 1 ] || die "no Docker engine is installed; install Docker Engine: https://docs.docker.com/engine/install/"
    command -v apt-get >/dev/null 2>&1 \
        || die "dockerd is not installed and apt-get is unavailable; install Docker Engine: https://docs.docker.com/engine/install/"
    say "Installing docker.io with apt-get..."
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -q
    as_root apt-get install -y -q --no-install-recommends docker.io ca-certificates iptables
fi
command -v docker >/dev/null 2>&1 || die "the docker client is missing (install docker.io or docker-ce-cli)"

# A systemd host may only need the unit started; fall back to a bare dockerd.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    say "Starting docker with systemctl..."
    as_root systemctl start docker || true
fi

if ! engine_up; then
    info=$(docker info 2>&1 || true)
    if [[ "$info" == *"permission denied"* ]]; then
        die "Docker runs but $(id -un) may not use it: run as root, or join the docker group (sudo usermod -aG docker $(id -un), then log in again)"
    fi
    if pgrep -x dockerd >/dev/null 2>&1; then
        say "dockerd is already running but not answering yet; waiting for it."
    else
        mkdir -p "$LOG_DIR"
        say "Starting dockerd in the background (log: $LOG_FILE)..."
        # setsid + nohup: the daemon outlives this script and its terminal.
        as_root setsid nohup dockerd >>"$LOG_FILE" 2>&1 </dev/null &
    fi
fi

for ((i = 0; i < WAIT_SECONDS; i++)); do
    if engine_up; then
        say "Docker engine is up ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))."
        exit 0
    fi
    sleep 1
done

say "error: Docker engine did not answer within ${WAIT_SECONDS}s."
[ -f "$LOG_FILE" ] && { say "last lines of $LOG_FILE:"; tail -n 20 "$LOG_FILE" >&2; }
exit 1
